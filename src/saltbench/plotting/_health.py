"""The generation-health figure: what each model's responses hold, per prompt style (docs/reasoning.md §3)."""

from __future__ import annotations

import polars as pl
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from saltbench.core.vocabulary import ANSWER_STATUSES

from ._metrics_figures import STYLE_ORDER, _ordered
from ._style import PALETTE, TEXT_WIDTH, empty_figure, new_figure, styled

STATUS_COLOURS: dict[str, tuple[float, float, float] | str] = {
    "answered": PALETTE[2],
    "truncated": PALETTE[1],
    "no_fence": "0.65",
    "error": PALETTE[3],
}
"""One colour per answer status (colour-blind palette; no fence in grey)."""

STATUS_LABELS = {
    "answered": "answered",
    "truncated": "cut off by the budget",
    "no_fence": "no fenced answer",
    "error": "error row",
}


@styled
def plot_generation_health(table: pl.DataFrame, *, min_answered: float = 0.9) -> Figure:
    """Stacked bars, one per model, of the share of its responses in each answer status (pooled over tasks,
    weighted by responses), one panel per prompt style; models below ``min_answered`` answered are starred,
    with the threshold drawn as a dashed line.

    Args:
        table: :func:`saltbench.analysis.generation_health` output.
        min_answered: the config's ``analysis.min_answered_share``.
    """
    title = "Generation health"
    if table.is_empty():
        return empty_figure(title, "no responses")
    weight = pl.col("responses")
    pooled = table.group_by("model", "style", maintain_order=True).agg(
        weight.sum(), *[((pl.col(s) * weight).sum() / weight.sum()).alias(s) for s in ANSWER_STATUSES]
    )
    styles = _ordered(pooled["style"].to_list(), STYLE_ORDER)
    models = pooled["model"].unique(maintain_order=True).to_list()
    fig = new_figure(TEXT_WIDTH, 0.9 + 0.28 * len(models))
    axes = fig.subplots(1, len(styles), sharey=True, squeeze=False)[0]
    for ax, style in zip(axes, styles):
        sub = pooled.filter(pl.col("style") == style)
        shares = {row["model"]: row for row in sub.iter_rows(named=True)}
        for y, model in enumerate(models):
            row = shares.get(model)
            if row is None:
                continue
            left = 0.0
            for status in ANSWER_STATUSES:
                ax.barh(y, row[status], left=left, color=STATUS_COLOURS[status], height=0.7, linewidth=0)
                left += row[status]
            if row["answered"] < min_answered:
                ax.text(1.01, y, "*", va="center", ha="left", fontsize=8, clip_on=False)
        ax.axvline(min_answered, color="black", linestyle="--", linewidth=0.6)
        ax.set_xlim(0, 1)
        ax.set_title(f"{style} prompts")
        ax.set_xlabel("share of responses")
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(range(len(models)), models)
    axes[0].invert_yaxis()
    handles = [Patch(color=STATUS_COLOURS[s], label=STATUS_LABELS[s]) for s in ANSWER_STATUSES]
    handles.append(
        Patch(facecolor="none", edgecolor="none", label=f"* fewer than {min_answered:.0%} answered")
    )
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles), title=None)
    return fig


__all__ = ["STATUS_COLOURS", "plot_generation_health"]
