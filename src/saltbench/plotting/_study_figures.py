"""Figures from unit-level summaries, intervention tables and training logs."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import polars as pl
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FormatStrFormatter, NullFormatter

from saltbench.analysis import BASELINES, wilson_interval
from saltbench.core.vocabulary import GRANULARITIES

from ._style import (
    COLUMN_WIDTH,
    CONFIDENCE_LABELS,
    PALETTE,
    TASK_LABELS,
    TEXT_WIDTH,
    color_map,
    empty_figure,
    grid_shape,
    label,
    mark_missing,
    new_figure,
    styled,
)

PLACEMENT_ORDER: tuple[str, ...] = ("local", "distant", "random")
# distinct markers and dashes keep coinciding placement lines (a model insensitive to where the
# corruption sits) visible on top of each other
PLACEMENT_STYLE: dict[str, dict[str, Any]] = {  # Line2D keyword arguments
    "local": {"marker": "o", "linestyle": "-", "markersize": 6},
    "distant": {"marker": "s", "linestyle": "--", "markersize": 4.5},
    "random": {"marker": "^", "linestyle": ":", "markersize": 3.5},
}


def _best_calibrated(rows: pl.DataFrame, top: int) -> list[str]:
    """The ``top`` confidence functions (at least one) with the lowest pooled ECE, undefined ECE last."""
    ranking = (
        rows.group_by("confidence")
        .agg(pl.col("ece").first(), pl.col("n").sum().alias("units"))
        .with_columns(pl.col("ece").fill_nan(None))
        .sort("ece", nulls_last=True)
    )
    return ranking["confidence"].to_list()[: max(1, top)]


def _draw_calibration(ax: Axes, rows: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw accuracy per bin against the diagonal, each bin's mean confidence as a tick and the gap between
    the two shaded; return the bins' centres, widths and unit counts."""
    bin_low = rows["bin_low"].to_numpy().astype(float)
    bin_high = rows["bin_high"].to_numpy().astype(float)
    accuracy = rows["accuracy"].to_numpy().astype(float)
    confidence = rows["mean_confidence"].to_numpy().astype(float)
    count = rows["n"].to_numpy().astype(float)
    centre, width = (bin_low + bin_high) / 2, bin_high - bin_low
    filled = np.isfinite(accuracy) & (count > 0)
    ax.plot([0, 1], [0, 1], color="0.4", linestyle="--", linewidth=0.7)
    ax.bar(
        centre[filled],
        accuracy[filled],
        width=width[filled] * 0.95,
        color="C0",
        alpha=0.75,
        edgecolor="C0",
        linewidth=0.4,
    )
    gap = confidence - accuracy
    for sign, colour in ((1, GAP_COLOURS["over"]), (-1, GAP_COLOURS["under"])):
        side = filled & (sign * gap > 0)
        ax.bar(
            centre[side],
            gap[side],
            bottom=accuracy[side],
            width=width[side] * 0.95,
            color=colour,
            alpha=0.35,
            edgecolor=colour,
            linewidth=0.4,
            hatch="////",
        )
    inset = width[filled] * 0.025
    ax.hlines(
        confidence[filled], bin_low[filled] + inset, bin_high[filled] - inset, color="C1", linewidth=1.2
    )
    if not filled.any():
        mark_missing(ax, 0.5, 0.5, "no units", size=8, in_axes=True)
    return centre, width, count


def _ece_text(rows: pl.DataFrame) -> str:
    """``ECE`` and its value (three decimals) from a function's reliability rows, or ``ECE n/a``."""
    ece_value = rows["ece"][0] if rows.height else float("nan")
    defined = isinstance(ece_value, float) and math.isfinite(ece_value)
    return f"ECE {ece_value:.3f}" if defined else "ECE n/a"


def _draw_reliability_column(ax: Axes, hist: Axes, rows: pl.DataFrame, function: str) -> None:
    """Draw one confidence function's reliability diagram (upper axes) and its share of units per bin
    (lower axes)."""
    centre, width, count = _draw_calibration(ax, rows)
    total = count.sum()
    share = count / total if total > 0 else np.zeros_like(count)
    hist.bar(centre, share, width=width * 0.95, color="0.55")
    ax.set_title(f"{label(function, CONFIDENCE_LABELS)}\n{_ece_text(rows)}", fontsize=7.5)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("auto")
    hist.set_xlabel("calibrated confidence")
    hist.set_ylim(0, max(float(share.max()) * 1.15, 0.05))


