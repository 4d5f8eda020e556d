"""Figures from metrics-derived tables: accuracy by task, dominance, AUROC by granularity, reasoning."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from matplotlib.typing import ColorType
from numpy.random import Generator

from saltbench.analysis import ASPECT_METRICS
from saltbench.confidence import CONFIDENCE_FUNCTIONS
from saltbench.core.vocabulary import GRANULARITIES

from ._style import (
    COLUMN_WIDTH,
    CONFIDENCE_LABELS,
    METRIC_LABELS,
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


def _draw_precision_cell(
    ax: Axes,
    cell: pl.DataFrame,
    position: float,
    width: float,
    colour: ColorType,
    *,
    n_models: int,
    rng: Generator,
) -> None:
    """Draw one task × style cell: the bar of mean precision over the eligible models with one dot per model
    (hollow: a model that enters no pooled estimate, docs/metrics.md §10), or the single model's bootstrap
    interval; ``n/a`` when no value is finite."""
    eligible = cell["eligible"] if "eligible" in cell.columns else pl.Series([True] * cell.height)
    values = cell["value"].to_numpy().astype(float) if cell.height else np.empty(0)
    kept = eligible.to_numpy().astype(bool) & np.isfinite(values)
    excluded = ~eligible.to_numpy().astype(bool) & np.isfinite(values)
    if n_models > 1 and excluded.any():
        jitter = rng.uniform(-0.25, 0.25, int(excluded.sum())) * width
        ax.scatter(
            position + jitter, values[excluded], s=6, facecolor="none", edgecolor=colour, linewidth=0.5
        )
    finite = values[kept]
    if finite.size == 0:
        mark_missing(ax, position, 0.08, rotation=90)
        return
    mean = finite.mean()
    alpha = 0.55 if n_models > 1 else 0.9
    ax.bar(position, mean, width=width * 0.92, color=colour, alpha=alpha, edgecolor=colour, linewidth=0.6)
    if n_models > 1:
        jitter = rng.uniform(-0.25, 0.25, finite.size) * width
        ax.scatter(position + jitter, finite, s=5, color=colour, edgecolor="black", linewidth=0.3, zorder=3)
        return
    ci_low, ci_high = cell["ci_low"][0], cell["ci_high"][0]
    if _finite(ci_low) and _finite(ci_high):
        ax.errorbar(
            position,
            mean,
            yerr=[[mean - ci_low], [ci_high - mean]],
            fmt="none",
            ecolor="black",
            elinewidth=0.6,
            capsize=1.5,
        )


def _draw_precision_panel(
    ax: Axes,
    panel: pl.DataFrame,
    styles: Sequence[str],
    tasks: Sequence[str],
    colours: Mapping[object, Any],
    *,
    n_models: int,
    rng: Generator,
) -> None:
    """Draw one granularity's panel: per task, one bar per prompt style, side by side."""
    width = 0.8 / max(len(styles), 1)
    for style_index, style in enumerate(styles):
        for task_index, task in enumerate(tasks):
            cell = panel.filter((pl.col("style") == style) & (pl.col("task") == task))
            position = task_index - 0.4 + width * (style_index + 0.5)
            _draw_precision_cell(ax, cell, position, width, colours[style], n_models=n_models, rng=rng)
    ax.set_xticks(range(len(tasks)), [label(task, TASK_LABELS) for task in tasks], rotation=30, ha="right")
    ax.set_xlim(-0.6, len(tasks) - 0.4)
    ax.set_ylim(0, 1.02)


