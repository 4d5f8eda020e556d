"""Every figure renders — on realistic synthetic data, a single model, all-NaN metrics and empty tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib as mpl
import polars as pl
import pytest
from helpers.synthetic_tables import (
    synthetic_interventions,
    synthetic_metrics,
    synthetic_train_log,
    synthetic_units,
)
from matplotlib.figure import Figure

from saltbench.analysis import (
    accuracy_by_corruption,
    accuracy_by_position,
    accuracy_by_task,
    comparisons,
    dominance,
    frontier,
    generation_health,
    granularity_table,
    label_noise_sensitivity,
    model_pairs,
    reasoning_tradeoff,
    rejection_table,
    reliability_table,
)
from saltbench.core.contracts import TABLES
from saltbench.io import CorruptFileError, write_table
from saltbench.plotting import FIGURE_TABLES, FIGURES, empty_figure, read_figure_input, render, save_figure
from saltbench.plotting._style import TASK_LABELS

TASKS = ("dna", "matmul")


@dataclass(frozen=True)
class Raw:
    metrics: pl.DataFrame
    units: pl.DataFrame
    interventions: pl.DataFrame
    train_log: pl.DataFrame


def _raw(models: tuple[str, ...]) -> Raw:
    return Raw(
        synthetic_metrics(models=models, tasks=TASKS, seed=1),
        synthetic_units(models=models, styles=("direct",), tasks=TASKS, n_samples=8, seed=1),
        synthetic_interventions(models=models, tasks=TASKS, n_samples=4, seed=1),
        synthetic_train_log(models=models, steps=60),
    )


def _nan(raw: Raw) -> Raw:
    scores = [c for c in raw.units.columns if "." in c]
    return Raw(
        raw.metrics.with_columns(pl.lit(float("nan")).alias(c) for c in ("value", "ci_low", "ci_high")),
        raw.units.with_columns(pl.lit(float("nan")).alias(c) for c in scores),
        raw.interventions.with_columns(pl.lit(None, dtype=pl.Boolean).alias("next_correct")),
        raw.train_log.with_columns(pl.lit(float("nan")).alias("loss")),
    )


def _empty(raw: Raw) -> Raw:
    return Raw(raw.metrics.head(0), raw.units.head(0), raw.interventions.head(0), raw.train_log.head(0))


def _tradeoff(m: pl.DataFrame) -> pl.DataFrame:
    models = m["model"].unique(maintain_order=True).to_list()
    # the second model is the reasoning variant of the first
    reg = {x: {"reasoning": i == 1} for i, x in enumerate(models)}
    if len(models) > 1:
        reg[models[1]]["pair_with"] = models[0]
    pairs = model_pairs(reg, models)
    cmps = comparisons(m.select("model", "style").unique(maintain_order=True).rows(), pairs)
    if not cmps:  # keep one comparison so the NaN / empty path is exercised
        cmps = comparisons([("m", "direct"), ("m", "cot")], [])
    return reasoning_tradeoff(m, cmps, n_resamples=50)


RELIABILITY_FNS = ("mean_probability", "perplexity")


def _frontier(m: pl.DataFrame) -> pl.DataFrame:
    """The frontier of ``m`` with a draws and a second-pass estimator added (copies of mean probability's
    rows) and a cost table that gives them extra tokens."""
    copy = (pl.col("confidence") == "mean_probability") & (pl.col("flavour") == "topk")
    others = [
        m.filter(copy).with_columns(pl.lit(name).alias("confidence"), pl.lit(source).alias("flavour"))
        for name, source in (("agreement", "draws"), ("verbalized", "second_pass"))
    ]
    cells = m.select("model", "style", "task").unique(maintain_order=True)
    cost = pl.concat(
        cells.with_columns(
            family=pl.lit(family),
            responses=pl.lit(10, pl.Int64),
            extra_generated_tokens=pl.lit(generated),
            extra_scored_tokens=pl.lit(scored),
        )
        for family, generated, scored in (
            ("single_pass", 0.0, 0.0),
            ("samples", 120.0, 0.0),
            ("second_pass", 6.0, 300.0),
        )
    )
    return frontier(pl.concat([m, *others]), cost)


BUILDERS: dict[str, Callable[[Raw], pl.DataFrame]] = {
    "generation_health": lambda r: generation_health(r.units),
    "accuracy_by_task": lambda r: accuracy_by_task(r.metrics),
    "dominance": lambda r: dominance(r.metrics),
    "frontier": lambda r: _frontier(r.metrics),
    "granularity_auroc": lambda r: granularity_table(r.metrics),
    "reliability_diagrams": lambda r: reliability_table(r.units, confidences=RELIABILITY_FNS),
    "rejection_curves": lambda r: rejection_table(r.units, confidences=("mean_probability", "max_entropy")),
    "interventions_propagation": lambda r: accuracy_by_corruption(r.interventions),
    "interventions_context_length": lambda r: accuracy_by_position(r.interventions),
    "reasoning_tradeoff": lambda r: _tradeoff(r.metrics),
    "training_loss": lambda r: r.train_log,
    "label_noise_sensitivity": lambda r: label_noise_sensitivity(
        r.units, epsilons=(0.0, 0.2), n_replicates=2
    ),
}

CASES: dict[str, Callable[[], Raw]] = {
    "two_models": lambda: _raw(("model-a", "model-b")),
    "single_model": lambda: _raw(("model-a",)),
    "all_nan": lambda: _nan(_raw(("model-a", "model-b"))),
    "empty": lambda: _empty(_raw(("model-a",))),
}


@pytest.fixture(scope="module")
def raws() -> dict[str, Raw]:
    return {name: make() for name, make in CASES.items()}


def test_every_figure_has_a_builder():
    assert set(BUILDERS) == set(FIGURES)


def _texts(fig: Figure) -> str:
    return " ".join(t.get_text() for t in fig.findobj(mpl.text.Text))


CASE_PARAMS = [pytest.param(c, marks=pytest.mark.slow) if c == "two_models" else c for c in CASES]


@pytest.mark.parametrize("case", CASE_PARAMS)
@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_renders(name, case, raws, tmp_path):
    table = BUILDERS[name](raws[case])
    fig = render(name, table)
    assert isinstance(fig, Figure)
    out = tmp_path / f"{name}.png"
    save_figure(fig, [out], dpi=40)
    assert out.stat().st_size > 1000
    width = fig.get_size_inches()[0]
    assert 3.0 <= width <= 7.2  # paper column .. text width
    if case in ("empty", "all_nan"):
        assert any(mark in _texts(fig) for mark in ("n/a", "no ")), "missing data must be visibly marked"


def test_missing_cells_are_marked_in_a_full_figure(raws):
    # generation-level per-response AUROC is undefined: the granularity figure writes n/a there
    fig = render("granularity_auroc", granularity_table(raws["two_models"].metrics))
    assert "n/a" in _texts(fig)


def test_plotting_does_not_change_global_style(raws):
    before = dict(mpl.rcParams)
    render("dominance", dominance(raws["two_models"].metrics))
    after = dict(mpl.rcParams)
    assert {k for k in before if before[k] != after[k]} <= {"backend"}


def test_pdf_output_is_byte_identical(raws, tmp_path: Path):
    fig = render("training_loss", raws["two_models"].train_log)
    save_figure(fig, [tmp_path / "a.pdf"])
    save_figure(fig, [tmp_path / "b.pdf"])
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()


def test_render_rejects_unknown_names_and_empty_figure_says_why():
    with pytest.raises(ValueError, match="name must be one of"):
        render("pie_chart", pl.DataFrame())
    assert "nothing here" in _texts(empty_figure("t", "nothing here"))


def test_reasoning_tradeoff_joins_labels_of_coinciding_points():
    row = {
        "kind": "style",
        "delta_precision": 0.0,
        "rel_delta_auroc": 0.0,
        "delta_precision_ci_low": 0.0,
        "delta_precision_ci_high": 0.0,
        "rel_delta_auroc_ci_low": 0.0,
        "rel_delta_auroc_ci_high": 0.0,
    }
    table = pl.DataFrame(
        [
            {**row, "label": "m@early"},
            {**row, "label": "m@final"},
            {**row, "label": "other", "delta_precision": 0.1},
        ]
    )
    texts = [t.get_text() for t in render("reasoning_tradeoff", table).findobj(mpl.text.Text)]
    assert "m@early, m@final" in texts and "other" in texts


def test_training_loss_marks_checkpoints_and_smooths(raws):
    log = raws["two_models"].train_log
    fig = render("training_loss", log, smooth=5, checkpoints={"early": 10, "final": 40})
    texts = _texts(fig)
    assert "early" in texts and "final" in texts
    ax = fig.axes[0]
    n_models = log["model"].n_unique()
    assert len(ax.lines) == 2 * n_models + 2  # raw + moving average per model, one line per checkpoint
    with pytest.raises(ValueError, match="smooth"):
        render("training_loss", log, smooth=0)


def test_propagation_has_one_panel_per_task(raws):
    table = accuracy_by_corruption(raws["two_models"].interventions)
    fig = render("interventions_propagation", table)
    titles = {ax.get_title() for ax in fig.axes if ax.axison}
    assert titles == {TASK_LABELS[t] for t in set(table["task"])}


def test_context_length_draws_one_line_per_task(raws):
    table = accuracy_by_position(raws["two_models"].interventions)
    ax = render("interventions_context_length", table).axes[0]
    labels = {line.get_label() for line in ax.lines}
    assert labels == {TASK_LABELS[t] for t in set(table["task"])}


def test_reliability_diagram_shows_the_gap_and_what_it_pools(raws):
    """Every bin's calibration gap is drawn (hatched bars between accuracy and mean confidence) and the
    figure says which models, styles, tasks, granularity and calibration it pools."""
    from saltbench.plotting import plot_reliability_diagrams

    table = reliability_table(raws["single_model"].units, confidences=RELIABILITY_FNS)
    fig = plot_reliability_diagrams(table)
    text = fig._supxlabel.get_text().replace("\n", " ")
    for word in ("atom units", "models", "styles", "tasks", "zscore_sigmoid", "topk"):
        assert word in text, text
    ax = fig.axes[0]
    first = table.filter(pl.col("confidence") == table.sort("ece")["confidence"][0])
    filled = first.filter((pl.col("n") > 0) & ((pl.col("mean_confidence") - pl.col("accuracy")).abs() > 1e-9))
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == filled.height > 0  # one gap bar per bin with units and a nonzero gap
    for patch in hatched:  # each gap spans from the bin's accuracy to its mean confidence
        y0, y1 = sorted((patch.get_y(), patch.get_y() + patch.get_height()))
        centre = patch.get_x() + patch.get_width() / 2
        row = filled.filter((pl.col("bin_low") < centre) & (pl.col("bin_high") > centre)).row(0, named=True)
        assert y0 == pytest.approx(min(row["accuracy"], row["mean_confidence"]))
        assert y1 == pytest.approx(max(row["accuracy"], row["mean_confidence"]))


@pytest.mark.parametrize("name", sorted(FIGURE_TABLES))
def test_a_figure_reads_its_own_table_and_refuses_another(raws, tmp_path, name):
    """Each figure reads its table as that table's artifact; given another table's file, the error names the
    file, the table it holds and the one the figure needs."""
    table = FIGURE_TABLES[name]
    path = tmp_path / f"{table}.parquet"
    frame = BUILDERS[name](raws["single_model"])
    write_table(frame, path, {}, TABLES[table])
    assert read_figure_input(name, [path]).equals(frame)
    other = next(f for f in sorted(FIGURE_TABLES) if FIGURE_TABLES[f] != table)
    with pytest.raises(
        CorruptFileError,
        match=rf"{table}\.parquet: holds a 'table\.{table}' table, expected 'table\.{FIGURE_TABLES[other]}'",
    ):
        read_figure_input(other, [path])


def test_reasoning_tradeoff_labels_do_not_overlap():
    """Seven comparisons crowded near the origin, as in the default run: no two labels' boxes overlap."""
    base = {
        "kind": "style",
        "delta_precision_ci_low": -0.05,
        "delta_precision_ci_high": 0.05,
        "rel_delta_auroc_ci_low": -0.1,
        "rel_delta_auroc_ci_high": 0.1,
    }
    points = [
        (-0.024, 0.004),
        (-0.022, -0.02),
        (-0.015, -0.047),
        (-0.056, -0.027),
        (-0.004, -0.744),
        (0.019, 0.06),
        (0.06, 0.038),
    ]
    labels = [
        "salt-tiny@early",
        "salt-tiny@mid",
        "salt-tiny@final",
        "salt-tiny-reason@final",
        "smollm2-135m",
        "salt-tiny@final (cot)",
        "salt-tiny@final (direct)",
    ]
    table = pl.DataFrame(
        [
            {**base, "label": name, "delta_precision": x, "rel_delta_auroc": y}
            for name, (x, y) in zip(labels, points)
        ]
    )
    fig = render("reasoning_tradeoff", table)
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else fig._get_renderer()
    fig.draw_without_rendering()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts if t.get_text() in labels]
    assert len(boxes) == len(labels)
    overlapping = [(i, j) for i in range(len(boxes)) for j in range(i) if boxes[i].overlaps(boxes[j])]
    assert overlapping == [], [(labels[i], labels[j]) for i, j in overlapping]


