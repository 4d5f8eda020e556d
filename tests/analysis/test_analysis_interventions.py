"""Intervention effect fits (known slopes from a synthetic logistic model) and accuracy tables."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from helpers.synthetic_tables import synthetic_interventions

from saltbench.analysis import (
    FIT_STATUSES,
    INTERVENTIONS_SCHEMA,
    MIN_SAMPLES,
    accuracy_by_corruption,
    accuracy_by_placement,
    accuracy_by_position,
    distinct_interventions,
    fit_intervention_effects,
    separated,
)


@pytest.fixture(scope="module")
def interventions() -> pl.DataFrame:
    return synthetic_interventions(models=("m",), tasks=("dna", "matmul"), n_samples=60, seed=5)


@pytest.fixture(scope="module")
def effects(interventions) -> pl.DataFrame:
    return fit_intervention_effects(interventions, n_resamples=60, seed=0)


def _term(effects: pl.DataFrame, task: str, term: str) -> dict:
    return effects.filter((pl.col("task") == task) & (pl.col("term") == term)).row(0, named=True)


def test_fit_recovers_known_slope_signs(effects):
    for task in ("dna", "matmul"):
        slope = _term(effects, task, "corrupted_fraction")
        assert slope["ci_high"] < 0  # true beta_corrupted = -2.5
        assert slope["estimate"] == pytest.approx(-2.5, abs=1.0)
        random = _term(effects, task, "placement_random")  # true 0
        assert random["ci_low"] < 0 < random["ci_high"]
    assert (effects["status"] == "ok").all()


def test_fit_table_shape_and_counts(effects, interventions):
    assert effects.height == 2 * 5  # 2 tasks x 5 terms; nothing pooled over tasks
    assert set(effects["task"]) == {"dna", "matmul"}
    dna = _term(effects, "dna", "intercept")
    distinct = distinct_interventions(interventions)  # c = k - 1 enters once
    assert dna["n_rows"] == distinct.filter(pl.col("task") == "dna").height < interventions.height
    assert dna["n_samples"] == 60
    assert (effects["ci_low"] <= effects["estimate"]).all()
    assert (effects["estimate"] <= effects["ci_high"]).all()


def test_linear_probability_model_has_same_signs(interventions):
    lin = fit_intervention_effects(interventions, method="linear", n_resamples=20)
    slope = _term(lin, "dna", "corrupted_fraction")["estimate"]
    assert -1 < slope < 0  # accuracy change per unit corrupted fraction


def _frame(n: int, n_samples: int, correct: np.ndarray, corrupted: np.ndarray) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    return pl.DataFrame(
        {
            "model": "m",
            "task": "dna",
            "sample_id": [f"s{i % n_samples}" for i in range(n)],
            "n_atoms": 10,
            "position": 5,
            "position_fraction": rng.random(n),
            "n_corrupted": 1,
            "corrupted_fraction": corrupted,
            "placement": rng.choice(["local", "distant", "random"], n),
            "next_correct": correct,
            "next_m_accuracy": 0.5,
            "next_confidence": 0.5,
            "tf_logprob_correct": -1.0,
        }
    )


def test_separation_is_reported_not_estimated():
    """Every next atom after a corrupted fraction above 0.5 is wrong, every one below right: the slope's
    maximum-likelihood estimate is -infinity. No number is reported, the status says why."""
    corrupted = np.random.default_rng(1).random(120)
    fit = fit_intervention_effects(_frame(120, 20, corrupted < 0.5, corrupted), n_resamples=20)
    assert (fit["status"] == "separation").all() and fit["estimate"].is_nan().all()
    assert fit["ci_low"].is_nan().all() and fit["ci_high"].is_nan().all()
    noisy = corrupted < 0.5
    noisy[:12] = ~noisy[:12]  # 10 % exceptions: no longer separable
    ok = fit_intervention_effects(_frame(120, 20, noisy, corrupted), n_resamples=20)
    assert (ok.filter(pl.col("term") == "corrupted_fraction")["status"] == "ok").all()


def test_no_variation_and_too_few_samples_are_reported():
    corrupted = np.random.default_rng(2).random(120)
    all_right = fit_intervention_effects(_frame(120, 20, np.ones(120, bool), corrupted), n_resamples=5)
    assert (all_right["status"] == "no_variation").all() and all_right["estimate"].is_nan().all()
    few = fit_intervention_effects(_frame(120, MIN_SAMPLES - 1, corrupted < 0.7, corrupted), n_resamples=5)
    assert (few["status"] == "too_few_samples").all() and few["estimate"].is_nan().all()
    enough = fit_intervention_effects(_frame(120, MIN_SAMPLES, corrupted < 0.7, corrupted), n_resamples=5)
    assert enough["status"].is_in(["ok", "separation"]).all()
    assert set(FIT_STATUSES) >= set(all_right["status"]) | set(few["status"])


def test_separation_detector():
    x = np.column_stack([np.ones(6), [0.0, 1, 2, 3, 4, 5]])
    assert separated(x, np.array([0, 0, 0, 1, 1, 1]))  # complete
    assert separated(x, np.array([0, 0, 1, 1, 1, 1])) and separated(x[:, :1], np.ones(6))
    assert separated(np.column_stack([np.ones(4), [0.0, 1, 1, 2]]), np.array([0, 0, 1, 1]))  # quasi
    assert not separated(x, np.array([0, 1, 0, 1, 0, 1]))
    two = np.column_stack([np.ones(8), [0.0, 1, 0, 1, 0, 1, 0, 1], [0.0, 0, 1, 1, 0, 0, 1, 1]])
    assert separated(two, np.array([0, 0, 0, 1, 0, 0, 0, 1]))  # AND of two binary terms: quasi-separated
    assert not separated(two, np.array([0, 1, 1, 0, 1, 0, 0, 1]))


def test_linear_fit_matches_least_squares_exactly():
    rng = np.random.default_rng(0)
    n = 200
    frame = pl.DataFrame(
        {
            "model": "m",
            "task": "dna",
            "sample_id": [f"s{i % 20}" for i in range(n)],
            "n_atoms": 10,
            "position": 2,
            "position_fraction": rng.random(n),
            "n_corrupted": 1,
            "corrupted_fraction": rng.random(n),
            "placement": rng.choice(["local", "distant"], n),
            "next_correct": rng.random(n) < 0.5,
            "next_m_accuracy": 0.5,
            "next_confidence": 0.5,
            "tf_logprob_correct": -1.0,
        }
    )
    fit = fit_intervention_effects(frame, method="linear", n_resamples=5, ridge=0.0)
    x = np.column_stack(
        [np.ones(n), frame["corrupted_fraction"], frame["placement"] == "local", frame["position_fraction"]]
    ).astype(float)
    beta = np.linalg.lstsq(x, frame["next_correct"].cast(pl.Float64).to_numpy(), rcond=None)[0]
    got = fit.filter(pl.col("task") == "dna")
    est = dict(zip(got["term"], got["estimate"]))
    terms = ("intercept", "corrupted_fraction", "placement_local", "position_fraction")
    assert [est[t] for t in terms] == pytest.approx(beta.tolist(), abs=1e-9)
    assert math.isnan(est["placement_random"])  # no random rows: the term does not vary


def test_fit_with_one_sample_and_empty_input():
    one = synthetic_interventions(models=("m",), tasks=("dna",), n_samples=1, seed=1)
    fit = fit_intervention_effects(one, n_resamples=10)
    assert (fit["status"] == "too_few_samples").all() and fit["estimate"].is_nan().all()
    assert fit_intervention_effects(pl.DataFrame(schema=dict(INTERVENTIONS_SCHEMA))).is_empty()
    with pytest.raises(ValueError, match="method"):
        fit_intervention_effects(one, method="probit")  # type: ignore[arg-type]


def test_accuracy_tables_are_consistent(interventions):
    by_place = accuracy_by_placement(interventions)
    by_corr = accuracy_by_corruption(interventions, n_bins=4)
    by_pos = accuracy_by_position(interventions, n_bins=5)
    n_clean = interventions.filter(pl.col("placement") == "clean").height
    distinct = distinct_interventions(interventions).height
    assert (
        set(by_place["task"]) == set(by_corr["task"]) == set(by_pos["task"]) == {"dna", "matmul"}
    )  # no pool
    assert by_place["n"].sum() == distinct
    assert by_corr["n"].sum() == distinct
    assert by_pos["n"].sum() == n_clean
    assert by_corr.filter(pl.col("placement") == "clean")["bin"].unique().to_list() == [-1]
    assert by_corr["bin"].max() <= 3 and by_pos["bin"].is_between(0, 4).all()
    dna = by_place.filter(pl.col("task") == "dna")
    row = dna.filter(pl.col("placement") == "local").row(0, named=True)
    assert row["accuracy"] == pytest.approx(row["n_correct"] / row["n"])
    assert row["ci_low"] < row["accuracy"] < row["ci_high"]
    # clean prefixes are more accurate than heavily corrupted ones (synthetic truth)
    clean_acc = dna.filter(pl.col("placement") == "clean")["accuracy"][0]
    worst = by_corr.filter((pl.col("task") == "dna") & (pl.col("bin") == 3))["accuracy"]
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


def _swap(frame: pl.DataFrame, a: str, b: str) -> pl.DataFrame:
    """``frame`` with placement labels ``a`` and ``b`` exchanged."""
    label = pl.col("placement")
    swapped = pl.when(label == a).then(pl.lit(b)).when(label == b).then(pl.lit(a)).otherwise(label)
    return frame.with_columns(swapped.alias("placement"))


def test_placement_contrasts_are_paired_and_antisymmetric(interventions):
    from saltbench.analysis import placement_contrasts

    def local(frame: pl.DataFrame) -> dict:
        table = placement_contrasts(frame, n_resamples=50, seed=2)
        return table.filter((pl.col("task") == "dna") & (pl.col("placement") == "local")).row(0, named=True)

    dna = interventions.filter(pl.col("task") == "dna")
    there, back = local(dna), local(_swap(dna, "local", "distant"))
    # a prefix corrupting every atom is local only: matched pairs are the same whichever label is which
    assert there["delta_vs_distant"] == pytest.approx(-back["delta_vs_distant"], abs=1e-12)
    assert there["delta_ci_low_vs_distant"] == pytest.approx(-back["delta_ci_high_vs_distant"], abs=1e-12)
    assert there["delta_ci_high_vs_distant"] == pytest.approx(-back["delta_ci_low_vs_distant"], abs=1e-12)
    assert there["n_samples_vs_distant"] == 60
    # distant outcomes copied from the local ones: zero in every resample, because pairs are resampled whole
    keys = ["sample_id", "position", "n_corrupted"]
    copied = dna.join(
        dna.filter(pl.col("placement") == "local").select(*keys, pl.col("next_correct").alias("_local")),
        on=keys,
        how="left",
    )
    copied = copied.with_columns(
        next_correct=pl.when(pl.col("placement") == "distant")
        .then(pl.col("_local"))
        .otherwise("next_correct")
    ).drop("_local")
    same = local(copied)
    assert (same["delta_vs_distant"], same["delta_ci_low_vs_distant"], same["delta_ci_high_vs_distant"]) == (
        0.0,
        0.0,
        0.0,
    )


def test_placement_contrasts_known_values_and_thin_data(interventions):
    from saltbench.analysis import placement_contrasts

    rigged = interventions.with_columns(
        next_correct=pl.col("placement").is_in(["clean", "distant"])  # local and random always wrong
    )
    table = accuracy_by_placement(rigged, n_resamples=30, seed=1)
    local = table.filter((pl.col("task") == "matmul") & (pl.col("placement") == "local")).row(0, named=True)
    assert (local["delta_vs_distant"], local["delta_ci_low_vs_distant"], local["delta_vs_clean"]) == (
        -1,
        -1,
        -1,
    )
    distant = table.filter(pl.col("placement") == "distant")
    assert distant["delta_vs_distant"].is_nan().all() and (distant["n_samples_vs_distant"] == 0).all()
    assert (distant["delta_vs_clean"] == 0).all()
    clean = table.filter(pl.col("placement") == "clean")
    assert clean["delta_vs_clean"].is_nan().all() and (clean["n_samples_vs_clean"] == 0).all()
    thin = interventions.filter(pl.col("sample_id").is_in([f"dna-{s}" for s in range(MIN_SAMPLES - 1)]))
    few = placement_contrasts(thin, n_resamples=30).filter(pl.col("placement") == "local").row(0, named=True)
    assert math.isfinite(few["delta_vs_distant"]) and math.isnan(few["delta_ci_low_vs_distant"])
    assert few["n_samples_vs_distant"] == MIN_SAMPLES - 1
    again = accuracy_by_placement(rigged, n_resamples=30, seed=1)
    assert again.equals(table)