def _precision_legend_handles(
    styles: Sequence[str], colours: Mapping[object, Any], n_models: int, *, excluded: int = 0
) -> list[Line2D]:
    """Legend entries of the precision figure: one square per prompt style, the per-model dot when there are
    several models, and the hollow dot of the ``excluded`` models (not in the bars) when there are any."""
    handles = [
        Line2D([], [], color=colours[style], marker="s", linestyle="", markersize=5, label=style)
        for style in styles
    ]
    if n_models > 1:
        handles.append(
            Line2D(
                [], [], color="0.4", marker="o", linestyle="", markersize=3, label=f"one model (n={n_models})"
            )
        )
    if n_models > 1 and excluded:
        handles.append(
            Line2D(
                [],
                [],
                color="0.4",
                marker="o",
                markerfacecolor="none",
                linestyle="",
                markersize=3,
                label=f"excluded, not in the bars (n={excluded})",
            )
        )
    return handles


@styled
def plot_accuracy_by_task(table: pl.DataFrame, *, granularities: Sequence[str] = GRANULARITIES) -> Figure:
    """Precision per task: one panel per granularity, bars per prompt style, one dot per model.

    Args:
        table: :func:`saltbench.analysis.accuracy_by_task` output (model, style, task, granularity, value,
            ci_low, ci_high).
        granularities: panels, in order.

    Bars are the mean over the eligible models (column ``eligible``, docs/metrics.md §10; all models when
    the column is absent) of the per-task precision; dots are the individual models, hollow for the
    excluded ones; with a single model the bar carries that model's bootstrap interval. Task × style cells
    without a finite value show ``n/a``.
    """
    title = "Precision by task"
    if table.is_empty() or "value" not in table.columns:
        return empty_figure(title, "no precision values")
    styles = _ordered(table["style"].to_list(), STYLE_ORDER)
    tasks = _ordered(table["task"].to_list(), list(TASK_LABELS))
    n_models = len(table["model"].unique(maintain_order=True).to_list())
    colours = color_map(styles)
    fig = new_figure(TEXT_WIDTH, 2.3)
    axes = fig.subplots(1, len(granularities), sharey=True, squeeze=False)[0]
    rng = np.random.default_rng(0)  # one generator for all panels: the dots' jitter is drawn in panel order
    for ax, granularity in zip(axes, granularities):
        panel = table.filter(pl.col("granularity") == granularity)
        _draw_precision_panel(ax, panel, styles, tasks, colours, n_models=n_models, rng=rng)
        ax.set_title(f"{granularity} units")
        ax.grid(axis="x", visible=False)
    axes[0].set_ylabel("precision")
    excluded = table.filter(~pl.col("eligible")) if "eligible" in table.columns else table.clear()
    handles = _precision_legend_handles(
        styles, colours, n_models, excluded=excluded["model"].n_unique() if excluded.height else 0
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


def _auroc_floor(table: pl.DataFrame) -> float:
    """The lower y limit of the AUROC panels: under the lowest point or whisker drawn (the medians and lower
    quartiles; 0.4 at most); count labels sit beside their points, so they need no room below."""
    drawn = table.select("median", "q25").to_numpy().astype(float).ravel()
    drawn = drawn[np.isfinite(drawn)]
    return min(0.4, float(drawn.min()) - 0.08) if drawn.size else 0.4


def _support(cell: pl.DataFrame, metric: str, counted: bool, min_units: int) -> tuple[str | None, bool]:
    """A cell's count label and whether it is no finding (hollow): pooled AUROC ``correct|incorrect`` units,
    hollow under ``min_units`` of either; per-response AUROC the responses holding both classes, hollow
    under ``min_units`` of them (:func:`saltbench.analysis.too_little_support`). ``(None, False)`` where the
    table has no counts."""
    per_response = metric == "auroc_per_response"
    columns = ("n_responses",) if per_response else ("n_correct", "n_incorrect")
    if not counted or not set(columns) <= set(cell.columns):
        return None, False
    values = [_count(cell[column][0]) for column in columns]
    if any(value is None for value in values):
        return None, False
    counts = [int(value) for value in values if value is not None]
    return "|".join(map(str, counts)), min(counts) < min_units


def _draw_auroc_point(
    ax: Axes,
    cell: pl.DataFrame,
    position: float,
    *,
    metric: str,
    colour: ColorType,
    marker: str,
    floor: float,
    min_units: int,
    counted: bool,
) -> None:
    """Draw one cell's median AUROC over models with its inter-quartile whisker (the median lies inside it; a
    mean can lie outside) and its count label (:func:`_support`) beside it, right of the whisker so that
    no line crosses it; hollow and grey when the cell is no finding; ``n/a`` when no model has a value."""
    median = cell["median"][0] if cell.height else None
    if median is None or not _finite(median):
        mark_missing(ax, position, floor + 0.06, rotation=90, size=5.5)
        return
    text, weak = _support(cell, metric, counted, min_units)
    colour = UNRELIABLE_COLOR if weak else colour
    lower_quartile, upper_quartile = cell["q25"][0], cell["q75"][0]
    if _finite(lower_quartile) and _finite(upper_quartile) and upper_quartile > lower_quartile:
        ax.vlines(position, lower_quartile, upper_quartile, color=colour, linewidth=1.0)
    ax.plot(
        position,
        median,
        marker=marker,
        color=colour,
        markersize=3.5,
        linestyle="",
        markerfacecolor="white" if weak else colour,
    )
    if text is not None:
        ax.annotate(
            text,
            (position, median),
            xytext=(2.5, 0),
            textcoords="offset points",
            rotation=90,
            ha="left",
            va="center",
            fontsize=4,
            color="0.45" if weak else "0.2",
        )


def _draw_auroc_panel(
    ax: Axes,
    panel: pl.DataFrame,
    tasks: Sequence[str],
    granularities: Sequence[str],
    *,
    colours: Mapping[object, Any],
    markers: Mapping[str, str],
    floor: float,
    min_units: int,
    counted: bool,
) -> None:
    """Draw one style × metric panel: the chance line and, per task, one point per granularity."""
    ax.axhline(0.5, color="0.5", linestyle="--", linewidth=0.7, zorder=1)
    step = 0.8 / len(granularities)
    for granularity_index, granularity in enumerate(granularities):
        for task_index, task in enumerate(tasks):
            position = task_index - 0.4 + step * (granularity_index + 0.5)
            cell = panel.filter((pl.col("granularity") == granularity) & (pl.col("task") == task))
            _draw_auroc_point(
                ax,
                cell,
                position,
                metric=str(panel["metric"][0]) if panel.height else "",
                colour=colours[granularity],
                marker=markers[granularity],
                floor=floor,
                min_units=min_units,
                counted=counted,
            )
    ax.set_ylim(floor, 1.04)  # room above 1.0 for a marker at a perfect AUROC and its label
    ax.set_xlim(-0.6, len(tasks) - 0.4)
    ax.set_xticks(range(len(tasks)), [label(task, TASK_LABELS) for task in tasks], rotation=30, ha="right")
    ax.grid(axis="x", visible=False)


def _auroc_legend_handles(
    granularities: Sequence[str],
    colours: Mapping[object, Any],
    markers: Mapping[str, str],
    *,
    counted: bool,
    min_units: int,
) -> list[Line2D]:
    """Legend entries of the AUROC figure: one marker per granularity, the chance line and, when the table
    has unit counts, the hollow marker of an unreliable estimate."""
    handles = [
        Line2D(
            [],
            [],
            color=colours[granularity],
            marker=markers[granularity],
            linestyle="",
            markersize=4,
            label=granularity,
        )
        for granularity in granularities
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
                label=f"no finding: a count in its label under {min_units}",
            )
        )
    return handles