def test_granularity_auroc_draws_estimates_on_little_support_hollow_and_says_how_much(raws):
    """Pooled: labelled correct|incorrect units, hollow under min_units of either; per response: labelled
    with the responses holding both classes, hollow under min_units of them."""
    dna = pl.col("task") == "dna"
    table = granularity_table(raws["two_models"].metrics).with_columns(
        n_correct=pl.when(dna).then(4).otherwise(300),
        n_incorrect=pl.lit(90, pl.Int64),
        n_responses=pl.when(dna).then(40).otherwise(3),
    )
    fig = render("granularity_auroc", table, min_units=20)
    texts = _texts(fig)
    labels = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {"4|90", "300|90", "3", "40"} <= labels
    assert "no finding: a count in its label under 20" in texts
    assert "per response, responses with both classes" in texts
    points = [line for ax in fig.axes for line in ax.lines if line.get_marker() in ("o", "s", "D")]
    hollow = [p for p in points if p.get_markerfacecolor() == "white"]
    defined = table.filter(pl.col("mean").is_finite())
    assert len(points) == defined.height
    pooled_dna = dna & (pl.col("metric") == "auroc_pooled")
    per_response_rest = ~dna & (pl.col("metric") == "auroc_per_response")
    assert len(hollow) == defined.filter(pooled_dna | per_response_rest).height > 0


