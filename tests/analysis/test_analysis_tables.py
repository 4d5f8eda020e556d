"""Leaderboard, accuracy-by-task, dominance and granularity tables on hand-made metrics with known answers."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from helpers.synthetic_tables import metrics_rows, synthetic_metrics
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.analysis import (
    METRICS_SCHEMA,
    accuracy_by_task,
    combine_intervals,
    dominance,
    dominance_cells,
    granularity_table,
    leaderboard,
    wilson_interval,
)
from saltbench.core.vocabulary import GRANULARITIES


def cat(*frames: pl.DataFrame) -> pl.DataFrame:
    return pl.concat(frames)


# -- helpers -------------------------------------------------------------------------------------------


def test_combine_intervals_mean_and_normal_width():
    mean, low, high, n = combine_intervals(
        np.array([0.4, 0.6, np.nan]), np.array([0.3, 0.5, 0.0]), np.array([0.5, 0.7, 1.0])
    )
    assert n == 2 and mean == pytest.approx(0.5)
    # two independent intervals of half-width 0.1 -> mean half-width 0.1 * sqrt(2) / 2
    assert high - mean == pytest.approx(0.1 * math.sqrt(2) / 2)
    assert mean - low == pytest.approx(0.1 * math.sqrt(2) / 2)


def test_combine_intervals_clipped_to_metric_range():
    # precisions near 0 with wide intervals: the normal approximation would go below 0
    v, lo, hi = np.array([0.0, 0.01]), np.array([0.0, 0.0]), np.array([0.0, 0.05])
    assert combine_intervals(v, lo, hi)[1] < 0
    mean, low, high, _ = combine_intervals(v, lo, hi, bounds=(0.0, 1.0))
    assert low == 0.0 and high == pytest.approx(mean + 0.05 / 2 / 2)


def test_leaderboard_intervals_stay_in_metric_range():
    rows = [
        {
            "model": "m",
            "style": "direct",
            "task": t,
            "granularity": g,
            "metric": "precision",
            "confidence": None,
            "flavour": None,
            "calibration": None,
            "value": v,
            "ci_low": 0.0,
            "ci_high": hi,
            "n_units": 10,
            "n_responses": 5,
        }
        for t, v, hi in (("dna", 0.0, 0.0), ("matmul", 0.01, 0.05))
        for g in GRANULARITIES
    ]
    board = leaderboard(pl.DataFrame(rows, schema=METRICS_SCHEMA))
    assert (board["precision_atom_ci_low"] >= 0).all()


def test_combine_intervals_all_nan_and_missing_ci():
    assert combine_intervals(np.array([np.nan]), np.array([np.nan]), np.array([np.nan]))[3] == 0
    v, lo, hi = np.array([0.2, 0.4]), np.array([0.1, np.nan]), np.array([0.3, np.nan])
    mean, low, high, n = combine_intervals(v, lo, hi)
    assert mean == pytest.approx(0.3) and math.isnan(low) and math.isnan(high) and n == 2


def test_wilson_interval_reference_values():
    low, high = wilson_interval(np.array([0, 10, 5]), np.array([10, 10, 0]))
    assert low[0] == pytest.approx(0.0, abs=1e-12) and high[0] == pytest.approx(0.27753, abs=1e-4)
    assert high[1] == pytest.approx(1.0) and low[1] == pytest.approx(0.72247, abs=1e-4)
    assert math.isnan(low[2]) and math.isnan(high[2])


# -- leaderboard -----------------------------------------------------------------------------------------


def _cell(
    task: str,
    precision: float,
    ece_z: float,
    ece_platt: float,
    auc: float,
    model: str = "m",
    style: str = "direct",
) -> pl.DataFrame:
    rows = cat(
        metrics_rows([("precision", None, precision)], task=task, model=model, style=style),
        metrics_rows(
            [("precision", None, precision / 2)], task=task, model=model, style=style, granularity="line"
        ),
        metrics_rows(
            [
                ("ece", "mean_probability", ece_z),
                ("auroc_pooled", "mean_probability", auc),
                ("aurc", "mean_probability", 0.3),
                ("auroc_per_response", "mean_probability", auc - 0.1),
            ],
            task=task,
            model=model,
            style=style,
        ),
        metrics_rows(
            [("ece", "mean_probability", ece_platt)], task=task, model=model, style=style, calibration="platt"
        ),
        metrics_rows([("auroc_pooled", "perplexity", 0.99)], task=task, model=model, style=style),
    )
    return cat(rows)


def test_leaderboard_means_over_tasks_and_selects_calibration():
    metrics = cat(_cell("dna", 0.4, 0.10, 0.50, 0.6), _cell("code", 0.6, 0.20, 0.70, 0.8))
    lb = leaderboard(metrics)
    assert lb.height == 1
    row = lb.row(0, named=True)
    assert row["precision_atom"] == pytest.approx(0.5)
    assert row["precision_line"] == pytest.approx(0.25)
    assert math.isnan(row["precision_generation"])
    assert row["ece"] == pytest.approx(0.15)  # zscore_sigmoid, not platt
    assert row["auroc_pooled"] == pytest.approx(0.7)  # mean_probability, not perplexity
    assert row["auroc_per_response"] == pytest.approx(0.6)
    assert row["aurc"] == pytest.approx(0.3) and "prr" not in lb.columns
    assert row["n_tasks"] == 2
    assert row["precision_atom_ci_low"] < 0.5 < row["precision_atom_ci_high"]
    platt = leaderboard(metrics, calibration="platt").row(0, named=True)
    assert platt["ece"] == pytest.approx(0.6)


def test_leaderboard_skips_nan_tasks_and_keeps_every_model_style():
    metrics = cat(
        _cell("dna", 0.4, 0.1, 0.5, 0.6),
        _cell("code", float("nan"), 0.1, 0.5, 0.6),
        _cell("dna", 0.9, 0.1, 0.5, 0.6, model="z", style="cot"),
    )
    lb = leaderboard(metrics)
    assert lb["model"].to_list() == ["m", "z"]
    first = lb.row(0, named=True)
    assert first["precision_atom"] == pytest.approx(0.4) and first["n_tasks"] == 1


def test_leaderboard_empty_and_bad_arguments():
    empty = pl.DataFrame(schema=dict(METRICS_SCHEMA))
    assert leaderboard(empty).is_empty()
    with pytest.raises(ValueError, match="confidence"):
        leaderboard(empty, confidence="mean_prob")
    with pytest.raises(ValueError, match="metrics lacks columns"):
        leaderboard(pl.DataFrame({"model": ["m"]}))


def test_accuracy_by_task_is_tidy():
    table = accuracy_by_task(synthetic_metrics(models=("a",), styles=("direct",), tasks=("dna", "code")))
    assert table.height == 2 * 3  # tasks x granularities
    assert set(table.columns) >= {"model", "style", "task", "granularity", "value", "ci_low", "ci_high"}


# -- dominance ---------------------------------------------------------------------------------------------


def test_dominance_winner_uses_metric_direction():
    metrics = cat(
        metrics_rows(
            [("ece", "mean_probability", 0.10), ("ece", "perplexity", 0.04), ("ece", "max_entropy", 0.07)]
        ),
        metrics_rows([("auroc_pooled", "mean_probability", 0.80), ("auroc_pooled", "perplexity", 0.70)]),
        metrics_rows(
            [
                ("aurc", "mean_probability", 0.20),
                ("aurc", "perplexity", float("nan")),
                ("prr", "perplexity", 0.9),
            ]
        ),
    )
    cells = dominance_cells(metrics).sort("aspect")
    by_aspect = {r["aspect"]: r for r in cells.iter_rows(named=True)}
    assert by_aspect["calibration"]["winner"] == "perplexity"  # lower ECE wins
    assert by_aspect["calibration"]["runner_up"] == "max_entropy"
    assert by_aspect["calibration"]["margin"] == pytest.approx(0.03)
    assert by_aspect["ranking"]["winner"] == "mean_probability"  # higher AUROC wins
    assert by_aspect["ranking"]["margin"] == pytest.approx(0.10)
    assert by_aspect["rejection"]["metric"] == "aurc"  # not PRR (= 2 AUROC - 1 on pooled units)
    assert by_aspect["rejection"]["winner"] == "mean_probability"  # NaN does not compete
    assert by_aspect["rejection"]["n_functions"] == 1 and math.isnan(by_aspect["rejection"]["margin"])


def test_dominance_rejection_prefers_the_lower_aurc():
    metrics = metrics_rows(
        [
            ("aurc", "mean_probability", 0.30),
            ("aurc", "perplexity", 0.25),
            ("auroc_pooled", "mean_probability", 0.6),
            ("auroc_pooled", "perplexity", 0.7),
        ]
    )
    (row,) = dominance_cells(metrics, aspects=("rejection",)).iter_rows(named=True)
    assert row["winner"] == "perplexity" and row["margin"] == pytest.approx(0.05)


def test_dominance_skips_rejection_cells_with_one_class():
    """All units wrong: AUROC undefined and every function's AURC is 1 - a tie by construction, no win."""
    one_class = metrics_rows(
        [
            ("aurc", "mean_probability", 1.0),
            ("aurc", "perplexity", 1.0),
            ("auroc_pooled", "mean_probability", float("nan")),
            ("auroc_pooled", "perplexity", float("nan")),
        ],
        task="dna",
    )
    both = metrics_rows(
        [
            ("aurc", "mean_probability", 0.4),
            ("aurc", "perplexity", 0.3),
            ("auroc_pooled", "mean_probability", 0.7),
            ("auroc_pooled", "perplexity", 0.6),
        ],
        task="code",
    )
    cells = dominance_cells(cat(one_class, both), aspects=("ranking", "rejection"))
    assert cells["task"].to_list() == ["code", "code"]
    by_aspect = {r["aspect"]: r["winner"] for r in cells.iter_rows(named=True)}
    assert by_aspect == {"ranking": "mean_probability", "rejection": "perplexity"}  # the aspects disagree