@styled
def plot_granularity_auroc(table: pl.DataFrame, *, min_units: int = 20) -> Figure:
    """AUROC by task at atom, line and generation granularity; pooled and per-response panels.

    Args:
        table: :func:`saltbench.analysis.granularity_table` output.
        min_units: an estimate resting on fewer correct or fewer incorrect units than this
            (``analysis.min_units``) is drawn as a hollow grey marker: unreliable, not a finding.

    Points: median over models, inside their whiskers, the inter-quartile range over models (the findings
    page gives the mean); dashed line: chance (0.5). Rows: prompt styles. Each point is labelled, beside it,
    with its support summed over models: pooled AUROC ``correct|incorrect``, the units it ranks; per-response
    AUROC the responses holding both classes, the only ones it is defined on (hollow grey below
    ``min_units`` of either, :func:`saltbench.analysis.too_little_support`). Undefined values (e.g.
    per-response AUROC of whole generations) show ``n/a``.
    """
    title = "AUROC by granularity"
    if table.is_empty():
        return empty_figure(title, "no AUROC values")
    styles = _ordered(table["style"].to_list(), STYLE_ORDER)
    tasks = _ordered(table["task"].to_list(), list(TASK_LABELS))
    metrics = ["auroc_pooled", "auroc_per_response"]
    granularities: list[str] = list(GRANULARITIES)
    colours = color_map(granularities)
    markers = dict(zip(granularities, ("o", "s", "D")))
    counted = {"n_correct", "n_incorrect"} <= set(table.columns)
    fig = new_figure(TEXT_WIDTH, 0.75 + 1.9 * len(styles))
    axes = fig.subplots(len(styles), len(metrics), sharex=True, sharey=True, squeeze=False)
    floor = _auroc_floor(table)
    for row, style in enumerate(styles):
        for column, metric in enumerate(metrics):
            ax = axes[row][column]
            panel = table.filter((pl.col("style") == style) & (pl.col("metric") == metric))
            _draw_auroc_panel(
                ax,
                panel,
                tasks,
                granularities,
                colours=colours,
                markers=markers,
                floor=floor,
                min_units=min_units,
                counted=counted,
            )
            if row == 0:
                ax.set_title(label(metric))
            if column == 0:
                ax.set_ylabel(f"AUROC ({style})" if len(styles) > 1 else "AUROC")
    handles = _auroc_legend_handles(granularities, colours, markers, counted=counted, min_units=min_units)
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles))
    if counted:
        fig.supxlabel(
            "labels, summed over models: pooled, correct | incorrect units ranked; per response, responses "
            "with both classes",
            fontsize=6,
            color="0.3",
        )
    return fig