def test_granularity_auroc_labels_sit_beside_their_markers_clear_of_every_whisker(raws):
    """No count label is crossed by a whisker (its own or a neighbour's)."""
    table = granularity_table(raws["two_models"].metrics).with_columns(
        n_correct=pl.lit(300, pl.Int64),
        n_incorrect=pl.lit(90, pl.Int64),
        n_responses=pl.lit(40, pl.Int64),
        q25=pl.col("median") - 0.15,
        q75=pl.col("median") + 0.15,
    )
    fig = render("granularity_auroc", table)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else fig._get_renderer()
    crossed = []
    for ax in fig.axes:
        labels = [t.get_window_extent(renderer) for t in ax.texts if t.get_text() in ("300|90", "40")]
        assert labels
        whiskers = [
            ax.transData.transform(segment)
            for collection in ax.collections
            for segment in collection.get_segments()
        ]
        assert whiskers
        for box in labels:
            for (x0, y0), (_, y1) in whiskers:
                if box.x0 <= x0 <= box.x1 and min(y0, y1) <= box.y1 and max(y0, y1) >= box.y0:
                    crossed.append((box, x0))
    assert crossed == []


def test_granularity_auroc_markers_lie_inside_their_whiskers(raws):
    """A skewed cell, whose mean lies below its inter-quartile range (one model far below the others): the
    marker is drawn at the median, inside its whisker."""
    table = granularity_table(raws["two_models"].metrics).with_columns(
        mean=pl.lit(0.2), median=pl.lit(0.62), q25=pl.lit(0.6), q75=pl.lit(0.64)
    )
    fig = render("granularity_auroc", table)
    points = [line for ax in fig.axes for line in ax.lines if line.get_marker() in ("o", "s", "D")]
    heights = {float(p.get_ydata()[0]) for p in points}
    assert points and heights == {0.62}


def test_frontier_puts_a_single_pass_at_the_marked_zero_and_one_point_per_estimator(raws):
    table = _frontier(raws["two_models"].metrics)
    fig = render("frontier", table)
    atom_auroc, atom_prr = fig.axes[0], fig.axes[3]  # rows AUROC, PRR; columns atom, line, generation
    assert atom_prr.get_xscale() == "log" and atom_prr.get_xticklabels()[0].get_text() == "0"
    zero = atom_auroc.get_xticks()[0]
    points = {}
    for line in atom_auroc.get_lines():
        for x, y in (
            zip(*line.get_data()) if line.get_marker() in ("o", "s", "^") else ()
        ):  # not the dotted line
            points.setdefault(line.get_marker(), set()).add((round(float(x), 6), round(float(y), 6)))
    atom = table.filter(pl.col("granularity") == "atom")
    assert {x for x, _ in points["o"]} == {round(zero, 6)}  # every single pass at the marked 0
    assert {x for x, _ in points["s"]} == {120.0} and {x for x, _ in points["^"]} == {306.0}
    assert sum(len(v) for v in points.values()) == atom.height
    assert "≤ " in _texts(fig) and "cells" in _texts(fig)