def _reliability_legend_handles() -> list[Artist]:
    """Legend entries of the reliability diagrams: accuracy bars, confidence ticks, gaps, the diagonal."""
    return [
        Patch(facecolor="C0", alpha=0.75, label="accuracy per bin"),
        Line2D([], [], color="C1", linewidth=1.2, label="mean confidence per bin"),
        Patch(facecolor=GAP_COLOURS["over"], alpha=0.35, hatch="////", label="gap: over-confident"),
        Patch(facecolor=GAP_COLOURS["under"], alpha=0.35, hatch="////", label="gap: under-confident"),
        Line2D([], [], color="0.4", linestyle="--", linewidth=0.7, label="perfect calibration"),
    ]


@styled
def plot_reliability_diagrams(table: pl.DataFrame, *, granularity: str = "atom", top: int = 4) -> Figure:
    """Reliability diagrams of the ``top`` best-calibrated confidence functions (lowest pooled ECE).

    Args:
        table: :func:`saltbench.analysis.reliability_table` output.
        granularity: which granularity to show.
        top: number of functions (panels).

    Upper panels: accuracy per confidence bin (bars) against the diagonal of perfect calibration; the
    bin's mean calibrated confidence is a tick across the bin and the **gap** between the two is shaded
    (red above the bar: over-confident; green: under-confident), so each bin's contribution to ECE is
    visible; lower panels: share of evaluation units per bin. The title says what the panels pool (models,
    styles, tasks, granularity, calibration method, flavour).
    """
    title = "Reliability diagrams"
    if table.is_empty():
        return empty_figure(title, "no calibrated confidences")
    at_granularity = table.filter(pl.col("granularity") == granularity)
    if at_granularity.is_empty():
        return empty_figure(title, f"no {granularity}-level units")
    functions = _best_calibrated(at_granularity, top)
    fig = new_figure(TEXT_WIDTH if len(functions) > 2 else COLUMN_WIDTH * len(functions) * 0.9 + 0.3, 3.0)
    axes = fig.subplots(2, len(functions), sharex=True, squeeze=False, height_ratios=[3, 1])
    for column, function in enumerate(functions):
        ax, hist = axes[0][column], axes[1][column]
        _draw_reliability_column(
            ax, hist, at_granularity.filter(pl.col("confidence") == function).sort("bin"), function
        )
        if column == 0:
            ax.set_ylabel("accuracy")
            hist.set_ylabel("share")
    fig.legend(handles=_reliability_legend_handles(), loc="outside upper center", ncols=3, fontsize=6.5)
    pooled = _pooled_description(at_granularity.filter(pl.col("confidence").is_in(functions)), granularity)
    if pooled:  # below the panels, inside the layout (constrained layout makes room for it)
        fig.supxlabel("\n".join(textwrap.wrap(pooled, 150)), fontsize=6, color="0.25")
    return fig


GAP_COLOURS: Mapping[str, str] = {"over": "C3", "under": "C2"}
"""Colours of the calibration gap in reliability diagrams: confidence above accuracy / below it."""


def _pooled_description(rows: pl.DataFrame, granularity: str) -> str:
    """What a reliability figure pools, from the table's provenance columns (empty if they are absent)."""
    if not {"models", "styles", "tasks", "calibration", "flavour"} <= set(rows.columns) or rows.is_empty():
        return ""

    def joined(column: str) -> str:
        return ", ".join(sorted({v for text in rows[column].drop_nulls() for v in text.split(",") if v}))

    cells = int(cast(int, rows["n_cells"].max())) if "n_cells" in rows.columns else 0
    return (
        f"Pooled: {granularity} units of {cells} (model, style, task) cells; models {joined('models')}; "
        f"styles {joined('styles')}; tasks {joined('tasks')}; calibration {joined('calibration')}, "
        f"flavour {joined('flavour')}, evaluation split"
    )