def test_dominance_summary_counts_and_tie_credit():
    def pair(task: str, mean_p: float, ppl: float) -> pl.DataFrame:
        rows = [("auroc_pooled", "mean_probability", mean_p), ("auroc_pooled", "perplexity", ppl)]
        return metrics_rows(rows, task=task)

    metrics = cat(pair("dna", 0.8, 0.7), pair("code", 0.8, 0.6), pair("logic", 0.7, 0.7))
    summary = dominance(metrics, aspects=("ranking",))
    rows = {r["confidence"]: r for r in summary.iter_rows(named=True)}
    assert rows["mean_probability"]["wins"] == pytest.approx(2.5)
    assert rows["perplexity"]["wins"] == pytest.approx(0.5)
    assert rows["mean_probability"]["n_cells"] == 3
    assert rows["mean_probability"]["win_share"] == pytest.approx(2.5 / 3)
    assert rows["mean_probability"]["mean_margin"] == pytest.approx((0.1 + 0.2 + 0.0) / 3)
    assert rows["perplexity"]["mean_rank"] == pytest.approx((2 + 2 + 1) / 3)
    assert summary["confidence"].to_list()[0] == "mean_probability"  # sorted by wins


def test_dominance_empty_input_gives_empty_tables():
    empty = pl.DataFrame(schema=dict(METRICS_SCHEMA))
    assert dominance(empty).is_empty() and dominance_cells(empty).is_empty()
    with pytest.raises(ValueError, match="aspects"):
        dominance_cells(empty, aspects=("speed",))  # type: ignore[arg-type]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_dominance_win_shares_sum_to_one(seed):
    summary = dominance(synthetic_metrics(models=("a", "b"), tasks=("dna", "code"), seed=seed))
    sums = summary.group_by(["aspect", "granularity", "flavour"]).agg(pl.col("win_share").sum())
    assert np.allclose(sums["win_share"].to_numpy(), 1.0)


