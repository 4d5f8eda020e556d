"""Label-noise sensitivity: the analytic expectation under uniform noise, and the table's shape."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from helpers.synthetic_tables import synthetic_units
from polars.testing import assert_frame_equal

from saltbench.analysis import (
    expected_auroc,
    flip_labels,
    label_noise_cells,
    label_noise_sensitivity,
    label_noise_summary,
)
from saltbench.metrics import auroc


def _cells(n_cells: int, n: int, share: float, shift: float, seed: int) -> pl.DataFrame:
    """Units whose score is N(shift, 1) when correct and N(0, 1) when wrong, squashed into (0, 1)."""
    rng = np.random.default_rng(seed)
    frames = []
    for c in range(n_cells):
        correct = rng.random(n) < share
        score = rng.normal(0, 1, n) + shift * correct
        frames.append(
            pl.DataFrame(
                {
                    "model": "m",
                    "style": "direct",
                    "task": f"t{c}",
                    "sample_id": [f"s{i // 20}" for i in range(n)],
                    "granularity": "atom",
                    "status": np.where(correct, "correct", "incorrect"),
                    "is_correct": correct,
                    "topk.mean_probability": 1 / (1 + np.exp(-score)),
                }
            )
        )
    return pl.concat(frames)


def test_expected_auroc_limits():
    assert expected_auroc(0.9, 0.4, 0.0) == pytest.approx(0.9)
    assert expected_auroc(0.9, 0.4, 0.5) == pytest.approx(0.5)
    values = [expected_auroc(0.85, 0.3, e) for e in (0.0, 0.1, 0.2, 0.3, 0.4)]
    assert all(a > b for a, b in zip(values, values[1:]))  # shrinks monotonically toward 1/2


@pytest.mark.parametrize("share", [0.3, 0.6])
def test_uniform_noise_matches_the_analytic_expectation(share):
    units = _cells(3, 4000, share, 1.5, seed=int(share * 10))
    table = label_noise_sensitivity(
        units,
        granularities=("atom",),
        epsilons=(0.0, 0.1, 0.2, 0.3),
        modes=("uniform",),
        n_replicates=8,
        seed=1,
    )
    for metric in ("auroc_pooled", "prr"):
        rows = table.filter(pl.col("metric") == metric).sort("epsilon")
        assert rows["value"].to_numpy() == pytest.approx(rows["expected"].to_numpy(), abs=0.012), metric
        assert (rows["ci_low"] <= rows["value"]).all() and (rows["value"] <= rows["ci_high"]).all()
    at_zero = table.filter((pl.col("epsilon") == 0.0) & pl.col("metric").is_in(["auroc_pooled", "prr"]))
    assert at_zero["value"].to_numpy() == pytest.approx(at_zero["expected"].to_numpy(), abs=1e-12)
    auc = table.filter(pl.col("metric") == "auroc_pooled").sort("epsilon")["value"].to_numpy()
    assert np.all(np.diff(auc) < 0)  # noise only ever hurts the ranking


def test_noise_free_modes_agree_and_ece_follows_its_expectation():
    """Calibrated units (correct with probability p, p uniform): ECE is ~0 without noise; uniform noise at
    rate e turns each bin's accuracy into p(1-e) + (1-p)e, so ECE -> e * E|1 - 2p| = e / 2."""
    rng = np.random.default_rng(7)
    p = rng.random(6000)
    units = (
        _cells(1, 6000, 0.5, 0.0, seed=7)
        .with_columns(pl.Series("topk.mean_probability", p), pl.Series("is_correct", rng.random(6000) < p))
        .with_columns(
            pl.when(pl.col("is_correct"))
            .then(pl.lit("correct"))
            .otherwise(pl.lit("incorrect"))
            .alias("status")
        )
    )
    table = label_noise_sensitivity(units, granularities=("atom",), epsilons=(0.0, 0.2), n_replicates=5)

    def value(mode: str, metric: str, eps: float) -> float:
        pick = (pl.col("mode") == mode) & (pl.col("metric") == metric) & (pl.col("epsilon") == eps)
        return float(table.filter(pick)["value"][0])

    assert value("uniform", "auroc_pooled", 0.0) == pytest.approx(value("confident", "auroc_pooled", 0.0))
    assert value("uniform", "ece", 0.0) < 0.03
    assert value("uniform", "ece", 0.2) == pytest.approx(0.1, abs=0.02)
    for mode in ("uniform", "confident"):
        assert value(mode, "auroc_pooled", 0.2) < value(mode, "auroc_pooled", 0.0) - 0.05