@styled
def plot_rejection_curves(table: pl.DataFrame, *, top: int = 3) -> Figure:
    """Risk–coverage curves per granularity: the ``top`` functions by AURC plus oracle and random.

    Args:
        table: :func:`saltbench.analysis.rejection_table` output.
        top: functions to draw per panel (lowest mean AURC first).

    Each curve is the selective risk (error rate of the kept units) when keeping the most confident
    fraction (coverage) of units, averaged over model × style × task cells. Legend entries give the mean
    AURC (lower is better).
    """
    title = "Risk–coverage curves"
    if table.is_empty():
        return empty_figure(title, "no units to reject")
    grans = [g for g in GRANULARITIES if g in set(table["granularity"].to_list())]
    fig = new_figure(TEXT_WIDTH if len(grans) > 1 else COLUMN_WIDTH, 3.2)
    axes = fig.subplots(1, len(grans), squeeze=False)[0]
    names = table["confidence"].unique(maintain_order=True).to_list()
    all_fns = [f for f in names if f not in BASELINES]
    colours = color_map(sorted(all_fns), [c for i, c in enumerate(PALETTE) if i != 7])  # no grey (= random)
    for ax, gran in zip(axes, grans):
        sub = table.filter(pl.col("granularity") == gran)
        aurc = (
            sub.group_by("confidence")
            .agg(pl.col("aurc").first())
            .with_columns(pl.col("aurc").fill_nan(None))
            .sort("aurc", nulls_last=True)
        )
        fns = [f for f in aurc["confidence"].to_list() if f not in BASELINES][:top]
        lookup = dict(zip(aurc["confidence"].to_list(), aurc["aurc"].to_list()))
        styles = [(f, {"color": colours[f], "linewidth": 1.2}) for f in fns]
        styles += [
            ("oracle", {"color": "black", "linestyle": "--", "linewidth": 0.9}),
            ("random", {"color": "0.5", "linestyle": ":", "linewidth": 0.9}),
        ]
        drawn = 0
        if not fns:
            mark_missing(ax, 0.5, 0.55, "confidence scores n/a", size=7, in_axes=True)
        for name, kw in styles:
            curve = sub.filter(pl.col("confidence") == name).sort("coverage")
            if curve.is_empty():
                continue
            value = lookup.get(name)
            tag = f"{value:.3f}" if isinstance(value, float) and math.isfinite(value) else "n/a"
            text = f"{label(name, CONFIDENCE_LABELS)} ({tag})"
            ax.plot(curve["coverage"], curve["selective_risk"], label=text, **kw)
            drawn += 1
        risk = sub["selective_risk"].to_numpy().astype(float)
        risk = risk[np.isfinite(risk)]
        if drawn == 0 or risk.size == 0:
            mark_missing(ax, 0.5, 0.5, "no data", size=8, in_axes=True)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, max(float(risk.max()) * 1.05, 0.05) if risk.size else 1.0)
        cells = sub.filter(~pl.col("confidence").is_in(["oracle", "random"]))["n_cells"].max()
        ax.set_title(f"{gran} units" + (f" (n = {cells} cells)" if isinstance(cells, int) else ""))
        ax.set_xlabel("coverage")
        if drawn:
            ax.legend(title="function (AURC)", loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=1)
    axes[0].set_ylabel("selective risk")
    return fig


