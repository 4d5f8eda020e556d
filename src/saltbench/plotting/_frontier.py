"""The cost/quality frontier (docs/metrics.md §11): each estimator's ranking quality against its extra tokens
per response, per family and granularity."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from saltbench.core.vocabulary import ESTIMATOR_FAMILIES, GRANULARITIES

from ._style import CONFIDENCE_LABELS, PALETTE, TEXT_WIDTH, empty_figure, label, new_figure, styled

FAMILY_MARKERS = {"single_pass": "o", "samples": "s", "second_pass": "^"}
"""The marker of each estimator family (its colour: the palette in the vocabulary's order)."""
FAMILY_COLOURS: dict[str, Any] = {family: PALETTE[i] for i, family in enumerate(ESTIMATOR_FAMILIES)}
_ROWS = (("auroc", "pooled AUROC"), ("prr", "PRR"))


def zero_position(extra: np.ndarray) -> float:
    """Where a cost of 0 is drawn on the log axis: a decade below the smallest positive cost (0.1 without
    one).

    >>> zero_position(np.array([0.0, 40.0, 300.0])), zero_position(np.array([0.0]))
    (4.0, 0.1)
    """
    positive = extra[np.isfinite(extra) & (extra > 0)]
    return float(positive.min()) / 10 if positive.size else 0.1


def _panel(ax: Axes, part: pl.DataFrame, column: str, x_zero: float) -> None:
    """One granularity × metric: every estimator a point with its interval, coloured and marked by family;
    the best of each family named."""
    for key, rows in part.group_by("family", maintain_order=True):
        family = str(key[0])
        x = rows["extra_tokens"].to_numpy()
        x = np.where(x > 0, x, x_zero)
        y = rows[column].to_numpy()
        low, high = rows[f"{column}_ci_low"].to_numpy(), rows[f"{column}_ci_high"].to_numpy()
        colour = FAMILY_COLOURS.get(family, "0.4")
        ax.errorbar(
            x,
            y,
            yerr=np.vstack([np.abs(y - low), np.abs(high - y)]),
            fmt=FAMILY_MARKERS.get(family, "D"),
            color=colour,
            markersize=3.5,
            elinewidth=0.6,
            alpha=0.85,
            linestyle="none",
        )
        if np.isfinite(y).any():
            best = int(np.nanargmax(y))
            name = rows["confidence"][best]
            ax.annotate(
                label(name, CONFIDENCE_LABELS),
                (x[best], y[best]),
                xytext=(4, 4 if ESTIMATOR_FAMILIES.index(family) % 2 == 0 else -9)
                if family in ESTIMATOR_FAMILIES
                else (4, 4),
                textcoords="offset points",
                fontsize=5.5,
                color=colour,
            )


def _axis(ax: Axes, x_zero: float, right: float) -> None:
    """Log x from the zero position, which is marked ``0`` and set off by a dotted line."""
    ax.set_xscale("log")
    ax.set_xlim(x_zero / 2.5, right * 8)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.axvline(x_zero * 2.5, color="0.6", linestyle=":", linewidth=0.7)
    ticks = [t for t in ax.get_xticks() if x_zero * 2.5 < t <= right * 2.5]
    ax.set_xticks([x_zero, *ticks], ["0", *(f"{t:g}" for t in ticks)])


@styled
def plot_frontier(table: pl.DataFrame) -> Figure:
    """Ranking quality (pooled AUROC, PRR; rows) against extra tokens per response (log x; columns: the
    granularities), one point per estimator with its interval, colour and marker by family.

    Args:
        table: :func:`saltbench.analysis.frontier` output.

    A cost of 0 (a single pass) is drawn at the position marked ``0``, left of the dotted line; estimators
    whose cost the run did not measure (NaN) are left out and counted under the figure.
    """
    title = "Cost/quality frontier of the confidence estimators"
    drawn = table.filter(pl.col("extra_tokens").is_finite() & pl.col("auroc").is_finite())
    if drawn.is_empty():
        return empty_figure(title, "no estimator with a ranking quality and a cost")
    granularities = [g for g in GRANULARITIES if g in set(drawn["granularity"])]
    extra = drawn["extra_tokens"].to_numpy()
    x_zero = zero_position(extra)
    right = max(float(extra.max()), x_zero * 10)
    fig = new_figure(TEXT_WIDTH, 3.6)
    axes = fig.subplots(len(_ROWS), len(granularities), squeeze=False, sharex=True)
    for j, granularity in enumerate(granularities):
        part = drawn.filter(pl.col("granularity") == granularity)
        for i, (column, name) in enumerate(_ROWS):
            ax = axes[i][j]
            _panel(ax, part, column, x_zero)
            _axis(ax, x_zero, right)
            if i == 0:
                ax.set_title(f"{granularity} (≤ {int(part['n_cells'].to_numpy().max())} cells)")
            if j == 0:
                ax.set_ylabel(name)
            if i == len(_ROWS) - 1:
                ax.set_xlabel("extra tokens per response")
    families = [f for f in ESTIMATOR_FAMILIES if f in set(drawn["family"])]
    handles = [
        Line2D(
            [],
            [],
            marker=FAMILY_MARKERS[f],
            color=FAMILY_COLOURS[f],
            linestyle="none",
            label=f.replace("_", " "),
        )
        for f in families
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles))
    left_out = table.height - drawn.height
    if left_out:
        fig.text(
            0.01,
            0.0,
            f"{left_out} estimator rows without a measured cost or AUROC are not drawn.",
            fontsize=5.5,
        )
    return fig
