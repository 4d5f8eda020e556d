"""Figures from metrics-derived tables: accuracy by task, dominance, AUROC by granularity, reasoning."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from saltbench.analysis import ASPECT_METRICS
from saltbench.confidence import CONFIDENCE_FUNCTIONS
from saltbench.core.vocabulary import GRANULARITIES

from ._style import (
    COLUMN_WIDTH,
    CONFIDENCE_LABELS,
    MISSING_COLOR,
    TASK_LABELS,
    TEXT_WIDTH,
    color_map,
    empty_figure,
    hatch_cell,
    label,
    mark_missing,
    new_figure,
    styled,
)

STYLE_ORDER: tuple[str, ...] = ("direct", "cot")


def _ordered(values: Sequence[str], preferred: Sequence[str]) -> list[str]:
    present = list(dict.fromkeys(v for v in values if v is not None))
    return [p for p in preferred if p in present] + sorted(v for v in present if v not in preferred)


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(float(x))


@styled
def plot_accuracy_by_task(table: pl.DataFrame, *, granularities: Sequence[str] = GRANULARITIES) -> Figure:
    """Precision per task: one panel per granularity, bars per prompt style, one dot per model.

    Args:
        table: :func:`saltbench.analysis.accuracy_by_task` output (model, style, task, granularity, value,
            ci_low, ci_high).
        granularities: panels, in order.

    Bars are the mean over models of the per-task precision; dots are the individual models; with a single
    model the bar carries that model's bootstrap interval. Task × style cells without a finite value
    show ``n/a``.
    """
    title = "Precision by task"
    if table.is_empty() or "value" not in table.columns:
        return empty_figure(title, "no precision values")
    styles = _ordered(table["style"].to_list(), STYLE_ORDER)
    tasks = _ordered(table["task"].to_list(), list(TASK_LABELS))
    models = table["model"].unique(maintain_order=True).to_list()
    colours = color_map(styles)
    fig = new_figure(TEXT_WIDTH, 2.3)
    axes = fig.subplots(1, len(granularities), sharey=True, squeeze=False)[0]
    width = 0.8 / max(len(styles), 1)
    rng = np.random.default_rng(0)
    for ax, gran in zip(axes, granularities):
        sub = table.filter(pl.col("granularity") == gran)
        for si, style in enumerate(styles):
            for ti, task in enumerate(tasks):
                cell = sub.filter((pl.col("style") == style) & (pl.col("task") == task))
                vals = cell["value"].to_numpy().astype(float) if cell.height else np.empty(0)
                fin = vals[np.isfinite(vals)]
                x = ti - 0.4 + width * (si + 0.5)
                if fin.size == 0:
                    mark_missing(ax, x, 0.08, rotation=90)
                    continue
                alpha = 0.55 if len(models) > 1 else 0.9
                ax.bar(
                    x,
                    fin.mean(),
                    width=width * 0.92,
                    color=colours[style],
                    alpha=alpha,
                    edgecolor=colours[style],
                    linewidth=0.6,
                )
                if len(models) > 1:
                    jitter = rng.uniform(-0.25, 0.25, fin.size) * width
                    ax.scatter(
                        x + jitter, fin, s=5, color=colours[style], edgecolor="black", linewidth=0.3, zorder=3
                    )
                else:
                    lo, hi = cell["ci_low"][0], cell["ci_high"][0]
                    if _finite(lo) and _finite(hi):
                        ax.errorbar(
                            x,
                            fin.mean(),
                            yerr=[[fin.mean() - lo], [hi - fin.mean()]],
                            fmt="none",
                            ecolor="black",
                            elinewidth=0.6,
                            capsize=1.5,
                        )
        ax.set_xticks(range(len(tasks)), [label(t, TASK_LABELS) for t in tasks], rotation=30, ha="right")
        ax.set_xlim(-0.6, len(tasks) - 0.4)
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{gran} units")
        ax.grid(axis="x", visible=False)
    axes[0].set_ylabel("precision")
    handles = [
        Line2D([], [], color=colours[s], marker="s", linestyle="", markersize=5, label=s) for s in styles
    ]
    if len(models) > 1:
        handles.append(
            Line2D(
                [],
                [],
                color="0.4",
                marker="o",
                linestyle="",
                markersize=3,
                label=f"one model (n={len(models)})",
            )
        )
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles), title=None)
    return fig


@styled
def plot_dominance(table: pl.DataFrame, *, flavour: str = "topk") -> Figure:
    """Heatmap of how often each confidence function wins each aspect at each granularity.

    Args:
        table: :func:`saltbench.analysis.dominance` output.
        flavour: which flavour's dominance to show.

    Rows: confidence functions; columns: aspect × granularity; colour and text: share of (model, style,
    task) cells the function wins. Hatched cells: the function was never defined there, or no cell
    exists for that aspect and granularity.
    """
    title = "Which confidence function wins?"
    if table.is_empty():
        return empty_figure(title, "no dominance results")
    sub = table.filter(pl.col("flavour") == flavour)
    if sub.is_empty():
        return empty_figure(title, f"no results for flavour {flavour!r}")
    functions = _ordered(sub["confidence"].to_list(), list(CONFIDENCE_FUNCTIONS))
    columns = [(a, g) for a in ASPECT_METRICS for g in GRANULARITIES]
    grid = np.full((len(functions), len(columns)), np.nan)
    n_cells = {}
    for rec in sub.iter_rows(named=True):
        if rec["confidence"] in functions and (rec["aspect"], rec["granularity"]) in columns:
            j = columns.index((rec["aspect"], rec["granularity"]))
            grid[functions.index(rec["confidence"]), j] = rec["win_share"]
            n_cells[(rec["aspect"], rec["granularity"])] = rec["n_cells"]
    fig = new_figure(TEXT_WIDTH * 0.8, 0.45 + 0.24 * len(functions) + 0.5)
    ax = fig.add_subplot()
    masked = np.ma.masked_invalid(grid)
    image = ax.imshow(masked, cmap="Blues", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = grid[i, j]
            if np.isnan(v):
                hatch_cell(ax, j - 0.5, i - 0.5)
            else:
                ax.text(
                    j,
                    i,
                    f"{100 * v:.0f}",
                    ha="center",
                    va="center",
                    fontsize=6.5,
                    color="white" if v > 0.6 else "black",
                )
    ax.set_yticks(range(len(functions)), [label(f, CONFIDENCE_LABELS) for f in functions])
    ax.set_xticks(range(len(columns)), [f"{g}\n(n={n_cells.get((a, g), 0)})" for a, g in columns], fontsize=6)
    for k in range(1, len(ASPECT_METRICS)):
        ax.axvline(k * len(GRANULARITIES) - 0.5, color="white", linewidth=3)
    for k, aspect in enumerate(ASPECT_METRICS):
        metric = ASPECT_METRICS[aspect]
        centre = (k + 0.5) * len(GRANULARITIES) - 0.5
        ax.text(
            centre,
            -0.75,
            f"{aspect}: {label(metric)}",
            ha="center",
            va="bottom",
            fontsize=7.5,
            fontweight="bold",
        )
    ax.set_ylim(len(functions) - 0.5, -0.5)
    ax.tick_params(length=0)
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    cbar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    cbar.set_label("share of cells won (%)")
    cbar.set_ticks([0, 0.5, 1], labels=["0", "50", "100"])
    return fig


UNRELIABLE_COLOR = "0.6"
"""Colour of an estimate resting on too few units (hollow marker): drawn, but not as a finding."""


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) and math.isfinite(float(value)) else None


@styled
def plot_granularity_auroc(table: pl.DataFrame, *, min_units: int = 20) -> Figure:
    """AUROC by task at atom, line and generation granularity; pooled and per-response panels.

    Args:
        table: :func:`saltbench.analysis.granularity_table` output.
        min_units: an estimate resting on fewer correct or fewer incorrect units than this
            (``analysis.min_units``) is drawn as a hollow grey marker: unreliable, not a finding.

    Points: mean over models; whiskers: inter-quartile range over models; dashed line: chance (0.5).
    Rows: prompt styles. Each point is labelled ``correct|incorrect``, the units its AUROCs rank (summed
    over models). Undefined values (e.g. per-response AUROC of whole generations) show ``n/a``.
    """
    title = "AUROC by granularity"
    if table.is_empty():
        return empty_figure(title, "no AUROC values")
    styles = _ordered(table["style"].to_list(), STYLE_ORDER)
    tasks = _ordered(table["task"].to_list(), list(TASK_LABELS))
    metrics = ["auroc_pooled", "auroc_per_response"]
    grans = list(GRANULARITIES)
    colours = color_map(grans)
    markers = dict(zip(grans, ("o", "s", "D")))
    counted = {"n_correct", "n_incorrect"} <= set(table.columns)
    fig = new_figure(TEXT_WIDTH, 0.75 + 1.9 * len(styles))
    axes = fig.subplots(len(styles), len(metrics), sharex=True, sharey=True, squeeze=False)
    finite_vals = table["mean"].to_numpy().astype(float)
    finite_vals = finite_vals[np.isfinite(finite_vals)]
    low = min(0.4, float(finite_vals.min()) - 0.05) if finite_vals.size else 0.4
    low = min(low, -0.12) if counted else low  # room for the count labels under the lowest points
    step = 0.8 / len(grans)
    for r, style in enumerate(styles):
        for c, metric in enumerate(metrics):
            ax = axes[r][c]
            ax.axhline(0.5, color="0.5", linestyle="--", linewidth=0.7, zorder=1)
            sub = table.filter((pl.col("style") == style) & (pl.col("metric") == metric))
            for gi, gran in enumerate(grans):
                for ti, task in enumerate(tasks):
                    x = ti - 0.4 + step * (gi + 0.5)
                    cell = sub.filter((pl.col("granularity") == gran) & (pl.col("task") == task))
                    m = cell["mean"][0] if cell.height else None
                    if not _finite(m):
                        mark_missing(ax, x, low + 0.06, rotation=90, size=5.5)
                        continue
                    n_correct = _count(cell["n_correct"][0]) if counted else None
                    n_incorrect = _count(cell["n_incorrect"][0]) if counted else None
                    weak = (
                        n_correct is not None
                        and n_incorrect is not None
                        and min(n_correct, n_incorrect) < min_units
                    )
                    colour = UNRELIABLE_COLOR if weak else colours[gran]
                    q25, q75 = cell["q25"][0], cell["q75"][0]
                    if _finite(q25) and _finite(q75) and q75 > q25:
                        ax.vlines(x, q25, q75, color=colour, linewidth=1.0)
                    ax.plot(
                        x,
                        m,
                        marker=markers[gran],
                        color=colour,
                        markersize=3.5,
                        linestyle="",
                        markerfacecolor="white" if weak else colour,
                    )
                    if n_correct is not None and n_incorrect is not None:
                        below = m is not None and m > 0.3  # low points: labelled above (n/a marks below)
                        ax.annotate(
                            f"{n_correct}|{n_incorrect}",
                            (x, m),
                            xytext=(0, -4 if below else 4),
                            textcoords="offset points",
                            rotation=90,
                            ha="center",
                            va="top" if below else "bottom",
                            fontsize=4,
                            color="0.45" if weak else "0.2",
                        )
            ax.set_ylim(low, 1.0)
            ax.set_xlim(-0.6, len(tasks) - 0.4)
            ax.set_xticks(range(len(tasks)), [label(t, TASK_LABELS) for t in tasks], rotation=30, ha="right")
            ax.grid(axis="x", visible=False)
            if r == 0:
                ax.set_title(label(metric))
            if c == 0:
                ax.set_ylabel(f"AUROC ({style})" if len(styles) > 1 else "AUROC")
    handles = [
        Line2D([], [], color=colours[g], marker=markers[g], linestyle="", markersize=4, label=g)
        for g in grans
    ]
    handles.append(Line2D([], [], color="0.5", linestyle="--", linewidth=0.7, label="chance"))
    if counted:
        handles.append(
            Line2D(
                [],
                [],
                color=UNRELIABLE_COLOR,
                marker="o",
                markerfacecolor="white",
                linestyle="",
                markersize=4,
                label=f"unreliable: < {min_units} correct or incorrect units",
            )
        )
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles))
    if counted:
        fig.supxlabel(
            "labels: correct | incorrect units each AUROC ranks (summed over models)", fontsize=6, color="0.3"
        )
    return fig


def _label_points(ax: Axes, labels: dict[tuple[float, float], list[str]]) -> None:
    """Write each point's labels (joined when points coincide) where they overlap neither each other nor the
    points: adjustText moves them apart (deterministic: its random start is seeded) and draws a thin leader
    line from a moved label to its point."""
    from adjustText import adjust_text

    if not labels:
        return
    xs = np.array([x for x, _ in labels])
    ys = np.array([y for _, y in labels])
    texts = [
        ax.text(x, y, ", ".join(names), fontsize=5.5, color="0.25", ha="center", va="center")
        for (x, y), names in labels.items()
    ]
    adjust_text(
        texts,
        x=xs,
        y=ys,
        ax=ax,
        expand=(1.15, 1.5),
        ensure_inside_axes=True,
        arrowprops={"arrowstyle": "-", "color": "0.55", "linewidth": 0.4},
    )


@styled
def plot_reasoning_tradeoff(table: pl.DataFrame, *, max_labels: int = 14) -> Figure:
    """Δprecision vs relative ΔAUROC of each paired comparison (CoT vs direct; reasoning vs base model).

    Args:
        table: :func:`saltbench.analysis.reasoning_tradeoff` (or ``_units``) output.
        max_labels: label points with their model when there are at most this many.

    Whiskers: paired bootstrap intervals. Points right of 0 gain precision with reasoning; points below 0
    lose ranking quality (AUROC) relative to the baseline. Comparisons without an estimate are listed as
    ``n/a`` in the corner with the reason (the table's ``status_precision`` / ``status_auroc``).
    """
    title = "Reasoning trade-off"
    if table.is_empty():
        return empty_figure(title, "no paired comparisons\n(need both styles or a reasoning pair)")
    fig = new_figure(COLUMN_WIDTH, 3.0)
    ax = fig.add_subplot()
    ax.axhline(0, color="0.4", linewidth=0.7)
    ax.axvline(0, color="0.4", linewidth=0.7)
    kinds = _ordered(table["kind"].to_list(), ["style", "reasoning"])
    colours = color_map(kinds)
    markers = dict(zip(kinds, ("o", "^", "s", "D")))
    names = {"style": "CoT vs direct", "reasoning": "reasoning vs base"}
    missing = []
    labels: dict[tuple[float, float], list[str]] = {}  # coinciding points share one label
    plotted = 0
    for rec in table.iter_rows(named=True):
        x, y = rec["delta_precision"], rec["rel_delta_auroc"]
        if not (_finite(x) and _finite(y)):
            reason = rec.get("status_precision") if not _finite(x) else rec.get("status_auroc")
            missing.append((str(reason or "undefined").replace("_", " "), rec["label"]))
            continue
        plotted += 1
        # a percentile interval need not contain the point estimate: whiskers then stop at the point
        xe = [[max(0.0, x - rec["delta_precision_ci_low"])], [max(0.0, rec["delta_precision_ci_high"] - x)]]
        ye = [[max(0.0, y - rec["rel_delta_auroc_ci_low"])], [max(0.0, rec["rel_delta_auroc_ci_high"] - y)]]
        xerr = xe if all(_finite(v[0]) for v in xe) else None
        yerr = ye if all(_finite(v[0]) for v in ye) else None
        ax.errorbar(
            x,
            y,
            xerr=xerr,
            yerr=yerr,
            fmt=markers[rec["kind"]],
            color=colours[rec["kind"]],
            markersize=4,
            elinewidth=0.6,
            capsize=1.2,
            markeredgecolor="black",
            markeredgewidth=0.3,
            alpha=0.85,
        )
        labels.setdefault((round(x, 9), round(y, 9)), []).append(rec["label"])
    if table.height <= max_labels:
        _label_points(ax, labels)
    if plotted == 0:
        ax.set_xlim(-0.1, 0.1)
        ax.set_ylim(-0.1, 0.1)
        mark_missing(ax, 0.5, 0.6, "all n/a", size=8, in_axes=True)
    if missing:
        reasons: dict[str, list[str]] = {}
        for reason, name in missing:
            reasons.setdefault(reason, []).append(name)
        lines = [
            f"n/a ({why}): " + ", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "")
            for why, names in reasons.items()
        ]
        ax.text(
            0.02,
            0.02,
            "\n".join(lines),
            transform=ax.transAxes,
            fontsize=5.5,
            color=MISSING_COLOR,
            style="italic",
            clip_on=True,
        )
    ax.set_xlabel("Δ precision (reasoning − baseline)")
    ax.set_ylabel("relative Δ AUROC")
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{100 * v:.0f}%")
    ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.yaxis.set_major_locator(MaxNLocator(6))
    handles = [
        Line2D(
            [],
            [],
            color=colours[k],
            marker=markers[k],
            linestyle="",
            markeredgecolor="black",
            markeredgewidth=0.3,
            label=names.get(k, k),
        )
        for k in kinds
    ]
    ax.legend(handles=handles, loc="best")
    return fig


NOISE_METRIC_LABELS: dict[str, str] = {
    "ece": "ECE",
    "auroc_pooled": "AUROC (pooled)",
    "auroc_per_response": "AUROC (per response)",
    "prr": "PRR",
}


@styled
def plot_label_noise_sensitivity(table: pl.DataFrame) -> Figure:
    """Each metric against the fraction of flipped correctness labels, per granularity and noise mode.

    Args:
        table: :func:`saltbench.analysis.label_noise_sensitivity` output.

    One panel per metric; colour = granularity; solid = uniform noise, dashed = noise on the most confident
    units; bands = percentile intervals over bootstrap-and-noise replicates; dotted lines (granularity colour)
    = the analytic expectation under uniform noise (AUROC and PRR). A metric undefined at every noise level is
    marked "n/a" in its panel.
    """
    title = "Label-noise sensitivity"
    if table.is_empty():
        return empty_figure(title, "no scored units")
    metrics = [m for m in NOISE_METRIC_LABELS if m in set(table["metric"])]
    fig = new_figure(TEXT_WIDTH, 2.2)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    grans = _ordered(table["granularity"].to_list(), GRANULARITIES)
    colours = color_map(grans)
    dashes: dict[str, Literal["-", "--"]] = {"uniform": "-", "confident": "--"}
    for ax, metric in zip(axes, metrics):
        part = table.filter(pl.col("metric") == metric)
        drawn = False
        for gran in grans:
            for mode, linestyle in dashes.items():
                rows = part.filter((pl.col("granularity") == gran) & (pl.col("mode") == mode)).sort("epsilon")
                x, y = rows["epsilon"].to_numpy(), rows["value"].to_numpy()
                keep = np.isfinite(y)
                if not keep.any():
                    continue
                drawn = True
                ax.plot(
                    x[keep],
                    y[keep],
                    linestyle=linestyle,
                    color=colours[gran],
                    linewidth=1.0,
                    marker="o",
                    markersize=2.2,
                )
                low, high = rows["ci_low"].to_numpy(), rows["ci_high"].to_numpy()
                band = keep & np.isfinite(low) & np.isfinite(high)
                ax.fill_between(x[band], low[band], high[band], color=colours[gran], alpha=0.15, linewidth=0)
                if mode == "uniform":
                    expected = rows["expected"].to_numpy()
                    if np.isfinite(expected).any():
                        ax.plot(x, expected, linestyle=":", color=colours[gran], linewidth=0.9)
        if not drawn:
            mark_missing(ax, 0.5, 0.5, "n/a", size=8, in_axes=True)
        ax.set_title(NOISE_METRIC_LABELS[metric])
        ax.set_xlabel("flipped labels ε")
    handles = [Line2D([], [], color=colours[g], label=label(g)) for g in grans]
    handles += [
        Line2D([], [], color="0.3", linestyle=ls, label=f"{mode} noise") for mode, ls in dashes.items()
    ]
    handles.append(Line2D([], [], color="0.3", linestyle=":", linewidth=0.9, label="expected (uniform)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=6, frameon=False)
    fig.suptitle(title)
    return fig