def _over_models(table: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Re-aggregate an accuracy table over models (exact: sums of n and n_correct, n-weighted mean x)."""
    out = (
        table.group_by(keys)
        .agg(
            pl.col("n").sum(),
            pl.col("n_correct").sum(),
            ((pl.col("x").fill_nan(None) * pl.col("n")).sum() / pl.col("n").sum()).alias("x"),
        )
        .sort(keys)
    )
    lo, hi = wilson_interval(out["n_correct"].to_numpy(), out["n"].to_numpy())
    return out.with_columns(
        (pl.col("n_correct") / pl.col("n")).alias("accuracy"),
        pl.Series("ci_low", lo),
        pl.Series("ci_high", hi),
    )


def _interval_whiskers(ax: Axes, frame: pl.DataFrame, colour: object, x: object = None) -> None:
    """Wilson intervals of ``frame``'s points as whiskers (a band needs two x values: a single point would
    otherwise look exact)."""
    acc, low, high = (frame[c].to_numpy() for c in ("accuracy", "ci_low", "ci_high"))
    keep = np.isfinite(acc) & np.isfinite(low) & np.isfinite(high)
    if keep.any():
        xs = frame["x"].to_numpy()[keep] if x is None else np.full(int(keep.sum()), x)
        yerr = np.vstack([acc[keep] - low[keep], high[keep] - acc[keep]]).clip(min=0)
        ax.errorbar(xs, acc[keep], yerr=yerr, color=colour, linestyle="", linewidth=0.8, capsize=2)


def _task_order(tasks: list[str]) -> list[str]:
    present = list(dict.fromkeys(tasks))
    order = list(TASK_LABELS)
    return [t for t in order if t in present] + sorted(t for t in present if t not in order)


@styled
def plot_interventions_propagation(table: pl.DataFrame, *, max_cols: int = 4) -> Figure:
    """Next-atom accuracy vs corrupted fraction of the prefix, by placement of the corruption.

    Args:
        table: :func:`saltbench.analysis.accuracy_by_corruption` output (aggregated here over models).
        max_cols: panels per row (one panel per task).

    Lines: local / distant / random corruption (distinct markers and dashes) with Wilson 95% bands;
    black star and dotted line: clean prefix accuracy. There is no panel pooled over tasks: the
    corrupted fraction ``c/(k-1)`` reachable at a position depends on the task's answer length, so a
    pooled curve mixes different tasks at different fractions (one task's accuracy level at low
    fractions, another's at high ones) and shows a trend that no task has.
    """
    title = "Error propagation"
    if table.is_empty():
        return empty_figure(title, "no intervention results")
    agg = _over_models(table, ["task", "placement", "bin"])
    tasks = _task_order(agg["task"].to_list())
    rows, cols = grid_shape(len(tasks), max_cols)
    fig = new_figure(TEXT_WIDTH if cols > 1 else COLUMN_WIDTH, 0.5 + 1.6 * rows)
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel()
    placements = [p for p in PLACEMENT_ORDER if p in set(agg["placement"].to_list())]
    colours = color_map(list(PLACEMENT_ORDER))
    for ax, task in zip(axes, tasks):
        sub = agg.filter(pl.col("task") == task)
        clean = sub.filter(pl.col("placement") == "clean")
        if clean.height and math.isfinite(clean["accuracy"][0]):
            ax.axhline(clean["accuracy"][0], color="black", linestyle=":", linewidth=0.7)
            ax.plot(0, clean["accuracy"][0], marker="*", color="black", markersize=6, linestyle="")
            _interval_whiskers(ax, clean.head(1), "black", x=0)
        drawn = clean.height
        for p in placements:
            line = sub.filter(pl.col("placement") == p).sort("x")
            if line.is_empty():
                continue
            drawn += 1
            band = (line["x"], line["ci_low"], line["ci_high"])
            ax.fill_between(*band, color=colours[p], alpha=0.18, linewidth=0)
            ax.plot(line["x"], line["accuracy"], color=colours[p], label=p, **PLACEMENT_STYLE[p])
            if line.height == 1:
                _interval_whiskers(ax, line, colours[p])
        if drawn == 0:
            mark_missing(ax, 0.5, 0.5, "no data", size=8, in_axes=True)
        ax.set_title(label(task, TASK_LABELS))
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(0, 1.02)
    for ax in axes[len(tasks) :]:
        ax.set_axis_off()
    for ax in axes[(rows - 1) * cols : (rows - 1) * cols + cols]:
        ax.set_xlabel("corrupted fraction of prefix")
    for r in range(rows):
        axes[r * cols].set_ylabel("next-atom accuracy")
    handles = [Line2D([], [], color="black", marker="*", linestyle=":", linewidth=0.7, label="clean prefix")]
    handles += [
        Line2D([], [], color=colours[p], label=f"{p} corruption", **PLACEMENT_STYLE[p]) for p in placements
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles))
    return fig


@styled
def plot_interventions_context_length(table: pl.DataFrame) -> Figure:
    """Next-atom accuracy after a clean (correct) prefix vs relative position in the answer.

    Args:
        table: :func:`saltbench.analysis.accuracy_by_position` output (aggregated here over models).

    One line per task with its Wilson 95% band: a falling line means accuracy degrades as the answer
    context grows even when everything before is correct. No line pooled over tasks: which positions a
    task reaches depends on its answer length (a one-atom answer only has k/n = 1), so a pooled line
    would mix tasks unevenly along the x axis.
    """
    title = "Context length"
    if table.is_empty():
        return empty_figure(title, "no clean-prefix interventions")
    agg = _over_models(table, ["task", "bin"])
    tasks = _task_order(agg["task"].to_list())
    colours = color_map(list(TASK_LABELS))
    fig = new_figure(COLUMN_WIDTH, 2.5)
    ax = fig.add_subplot()
    for task in tasks:
        line = agg.filter(pl.col("task") == task).sort("x")
        colour = colours.get(task, "0.5")
        ax.fill_between(line["x"], line["ci_low"], line["ci_high"], color=colour, alpha=0.12, linewidth=0)
        ax.plot(
            line["x"],
            line["accuracy"],
            marker="o",
            markersize=2.5,
            linewidth=0.9,
            color=colour,
            label=label(task, TASK_LABELS),
        )
        if line.height == 1:
            _interval_whiskers(ax, line, colour)
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("position in answer (k / n)")
    ax.set_ylabel("next-atom accuracy\n(clean prefix)")
    ax.legend(ncols=2, loc="lower left")
    return fig


@styled
def plot_training_loss(
    table: pl.DataFrame, *, smooth: int | None = None, checkpoints: Mapping[str, int] | None = None
) -> Figure:
    """Training loss vs optimisation step for each trained model.

    Args:
        table: training logs (model, step, loss, ...), concatenated.
        smooth: centred moving-average window in logged points; ``None`` picks ``max(1, n // 40)``
            (about 40 windows per run). With ``smooth > 1`` the raw per-step loss is drawn faintly behind
            the moving average.
        checkpoints: checkpoint name -> step, marked by dotted vertical lines (the models evaluated as
            ``name@checkpoint``).

    The y axis is logarithmic (decade labels only) when the loss spans more than a factor of 20.
    """
    title = "Training loss"
    if table.is_empty() or "loss" not in table.columns:
        return empty_figure(title, "no training logs")
    if smooth is not None and smooth < 1:
        raise ValueError(f"smooth must be >= 1, got {smooth!r}")
    fig = new_figure(COLUMN_WIDTH, 2.3)
    ax = fig.add_subplot()
    models = table["model"].unique(maintain_order=True).to_list()
    colours = color_map(models)
    losses = table["loss"].to_numpy().astype(float)
    fin = losses[np.isfinite(losses)]
    for m in models:
        run = table.filter(pl.col("model") == m).sort("step")
        steps = run["step"].to_numpy()
        y = run["loss"].to_numpy().astype(float)
        window = max(1, y.size // 40) if smooth is None else smooth
        if window > 1 and y.size >= window and np.isfinite(y).any():
            ax.plot(steps, y, color=colours[m], alpha=0.25, linewidth=0.5)
            kernel = np.ones(window) / window
            filled = np.nan_to_num(y, nan=float(np.nanmean(y)))
            counts = np.convolve(np.ones_like(y), kernel, mode="same")  # edges: average what exists
            y = np.convolve(filled, kernel, mode="same") / counts
        ax.plot(steps, y, color=colours[m], label=m)
    for name, step in sorted((checkpoints or {}).items(), key=lambda item: item[1]):
        ax.axvline(step, color="0.4", linestyle=":", linewidth=0.8)
        ax.annotate(
            name,
            (step, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(-2, -2),
            textcoords="offset points",
            ha="right",
            va="top",
            fontsize=7,
            color="0.3",
        )
    if fin.size == 0:
        mark_missing(ax, 0.5, 0.5, "loss n/a", size=8, in_axes=True)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
    elif fin.min() > 0 and fin.max() / fin.min() > 20:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    if len(models) > 1:
        ax.legend()
    return fig