def test_flip_labels_flips_exactly_round_epsilon_n():
    rng = np.random.default_rng(0)
    correct = rng.random(101) < 0.5
    scores = rng.random(101)
    for mode in ("uniform", "confident"):
        flipped = flip_labels(correct, scores, 0.2, mode, rng)  # type: ignore[arg-type]
        assert int((flipped != correct).sum()) == 20
    many = np.stack(
        [
            flip_labels(correct, scores, 0.2, "confident", np.random.default_rng(s)) != correct
            for s in range(200)
        ]
    )
    top, bottom = np.argsort(scores)[-20:], np.argsort(scores)[:20]
    assert many[:, top].mean() > 3 * many[:, bottom].mean()  # confident noise hits the confident units
    with pytest.raises(ValueError, match="mode"):
        flip_labels(correct, scores, 0.1, "random", rng)  # type: ignore[arg-type]


def test_table_on_workflow_units_has_every_cell_and_rejects_bad_epsilons():
    units = synthetic_units(styles=("direct",), tasks=("dna", "matmul"), n_samples=12)
    table = label_noise_sensitivity(units, epsilons=(0.0, 0.1), n_replicates=3)
    assert table.height == 3 * 2 * 2 * 4  # granularities x modes x epsilons x metrics
    assert set(table["metric"]) == {"ece", "auroc_pooled", "auroc_per_response", "prr"}
    assert table.filter(pl.col("mode") == "confident")["expected"].is_nan().all()
    with pytest.raises(ValueError, match="epsilons"):
        label_noise_sensitivity(units, epsilons=(0.7,))
    assert auroc(np.array([0.1, 0.9]), np.array([False, True])) == 1.0


def test_an_estimator_of_another_source_is_read_from_its_own_column():
    """The draws' agreement is read from ``draws.agreement`` (flavour ``topk`` asked): the same values as
    ``topk.mean_probability`` give the same table."""
    units = synthetic_units(styles=("direct",), tasks=("dna",), n_samples=8)
    units = units.with_columns(pl.col("topk.mean_probability").alias("draws.agreement"))
    options = {"epsilons": (0.0, 0.2), "n_replicates": 3, "granularities": ("atom",)}
    ours = label_noise_sensitivity(units, confidence="agreement", **options)
    theirs = label_noise_sensitivity(units, confidence="mean_probability", **options)
    assert_frame_equal(ours.drop("confidence"), theirs.drop("confidence"))


def test_the_table_merged_from_per_model_parts_equals_the_table_of_all_units():
    """The workflow's split (one part per model, then a merge) gives the same rows and values as one call on
    every unit, and a model's part does not depend on which other models are computed with it."""
    units = synthetic_units(models=("a", "b", "c"), styles=("direct",), tasks=("dna", "matmul"), n_samples=8)
    options = {"epsilons": (0.0, 0.2), "n_replicates": 3, "seed": 5}
    whole = label_noise_sensitivity(units, **options)
    parts = [label_noise_cells(units.filter(pl.col("model") == m), **options) for m in ("c", "a", "b")]
    assert_frame_equal(label_noise_summary(parts), whole)
    assert_frame_equal(label_noise_summary(pl.concat(parts[::-1])), whole)
    alone = label_noise_cells(units.filter(pl.col("model") == "b"), **options)
    together = label_noise_cells(units, **options).filter(pl.col("model") == "b")
    assert_frame_equal(alone, together)
    assert (
        set(alone["model"]) == {"b"} and alone.height == 2 * 3 * 2 * 2 * 3
    )  # tasks x gran. x modes x eps x reps
    empty = label_noise_cells(units.clear(), **options)
    assert empty.is_empty() and label_noise_summary([empty]).equals(label_noise_sensitivity(units.clear()))
