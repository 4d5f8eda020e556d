"""Intervention effect fits (known slopes from a synthetic logistic model) and accuracy tables."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from synthetic_tables import synthetic_interventions

from saltbench.analysis import (
    INTERVENTIONS_SCHEMA,
    POOLED,
    accuracy_by_corruption,
    accuracy_by_placement,
    accuracy_by_position,
    fit_intervention_effects,
)


@pytest.fixture(scope="module")
def interventions() -> pl.DataFrame:
    return synthetic_interventions(models=("m",), tasks=("dna", "matmul"), n_samples=30, seed=5)


@pytest.fixture(scope="module")
def effects(interventions) -> pl.DataFrame:
    return fit_intervention_effects(interventions, n_resamples=60, seed=0)


def _term(effects: pl.DataFrame, task: str, term: str) -> dict:
    return effects.filter((pl.col("task") == task) & (pl.col("term") == term)).row(0, named=True)


def test_fit_recovers_known_slope_signs(effects):
    pooled_c = _term(effects, POOLED, "corrupted_fraction")
    assert pooled_c["ci_high"] < 0  # true beta_corrupted = -2.5
    assert pooled_c["estimate"] == pytest.approx(-2.5, abs=0.6)
    assert _term(effects, POOLED, "placement_local")["estimate"] < 0  # true -0.4
    assert _term(effects, POOLED, "position_fraction")["estimate"] < 0  # true -0.6
    random = _term(effects, POOLED, "placement_random")  # true 0
    assert random["ci_low"] < 0 < random["ci_high"]
    for task in ("dna", "matmul"):
        assert _term(effects, task, "corrupted_fraction")["ci_high"] < 0


def test_fit_table_shape_and_counts(effects, interventions):
    assert effects.height == 3 * 5  # (2 tasks + pooled) x 5 terms
    pooled = _term(effects, POOLED, "intercept")
    assert pooled["n_rows"] == interventions.height and pooled["n_samples"] == 60
    assert (effects["ci_low"] <= effects["estimate"]).all()
    assert (effects["estimate"] <= effects["ci_high"]).all()


def test_linear_probability_model_has_same_signs(interventions):
    lin = fit_intervention_effects(interventions, method="linear", n_resamples=20)
    slope = _term(lin, POOLED, "corrupted_fraction")["estimate"]
    assert -1 < slope < 0  # accuracy change per unit corrupted fraction


def test_linear_fit_matches_least_squares_exactly():
    rng = np.random.default_rng(0)
    n = 200
    frame = pl.DataFrame({
        "model": "m", "task": "dna", "sample_id": [f"s{i % 20}" for i in range(n)], "n_atoms": 10,
        "position": 2, "position_fraction": rng.random(n), "n_corrupted": 1,
        "corrupted_fraction": rng.random(n),
        "placement": rng.choice(["local", "distant"], n), "next_correct": rng.random(n) < 0.5,
        "next_m_accuracy": 0.5, "next_confidence": 0.5, "tf_logprob_correct": -1.0,
    })  # fmt: skip
    fit = fit_intervention_effects(frame, method="linear", n_resamples=5, ridge=0.0)
    x = np.column_stack([np.ones(n), frame["corrupted_fraction"], frame["placement"] == "local",
                         frame["position_fraction"]]).astype(float)  # fmt: skip
    beta = np.linalg.lstsq(x, frame["next_correct"].cast(pl.Float64).to_numpy(), rcond=None)[0]
    got = fit.filter(pl.col("task") == "dna")
    est = dict(zip(got["term"], got["estimate"]))
    terms = ("intercept", "corrupted_fraction", "placement_local", "position_fraction")
    assert [est[t] for t in terms] == pytest.approx(beta.tolist(), abs=1e-9)
    assert math.isnan(est["placement_random"])  # no random rows: the term does not vary


def test_fit_with_one_sample_and_empty_input():
    one = synthetic_interventions(models=("m",), tasks=("dna",), n_samples=1, seed=1)
    fit = fit_intervention_effects(one, n_resamples=10)
    assert fit["ci_low"].is_nan().all() and fit["estimate"].is_finite().any()
    assert fit_intervention_effects(pl.DataFrame(schema=dict(INTERVENTIONS_SCHEMA))).is_empty()
    with pytest.raises(ValueError, match="method"):
        fit_intervention_effects(one, method="probit")  # type: ignore[arg-type]


def test_accuracy_tables_are_consistent(interventions):
    by_place = accuracy_by_placement(interventions)
    by_corr = accuracy_by_corruption(interventions, n_bins=4)
    by_pos = accuracy_by_position(interventions, n_bins=5)
    n_clean = interventions.filter(pl.col("placement") == "clean").height
    pooled = by_place.filter(pl.col("task") == POOLED)
    assert pooled["n"].sum() == interventions.height
    assert by_corr.filter(pl.col("task") == POOLED)["n"].sum() == interventions.height
    assert by_pos.filter(pl.col("task") == POOLED)["n"].sum() == n_clean
    assert by_corr.filter(pl.col("placement") == "clean")["bin"].unique().to_list() == [-1]
    assert by_corr["bin"].max() <= 3 and by_pos["bin"].is_between(0, 4).all()
    row = pooled.filter(pl.col("placement") == "local").row(0, named=True)
    assert row["accuracy"] == pytest.approx(row["n_correct"] / row["n"])
    assert row["ci_low"] < row["accuracy"] < row["ci_high"]
    # clean prefixes are more accurate than heavily corrupted ones (synthetic truth)
    clean_acc = pooled.filter(pl.col("placement") == "clean")["accuracy"][0]
    worst = by_corr.filter((pl.col("task") == POOLED) & (pl.col("bin") == 3))["accuracy"]
    assert (worst < clean_acc).all()


def test_bin_edges_are_open_below():
    frame = (
        synthetic_interventions(models=("m",), tasks=("dna",), n_samples=2, seed=0)
        .head(1)
        .with_columns(
            pl.lit("local").alias("placement"),
            pl.lit(2).alias("n_corrupted"),
            pl.lit(0.5).alias("corrupted_fraction"),
        )
    )
    assert accuracy_by_corruption(frame, n_bins=4)["bin"][0] == 1  # 0.5 lies in (0.25, 0.5]