# -- granularity -------------------------------------------------------------------------------------------


def test_granularity_table_summaries_and_missing_generation_per_response():
    metrics = cat(
        metrics_rows([("auroc_pooled", "mean_probability", 0.6)], model="a"),
        metrics_rows([("auroc_pooled", "mean_probability", 0.8)], model="b"),
        metrics_rows([("auroc_pooled", "mean_probability", 0.7)], model="c"),
        metrics_rows([("auroc_pooled", "mean_probability", 0.9)], model="a", granularity="generation"),
        metrics_rows(
            [("auroc_per_response", "mean_probability", float("nan"))], model="a", granularity="generation"
        ),
    )
    table = granularity_table(metrics)
    assert table.height == 1 * 1 * 3 * 2  # task x style x granularity x metric, complete grid
    atom = table.filter((pl.col("granularity") == "atom") & (pl.col("metric") == "auroc_pooled"))
    atom = atom.row(0, named=True)
    assert atom["mean"] == pytest.approx(0.7) and atom["median"] == pytest.approx(0.7)
    assert atom["q25"] == pytest.approx(0.65) and atom["q75"] == pytest.approx(0.75) and atom["n_models"] == 3
    gen = table.filter((pl.col("granularity") == "generation") & (pl.col("metric") == "auroc_per_response"))
    assert gen["n_models"][0] == 0 and math.isnan(gen["mean"][0])
    line = table.filter(pl.col("granularity") == "line")
    assert line["n_models"].to_list() == [0, 0]