def _label_points(ax: Axes, labels: dict[tuple[float, float], list[str]]) -> None:
    """Write each point's labels (joined when points coincide) where they overlap neither each other nor the
    points: adjustText moves them apart (deterministic: its random start is seeded) and draws a thin leader
    line from every label to its point, however short the move (a label nudged next to another comparison's
    point would otherwise read as that one's)."""
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
        min_arrow_len=0,
        arrowprops={"arrowstyle": "-", "color": "0.55", "linewidth": 0.4},
    )


def _clipped_whiskers(record: dict[str, Any], column: str) -> list[list[float]] | None:
    """Lengths of the whiskers from ``record[column]`` to the ends of its bootstrap interval (0 where the
    interval misses the estimate), or ``None`` when either length is not finite."""
    estimate = record[column]
    # a percentile interval need not contain the point estimate: whiskers then stop at the point
    whiskers = [
        [max(0.0, estimate - record[f"{column}_ci_low"])],
        [max(0.0, record[f"{column}_ci_high"] - estimate)],
    ]
    return whiskers if all(_finite(length[0]) for length in whiskers) else None


def _draw_tradeoff_points(
    ax: Axes, table: pl.DataFrame, colours: Mapping[object, Any], markers: Mapping[str, str]
) -> tuple[dict[tuple[float, float], list[str]], list[tuple[str, str]]]:
    """Draw each comparison with both estimates as a point with whiskers; return the drawn points' labels
    (coinciding points share one entry) and the ``(reason, label)`` of each comparison without."""
    missing: list[tuple[str, str]] = []
    labels: dict[tuple[float, float], list[str]] = {}  # coinciding points share one label
    for record in table.iter_rows(named=True):
        precision_gain, auroc_change = record["delta_precision"], record["rel_delta_auroc"]
        if not (_finite(precision_gain) and _finite(auroc_change)):
            failed = "status_precision" if not _finite(precision_gain) else "status_auroc"
            reason = record.get(failed)
            missing.append((str(reason or "undefined").replace("_", " "), record["label"]))
            continue
        precision_whiskers = _clipped_whiskers(record, "delta_precision")
        auroc_whiskers = _clipped_whiskers(record, "rel_delta_auroc")
        ax.errorbar(
            precision_gain,
            auroc_change,
            xerr=precision_whiskers,
            yerr=auroc_whiskers,
            fmt=markers[record["kind"]],
            color=colours[record["kind"]],
            markersize=4,
            elinewidth=0.6,
            capsize=1.2,
            markeredgecolor="black",
            markeredgewidth=0.3,
            alpha=0.85,
        )
        labels.setdefault((round(precision_gain, 9), round(auroc_change, 9)), []).append(record["label"])
    return labels, missing


