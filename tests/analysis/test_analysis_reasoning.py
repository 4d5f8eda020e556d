"""Model pairing, paired bootstrap / tests and the reasoning trade-off table."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from helpers.synthetic_tables import synthetic_metrics, synthetic_units

from saltbench.analysis import (
    METRICS_SCHEMA,
    MIN_PAIRS,
    TRADEOFF_STATUSES,
    Comparison,
    ModelPair,
    base_model,
    comparisons,
    model_pairs,
    paired_bootstrap,
    paired_test,
    reasoning_tradeoff,
    reasoning_tradeoff_units,
)

REPO = Path(__file__).resolve().parents[2]


# -- pairing -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("qwen3-8b-thinking", "qwen3-8b"),
        ("qwen3-8b", "qwen3-8b"),
        ("qwen3-4b-thinking-2507", "qwen3-4b-2507"),
        ("qwen3-4b-instruct-2507", "qwen3-4b-2507"),
        ("phi-4-reasoning", "phi-4"),
        ("salt-tiny@early", "salt-tiny@early"),
        ("Thinking", "Thinking"),
    ],
)
def test_base_model(name, base):
    assert base_model(name) == base


def test_model_pairs_on_the_paper_roster():
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())["models"]
    roster = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())["models"]
    pairs = {(p.non_reasoning, p.reasoning) for p in model_pairs(registry, roster)}
    expected = {
        ("qwen3-0.6b", "qwen3-0.6b-thinking"),
        ("qwen3-8b", "qwen3-8b-thinking"),
        ("qwen3-4b-instruct-2507", "qwen3-4b-thinking-2507"),
        ("phi-4", "phi-4-reasoning"),
        ("qwen3-30b-a3b-instruct-2507", "qwen3-30b-a3b-thinking-2507"),
    }
    assert expected <= pairs
    assert all(registry[b]["reasoning"] and not registry[a]["reasoning"] for a, b in pairs)
    # the R1 distills are paired with their base families through explicit `pair_with` keys
    assert ("qwen2.5-7b-instruct", "deepseek-r1-distill-qwen-7b") in pairs
    assert ("llama-3.1-8b-instruct", "deepseek-r1-distill-llama-8b") in pairs


def test_pair_with_overrides_and_errors():
    reg = {"llama-8b": {"reasoning": False}, "r1-llama-8b": {"reasoning": True, "pair_with": "llama-8b"}}
    assert model_pairs(reg, ["llama-8b", "r1-llama-8b"]) == [
        ModelPair("llama-8b", "llama-8b", "r1-llama-8b", "pair_with")
    ]
    with pytest.raises(ValueError, match="not in the roster"):
        model_pairs(reg, ["r1-llama-8b"])
    with pytest.raises(ValueError, match="both have reasoning"):
        model_pairs({"a": {"pair_with": "b"}, "b": {}}, ["a", "b"])


def test_ambiguous_base_is_skipped(caplog):
    reg = {"q-8b": {}, "q-8b-instruct": {}, "q-8b-thinking": {"reasoning": True}}
    assert model_pairs(reg, list(reg)) == []
    assert "pair_with" in caplog.text


def test_comparisons_enumerates_style_and_reasoning_pairs():
    pairs = [ModelPair("q", "q", "q-thinking", "base_model")]
    available = [("q", "direct"), ("q", "cot"), ("q-thinking", "direct"), ("solo", "direct")]
    got = comparisons(available, pairs)
    assert got == [
        Comparison("style", "q", "direct", "q", "cot", "q"),
        Comparison("reasoning", "q", "direct", "q-thinking", "direct", "q"),
    ]
    # a reasoning comparison is named by its pair, not its base model (two pairs may share one base)
    assert [c.label for c in got] == ["q", "q-thinking vs q (direct)"]


# -- paired bootstrap and tests ------------------------------------------------------------------------------


def test_paired_bootstrap_detects_a_known_effect_and_not_a_null_one():
    rng = np.random.default_rng(3)
    a = rng.normal(0.5, 0.1, 60)
    b = a + 0.05 + rng.normal(0, 0.02, 60)  # known effect +0.05, strongly paired
    ci = paired_bootstrap(lambda i: float(b[i].mean() - a[i].mean()), a.size, n_resamples=500, seed=1)
    assert ci.low > 0 and ci.low < 0.05 < ci.high
    null = a + rng.normal(0, 0.02, 60)
    ci0 = paired_bootstrap(lambda i: float(null[i].mean() - a[i].mean()), a.size, n_resamples=500, seed=1)
    assert ci0.low < 0 < ci0.high


def test_paired_bootstrap_is_seeded_and_stratified():
    d = np.arange(10.0)
    strata = np.repeat([0, 1], 5)
    seen = []

    def stat(i):
        seen.append(np.sort(i))
        return float(d[i].mean())

    first = paired_bootstrap(stat, 10, strata=strata, n_resamples=50, seed=7)
    assert first == paired_bootstrap(lambda i: float(d[i].mean()), 10, strata=strata, n_resamples=50, seed=7)
    # every resample keeps five draws from each stratum
    assert all((s[:5] < 5).all() and (s[5:] >= 5).all() for s in seen[1:])


def test_paired_bootstrap_edge_cases():
    empty = paired_bootstrap(lambda i: 0.0, 0)
    assert all(math.isnan(v) for v in empty)
    one = paired_bootstrap(lambda i: 0.25, 1, n_resamples=10)
    assert one == (0.25, 0.25, 0.25)
    with pytest.raises(ValueError, match="n_resamples"):
        paired_bootstrap(lambda i: 0.0, 3, n_resamples=0)
    with pytest.raises(ValueError, match="strata"):
        paired_bootstrap(lambda i: 0.0, 3, strata=[0, 1])


def test_paired_test_reference_values():
    assert paired_test([0] * 6, [1, 2, 3, 4, 5, 6]) == pytest.approx(1 / 32)
    assert paired_test([0] * 6, [1, 2, 3, 4, 5, 6], method="permutation") == pytest.approx(2 / 64)
    assert math.isnan(paired_test([1, 2], [1, 2]))  # no non-zero difference
    assert math.isnan(paired_test([np.nan], [1.0]))
    assert paired_test([0.0], [1.0]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="method"):
        paired_test([0], [1], method="t")  # type: ignore[arg-type]


# -- reasoning trade-off -----------------------------------------------------------------------------------


def test_reasoning_tradeoff_detects_cot_gain_and_auroc_loss():
    metrics = synthetic_metrics(models=("m",), cot_precision_gain=0.1, cot_auroc_change=-0.05, seed=4)
    cmps = comparisons(metrics.select("model", "style").unique().rows(), [])
    table = reasoning_tradeoff(metrics, cmps, n_resamples=400, seed=0)
    row = table.row(0, named=True)
    assert row["kind"] == "style" and row["n_pairs"] == 6 and row["level"] == "task"
    assert row["delta_precision"] == pytest.approx(row["precision_b"] - row["precision_a"])
    assert row["delta_precision_ci_low"] > 0 and row["p_precision"] == pytest.approx(1 / 32)
    assert row["rel_delta_auroc"] == pytest.approx((row["auroc_b"] - row["auroc_a"]) / row["auroc_a"])
    assert row["rel_delta_auroc_ci_high"] < 0


def test_reasoning_tradeoff_nan_safe_with_one_model_and_no_pairs():
    one_style = synthetic_metrics(models=("m",), styles=("direct",), tasks=("dna",))
    cmps = comparisons(one_style.select("model", "style").unique().rows(), [])
    assert cmps == [] and reasoning_tradeoff(one_style, cmps).is_empty()
    missing = [Comparison("style", "m", "direct", "m", "cot", "m")]
    row = reasoning_tradeoff(one_style, missing).row(0, named=True)
    assert row["n_pairs"] == 0 and math.isnan(row["delta_precision"]) and math.isnan(row["p_precision"])
    empty = reasoning_tradeoff(pl.DataFrame(schema=dict(METRICS_SCHEMA)), missing)
    assert empty.height == 1 and math.isnan(empty["rel_delta_auroc"][0])


def test_reasoning_tradeoff_units_detects_accuracy_gain():
    units = synthetic_units(
        models=("m",), tasks=("dna", "matmul"), n_samples=30, cot_accuracy_gain=0.25, seed=2
    )
    cmp = [Comparison("style", "m", "direct", "m", "cot", "m")]
    row = reasoning_tradeoff_units(units, cmp, n_resamples=100, seed=0).row(0, named=True)
    assert row["level"] == "sample" and row["n_pairs"] == 60
    assert row["delta_precision"] > 0.1 and row["delta_precision_ci_low"] > 0
    assert row["p_precision"] < 0.01
    assert row["rel_delta_auroc_ci_low"] <= row["rel_delta_auroc"] <= row["rel_delta_auroc_ci_high"]
    absent = reasoning_tradeoff_units(units, [Comparison("style", "x", "direct", "x", "cot", "x")])
    assert absent["n_pairs"][0] == 0 and math.isnan(absent["delta_precision"][0])


def test_units_level_ignores_missing_rows_but_keeps_empty_responses():
    units = synthetic_units(models=("m",), tasks=("dna",), n_samples=10, seed=3)
    cmp = [Comparison("style", "m", "direct", "m", "cot", "m")]
    base = reasoning_tradeoff_units(units, cmp, n_resamples=20).row(0, named=True)
    # a missing reference unit in every response changes nothing
    scores = [c for c in units.columns if "." in c]
    missing = units.filter(pl.col("unit_index") == 0).with_columns(
        pl.lit("missing").cast(units.schema["status"]).alias("status"),
        pl.lit(False).alias("is_correct"),
        *(pl.lit(None).alias(c) for c in scores),
    )
    padded = reasoning_tradeoff_units(pl.concat([units, missing]), cmp, n_resamples=20).row(0, named=True)
    assert padded == base
    # a cot response that produced no units at all (only missing rows) still pairs, with precision 0
    empty_response = missing.filter((pl.col("style") == "cot") & (pl.col("sample_id") == "dna-0"))
    dropped = units.filter(~((pl.col("style") == "cot") & (pl.col("sample_id") == "dna-0")))
    edited = pl.concat([dropped, empty_response])
    row = reasoning_tradeoff_units(edited, cmp, n_resamples=20).row(0, named=True)
    assert row["n_pairs"] == base["n_pairs"] and row["precision_b"] < base["precision_b"]


# -- honest estimates: thin or degenerate comparisons report a status, not a number ------------------------


def _style_comparison() -> Comparison:
    return comparisons([("model-a", "direct"), ("model-a", "cot")], [])[0]


def test_too_few_tasks_give_no_estimate_but_keep_the_means():
    """Two tasks cannot give a significant Wilcoxon test (smallest p = 0.5): no delta, interval or p-value."""
    metrics = synthetic_metrics(models=("model-a",), tasks=("dna", "matmul"), seed=1)
    row = reasoning_tradeoff(metrics, [_style_comparison()], n_resamples=50).row(0, named=True)
    assert row["n_pairs"] == 2 < MIN_PAIRS["task"]
    assert row["status_precision"] == row["status_auroc"] == "too_few_pairs"
    for key in ("delta_precision", "delta_precision_ci_low", "p_precision", "rel_delta_auroc", "p_auroc"):
        assert math.isnan(row[key]), key
    assert math.isfinite(row["precision_a"]) and math.isfinite(row["auroc_b"])  # descriptive means stay


def test_identical_conditions_and_undefined_auroc_are_named():
    metrics = synthetic_metrics(models=("model-a",), seed=2)
    same = metrics.filter(pl.col("style") == "direct")
    metrics = pl.concat([same, same.with_columns(pl.lit("cot").alias("style"))])
    row = reasoning_tradeoff(metrics, [_style_comparison()], n_resamples=50).row(0, named=True)
    assert row["status_precision"] == row["status_auroc"] == "no_variation"
    assert math.isnan(row["delta_precision"]) and math.isnan(row["p_precision"])
    no_auroc = metrics.with_columns(
        pl.when(pl.col("metric") == "auroc_pooled")
        .then(float("nan"))
        .otherwise(pl.col("value"))
        .alias("value")
    )
    row = reasoning_tradeoff(no_auroc, [_style_comparison()], n_resamples=50).row(0, named=True)
    assert row["status_auroc"] == "undefined" and math.isnan(row["rel_delta_auroc"])
    assert set(TRADEOFF_STATUSES) >= {row["status_precision"], row["status_auroc"]}


def test_ok_comparisons_keep_their_estimates():
    metrics = synthetic_metrics(models=("model-a",), seed=3)
    row = reasoning_tradeoff(metrics, [_style_comparison()], n_resamples=50).row(0, named=True)
    assert row["status_precision"] == "ok" and math.isfinite(row["delta_precision"])
    assert row["delta_precision_ci_low"] <= row["delta_precision"] <= row["delta_precision_ci_high"]


def test_auroc_needs_its_own_pairs():
    """Precision is defined on all six tasks, AUROC on three: the AUROC change has too few pairs."""
    metrics = synthetic_metrics(models=("model-a",), seed=5)
    half = pl.col("task").is_in(["dna", "code", "logic"]) & (pl.col("metric") == "auroc_pooled")
    metrics = metrics.with_columns(pl.when(half).then(float("nan")).otherwise(pl.col("value")).alias("value"))
    row = reasoning_tradeoff(metrics, [_style_comparison()], n_resamples=50).row(0, named=True)
    assert (row["n_pairs"], row["n_pairs_auroc"]) == (6, 3)
    assert row["status_precision"] == "ok" and row["status_auroc"] == "too_few_pairs"
    assert math.isnan(row["rel_delta_auroc"]) and math.isfinite(row["auroc_a"])


def test_a_comparisons_interval_does_not_depend_on_the_other_comparisons():
    """Each comparison's bootstrap is seeded by its own pair: leaving a model out (the eligibility rule,
    docs/metrics.md §10) changes no other row."""
    from helpers.synthetic_tables import synthetic_metrics

    from saltbench.analysis import comparisons, reasoning_tradeoff

    models = ("other", "m")  # "m" comes second: an index-based seed would differ
    metrics = synthetic_metrics(models=models, styles=("direct", "cot"), seed=3)
    both = reasoning_tradeoff(
        metrics, comparisons([(m, s) for m in models for s in ("direct", "cot")], []), n_resamples=50
    )
    alone = reasoning_tradeoff(metrics, comparisons([("m", "direct"), ("m", "cot")], []), n_resamples=50)
    assert both.filter(pl.col("model_a") == "m").equals(alone)