def test_granularity_counts_are_the_units_the_aurocs_rank_summed_over_models_with_a_value():
    from saltbench.analysis import auroc_unit_counts, too_few_units, too_little_support

    nan = float("nan")
    units = pl.DataFrame(
        {
            "model": ["a"] * 5 + ["b"] * 3 + ["c"] * 2,
            "style": "direct",
            "task": "dna",
            "granularity": "atom",
            "sample_id": ["1", "1", "2", "2", "3", "1", "1", "2", "1", "2"],
            "status": [
                "correct",
                "incorrect",
                "redundant",
                "missing",
                "correct",
                "correct",
                "selective",
                "correct",
                "correct",
                "correct",
            ],
            "topk.mean_probability": [0.9, 0.2, 0.4, nan, nan, 0.8, 0.1, 0.7, 0.9, 0.8],
        }
    )
    counts = auroc_unit_counts(units)
    by_model = {r["model"]: (r["n_correct"], r["n_incorrect"]) for r in counts.iter_rows(named=True)}
    assert by_model == {"a": (1, 2), "b": (2, 1), "c": (2, 0)}  # missing and NaN-scored units do not count
    # a's response 1 holds both classes (1 correct, 1 incorrect), response 2 only an incorrect one; b's
    # response 1 both, response 2 only a correct one; c's responses one class each
    mixed = {
        r["model"]: (r["n_responses"], r["n_responses_mixed"], r["n_correct_mixed"])
        for r in counts.iter_rows(named=True)
    }
    assert mixed == {"a": (2, 1, 1), "b": (2, 1, 1), "c": (2, 0, 0)}
    metrics = cat(
        metrics_rows([("auroc_pooled", "mean_probability", 0.6)], model="a"),
        metrics_rows([("auroc_pooled", "mean_probability", 0.8)], model="b"),
        metrics_rows([("auroc_pooled", "mean_probability", nan)], model="c"),  # one class only: undefined
        *(metrics_rows([("auroc_per_response", "mean_probability", 1.0)], model=m) for m in "ab"),
    )
    table = granularity_table(metrics, counts=counts)
    atom = table.filter((pl.col("granularity") == "atom") & (pl.col("metric") == "auroc_pooled")).row(
        0, named=True
    )
    assert (atom["n_models"], atom["n_correct"], atom["n_incorrect"]) == (2, 3, 3)  # c's units: no value
    assert atom["n_responses"] == 4
    # the per-response AUROC rests on the responses with both classes only: one of a's, one of b's
    per_response = table.filter(
        (pl.col("granularity") == "atom") & (pl.col("metric") == "auroc_per_response")
    )
    assert per_response.select("n_correct", "n_incorrect", "n_responses").row(0) == (2, 2, 2)
    weak = table.filter(pl.col("granularity") == "atom").with_columns(weak=too_little_support(3))
    assert weak.sort("metric")["weak"].to_list() == [True, False]  # per response: 2 < 3 responses
    flagged = table.with_columns(weak=too_few_units(3)).filter(pl.col("metric") == "auroc_pooled")
    assert flagged.filter(pl.col("granularity") == "atom")["weak"].to_list() == [False]
    assert table.with_columns(weak=too_few_units(4))["weak"][0] is True
    assert granularity_table(metrics)["n_correct"].is_null().all()  # not counted: null, not 0