def _note_missing(ax: Axes, missing: list[tuple[str, str]]) -> None:
    """Write the comparisons without an estimate in the lower-left corner: one ``n/a (reason)`` line per
    reason, naming two of them and counting the rest."""
    reasons: dict[str, list[str]] = {}
    for reason, name in missing:
        reasons.setdefault(reason, []).append(name)
    lines = [
        f"n/a ({reason}): " + ", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "")
        for reason, names in reasons.items()
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


def _format_tradeoff_axes(
    ax: Axes, kinds: Sequence[str], colours: Mapping[object, Any], markers: Mapping[str, str]
) -> None:
    """Label and format both axes (y as percentages) and add one legend entry per kind of comparison."""
    kind_labels = {"style": "CoT vs direct", "reasoning": "reasoning vs base"}
    ax.set_xlabel("Δ precision (reasoning − baseline)")
    ax.set_ylabel("relative Δ AUROC")
    ax.yaxis.set_major_formatter(lambda value, _pos: f"{100 * value:.0f}%")
    ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.yaxis.set_major_locator(MaxNLocator(6))
    handles = [
        Line2D(
            [],
            [],
            color=colours[kind],
            marker=markers[kind],
            linestyle="",
            markeredgecolor="black",
            markeredgewidth=0.3,
            label=kind_labels.get(kind, kind),
        )
        for kind in kinds
    ]
    ax.legend(handles=handles, loc="best")


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
    labels, missing = _draw_tradeoff_points(ax, table, colours, markers)
    if table.height <= max_labels:
        _label_points(ax, labels)
    if not labels:  # no comparison has both estimates
        ax.set_xlim(-0.1, 0.1)
        ax.set_ylim(-0.1, 0.1)
        mark_missing(ax, 0.5, 0.6, "all n/a", size=8, in_axes=True)
    if missing:
        _note_missing(ax, missing)
    _format_tradeoff_axes(ax, kinds, colours, markers)
    return fig


NOISE_METRIC_LABELS: dict[str, str] = {
    m: METRIC_LABELS[m] for m in ("ece", "auroc_pooled", "auroc_per_response", "prr")
}
"""The label-noise panels, in order, with their metrics' labels."""


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
    cells = dict(table.group_by("granularity").agg(pl.col("n_cells").max()).iter_rows())
    handles = [Line2D([], [], color=colours[g], label=f"{label(g)} (n = {cells[g]} cells)") for g in grans]
    handles += [
        Line2D([], [], color="0.3", linestyle=ls, label=f"{mode} noise") for mode, ls in dashes.items()
    ]
    handles.append(Line2D([], [], color="0.3", linestyle=":", linewidth=0.9, label="expected (uniform)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=6, frameon=False)
    fig.suptitle(title)
    return fig