def _units_of(models, scores, labels, prompts, granularity="atom"):
    """A units table of one task and style: one model per entry of ``models``, per unit its score, label and
    prompt (the same arrays for every model)."""
    return pl.concat(
        pl.DataFrame(
            {
                "model": model,
                "style": "direct",
                "task": "dna",
                "granularity": granularity,
                "sample_id": [str(p) for p in prompts],
                "status": ["correct" if y else "incorrect" for y in labels],
                "topk.mean_probability": [float(s) for s in scores],
            }
        )
        for model in models
    )


@st.composite
def _scored_prompts(draw):
    """Scores, labels and prompts of 4–10 prompts with 1–4 units each; the first unit of every other prompt
    correct and of the rest incorrect (a resample holds both classes unless it draws one parity only)."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=4, max_size=10))
    prompts = np.repeat(np.arange(len(sizes)), sizes)
    labels = np.array(draw(st.lists(st.booleans(), min_size=prompts.size, max_size=prompts.size)))
    firsts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    labels[firsts] = np.arange(len(sizes)) % 2 == 0
    scores = draw(st.lists(st.integers(0, 6), min_size=prompts.size, max_size=prompts.size))
    return np.array(scores) / 6, labels, prompts


@settings(max_examples=25, deadline=None)
@given(_scored_prompts(), _scored_prompts())
def test_granularity_delta_is_paired_and_antisymmetric(atom, line):
    from saltbench.analysis import granularity_deltas

    def delta(frames):
        table = granularity_deltas(pl.concat(frames), n_resamples=40, seed=3)
        return table.filter(pl.col("granularity") == "atom").row(0, named=True)

    scores, labels, prompts = atom
    same = [
        _units_of("ab", scores, labels, prompts),
        _units_of("ab", 2 * scores + 1, labels, prompts, "line"),
    ]
    # the same ranking at both granularities (a monotone transform of the scores): zero in every resample,
    # because both see the same resamples of the prompts
    row = delta(same)
    assert (row["delta_vs_line"], row["delta_ci_low"], row["delta_ci_high"]) == (0.0, 0.0, 0.0)
    line_scores, line_labels, line_prompts = line
    forward = [
        _units_of("ab", scores, labels, prompts),
        _units_of("ab", line_scores, line_labels, line_prompts, "line"),
    ]
    swapped = [
        _units_of("ab", scores, labels, prompts, "line"),
        _units_of("ab", line_scores, line_labels, line_prompts),
    ]
    there, back = delta(forward), delta(swapped)
    assert there["delta_vs_line"] == pytest.approx(-back["delta_vs_line"], abs=1e-12)
    assert there["delta_ci_low"] == pytest.approx(-back["delta_ci_high"], abs=1e-12)
    assert there["delta_ci_high"] == pytest.approx(-back["delta_ci_low"], abs=1e-12)


def test_granularity_delta_is_the_mean_over_models_of_the_pooled_auroc_differences():
    from saltbench.analysis import granularity_deltas
    from saltbench.metrics import auroc

    rng = np.random.default_rng(0)
    frames, expected = [], []
    for model in ("a", "b", "c"):
        differences = []
        for granularity, per_prompt in (("atom", 6), ("line", 2)):
            prompts = np.repeat(np.arange(30), per_prompt)
            labels = rng.random(prompts.size) < 0.6
            scores = rng.normal(size=prompts.size) + labels * (1.5 if granularity == "line" else 0.5)
            frames.append(_units_of([model], scores, labels, prompts, granularity))
            differences.append(auroc(scores, labels))
        expected.append(differences[0] - differences[1])
    frames.append(frames[0].head(3).with_columns(status=pl.lit("missing")))  # not a response unit: ignored
    deltas = granularity_deltas(pl.concat(frames), n_resamples=200, alpha=0.1, seed=5)
    atom = deltas.filter(pl.col("granularity") == "atom").row(0, named=True)
    assert atom["delta_vs_line"] == pytest.approx(np.mean(expected)) and atom["n_models_delta"] == 3
    assert atom["delta_ci_low"] < atom["delta_ci_high"] < 0  # line ranks clearly better here
    again = granularity_deltas(pl.concat(frames), n_resamples=200, alpha=0.1, seed=5)
    assert again.equals(deltas)  # seeded
    generation = deltas.filter(pl.col("granularity") == "generation").row(0, named=True)
    assert generation["n_models_delta"] == 0 and math.isnan(generation["delta_vs_line"])
    metrics = cat(*(metrics_rows([("auroc_pooled", "mean_probability", 0.7)], model=m) for m in "abc"))
    table = granularity_table(metrics, deltas=deltas)
    rows = table.filter(pl.col("metric") == "auroc_pooled").select("granularity", "n_models_delta").rows()
    assert rows == [("atom", 3), ("line", 0), ("generation", 0)]  # the line level is the reference


def test_granularity_delta_refuses_bad_settings():
    from saltbench.analysis import granularity_deltas

    units = _units_of("a", [0.1, 0.9], [False, True], [0, 1])
    with pytest.raises(ValueError, match="n_resamples"):
        granularity_deltas(units, n_resamples=0)
    with pytest.raises(ValueError, match="alpha"):
        granularity_deltas(units, alpha=1.0)
    with pytest.raises(ValueError, match="sample_id"):
        granularity_deltas(units.drop("sample_id"))


@settings(max_examples=30, deadline=None)
@given(_scored_prompts(), st.integers(0, 2**32 - 1))
def test_granularity_pair_counts_give_the_weighted_bootstrap_auroc(data, seed):
    """The prompts' pair counts give every resample's pooled AUROC exactly as the unit weights do (ties,
    undefined resamples and prompts never drawn included)."""
    from saltbench.analysis._granularity import _pair_auroc
    from saltbench.metrics import group_counts, weighted_auroc

    scores, labels, prompts = data
    n_prompts = int(prompts.max()) + 1
    draws = np.random.default_rng(seed).integers(0, n_prompts, size=(40, n_prompts))
    counts = group_counts(draws, n_prompts)
    y = labels.astype(np.float64)
    expected = weighted_auroc(scores, y, prompts, counts)
    np.testing.assert_allclose(_pair_auroc(scores, y, prompts, counts), expected, rtol=0, atol=1e-12)


def test_leaderboard_reads_an_estimator_with_a_source_of_its_own_whatever_the_flavour():
    """CCP is scored on the top-k only and the draws' agreement in its own source: asked for the ``full``
    flavour, the leaderboard still finds them where the metrics stage wrote them."""
    metrics = cat(
        metrics_rows([("precision", None, 0.5)]),
        metrics_rows([("auroc_pooled", "ccp", 0.8)], flavour="topk"),
        metrics_rows([("auroc_pooled", "agreement", 0.7)], flavour="draws"),
    )
    for name, value in (("ccp", 0.8), ("agreement", 0.7)):
        row = leaderboard(metrics, confidence=name, flavour="full").row(0, named=True)
        assert row["auroc_pooled"] == pytest.approx(value)
