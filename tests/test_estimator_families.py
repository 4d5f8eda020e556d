"""The one estimator registry (docs/confidence.md §Families) and what takes every family downstream of the
units: the metrics stage, dominance across families, the extra-cost table and findings §1."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from helpers.synthetic_tables import synthetic_units

from saltbench.analysis import dominance, dominance_cells, estimator_cost, findings_markdown, frontier
from saltbench.analysis._findings import fmt
from saltbench.confidence import (
    CONFIDENCE_FUNCTIONS,
    FAMILY_COSTS,
    TOKEN_FUNCTIONS,
    ConfidenceSpec,
    confidence_spec,
    ranking_scores,
    scored_columns,
)
from saltbench.confidence.registry import _check_plugin
from saltbench.config import MetricsConfig
from saltbench.core.contracts import TABLES
from saltbench.core.plugins import Plugin, PluginError
from saltbench.core.vocabulary import ESTIMATOR_FAMILIES, FLAVOURS, SOURCES
from saltbench.evaluation import CONSISTENCY_FUNCTIONS
from saltbench.stages.metrics import compute_metrics

INTERFACE = {  # the shared names of issue 44: column -> (family, higher is confident)
    "topk.ccp": ("single_pass", True),
    "trace.reasoning_tokens": ("single_pass", False),
    "draws.agreement": ("samples", True),
    "draws.entropy": ("samples", False),
    "draws.distinct": ("samples", False),
    "second_pass.verbalized": ("second_pass", True),
    "second_pass.p_true": ("second_pass", True),
}


def test_every_estimator_declares_family_source_direction_cost_and_inputs():
    assert len(CONFIDENCE_FUNCTIONS) >= 22  # 15 token functions, CCP, the trace, 3 draws, 2 second pass
    for name, spec in CONFIDENCE_FUNCTIONS.items():
        assert spec.name == name and spec.family in ESTIMATOR_FAMILIES, name
        assert spec.sources and set(spec.sources) <= set(SOURCES), name
        assert isinstance(spec.higher_is_confident, bool) and spec.formula and spec.input_text(), name
        assert spec.extra_cost == FAMILY_COSTS[spec.family] and spec.short_label(), name
    assert len(TOKEN_FUNCTIONS) == 15 and all(
        set(s.sources) <= set(FLAVOURS) for s in TOKEN_FUNCTIONS.values()
    )
    assert set(FAMILY_COSTS) == set(ESTIMATOR_FAMILIES)


def test_the_interface_columns_are_declared_with_their_family_and_direction():
    for column, (family, higher) in INTERFACE.items():
        source, name = column.split(".")
        spec = confidence_spec(name)
        assert (spec.source, spec.family, spec.higher_is_confident) == (source, family, higher), column
        assert not spec.from_tokens and name not in TOKEN_FUNCTIONS
    for name, higher in CONSISTENCY_FUNCTIONS.items():  # the draws' consistency, declared once each side
        assert confidence_spec(name).higher_is_confident is higher
    assert ranking_scores("reasoning_tokens", [10.0, 3.0]).tolist() == [-10.0, -3.0]


def test_scoring_selects_token_functions_only():
    assert scored_columns(["perplexity", "ccp", "agreement"], ["topk"]) == [("topk", "perplexity")]
    from saltbench.config.workflow import registry_defs

    names = registry_defs()["confidence_function"]["enum"]
    assert "perplexity" in names and not {"ccp", "agreement", "verbalized", "reasoning_tokens"} & set(names)


def _plugin(spec: ConfidenceSpec) -> Plugin:
    return Plugin(spec.name, "pkg", "pkg:SPEC", spec)


def test_a_plugin_may_declare_any_family_by_its_source():
    _check_plugin(
        _plugin(ConfidenceSpec("judge", True, False, "p(judge says yes)", family="samples", source="draws"))
    )
    with pytest.raises(PluginError, match="no token_score"):
        _check_plugin(_plugin(ConfidenceSpec("bare", True, False, "x")))
    with pytest.raises(PluginError, match="single_pass"):
        _check_plugin(_plugin(ConfidenceSpec("odd", True, False, "x", token_score=len, family="samples")))
    with pytest.raises(PluginError, match="source 'nowhere'"):
        _check_plugin(
            _plugin(ConfidenceSpec("lost", True, False, "x", family="second_pass", source="nowhere"))
        )
    with pytest.raises(PluginError, match="family 'magic'"):
        _check_plugin(_plugin(ConfidenceSpec("wand", True, False, "x", source="draws", family="magic")))  # type: ignore[arg-type]


def mixed_units(seed: int = 4) -> pl.DataFrame:
    """A units table with the paper's functions and hand-added columns of every other family: the draws'
    agreement follows correctness closely, the verbalized confidence loosely, the trace is NaN but at
    generation level."""
    units = synthetic_units(models=("m",), styles=("direct",), tasks=("dna",), n_samples=14, seed=seed)
    rng = np.random.default_rng(seed)
    correct = units["is_correct"].fill_null(False).to_numpy().astype(float)
    generation = (units["granularity"].cast(pl.String) == "generation").to_numpy()
    return units.with_columns(
        pl.Series("draws.agreement", np.clip(0.3 + 0.5 * correct + rng.normal(0, 0.05, correct.size), 0, 1)),
        pl.Series("draws.distinct", np.round(3 - 2 * correct + rng.normal(0, 0.5, correct.size))),
        pl.Series(
            "second_pass.verbalized", np.clip(0.5 + 0.1 * correct + rng.normal(0, 0.2, correct.size), 0, 1)
        ),
        pl.Series("trace.reasoning_tokens", np.where(generation, 50 - 20 * correct, np.nan)),
    )


def test_metrics_score_every_source_present():
    units = mixed_units()
    metrics = compute_metrics(units, flavours=("topk",), settings=MetricsConfig(n_bootstrap=0))
    pairs = set(
        metrics.filter(pl.col("confidence").is_not_null()).select("flavour", "confidence").iter_rows()
    )
    assert {("draws", "agreement"), ("draws", "distinct"), ("second_pass", "verbalized")} <= pairs
    assert ("trace", "reasoning_tokens") in pairs and not any(f == "full" for f, _ in pairs)
    trace = metrics.filter(pl.col("confidence") == "reasoning_tokens")
    assert set(trace["granularity"].to_list()) == {"generation"}  # NaN elsewhere: no rows
    auroc = metrics.filter((pl.col("metric") == "auroc_pooled") & (pl.col("granularity") == "atom"))
    value = dict(zip(auroc["confidence"], auroc["value"]))
    assert value["agreement"] > 0.95 and value["distinct"] > 0.8  # oriented: lower distinct = confident
    probabilities = metrics.filter((pl.col("confidence") == "agreement") & (pl.col("calibration") == "none"))
    assert "ece" in probabilities["metric"].to_list()  # a share in [0, 1]: its ECE without calibration


def _dominance_metrics() -> pl.DataFrame:
    metrics = compute_metrics(mixed_units(), flavours=FLAVOURS, settings=MetricsConfig(n_bootstrap=0))
    return metrics.with_columns(
        pl.lit("m").alias("model"), pl.lit("direct").alias("style"), pl.lit("dna").alias("task")
    )


def test_dominance_compares_every_family_in_each_flavour():
    metrics = _dominance_metrics()
    cells = dominance_cells(metrics, aspects=("ranking",))
    TABLES["dominance_cells"].validate(cells, "test")
    assert set(cells["flavour"]) == set(FLAVOURS)  # the draws and second pass joined both flavours' cells
    atom = cells.filter(pl.col("granularity") == "atom")
    assert atom["winner"].to_list() == ["agreement", "agreement"] and atom["winner_family"][0] == "samples"
    table = dominance(metrics, aspects=("ranking",))
    TABLES["dominance"].validate(table, "test")
    topk_atom = table.filter((pl.col("flavour") == "topk") & (pl.col("granularity") == "atom"))
    families = dict(zip(topk_atom["confidence"], topk_atom["family"]))
    assert families["agreement"] == "samples" and families["verbalized"] == "second_pass"
    assert families["mean_probability"] == "single_pass" and topk_atom["win_share"].sum() == pytest.approx(
        1.0
    )
    generation = table.filter((pl.col("flavour") == "full") & (pl.col("granularity") == "generation"))
    assert "reasoning_tokens" in generation["confidence"].to_list()


def test_estimator_cost_counts_draw_and_second_pass_tokens_per_response():
    health = pl.DataFrame(
        {"model": ["m", "m"], "style": ["direct"] * 2, "task": ["dna", "matmul"], "responses": [2, 4]}
    )
    draws = {
        ("m", "direct", "dna"): pl.DataFrame(
            {"sample_id": ["a", "a", "b"], "num_generated_tokens": [10, 12, 8]}
        )
    }
    second = {
        ("m", "direct", "matmul"): pl.DataFrame(
            {"sample_id": ["a", "b"], "prompt_tokens": [100, 60], "n_tokens": [4, 2]},
            schema_overrides={"prompt_tokens": pl.Int32, "n_tokens": pl.Int32},
        )
    }
    cost = estimator_cost(health, draws, second)
    TABLES["estimator_cost"].validate(cost, "test")
    rows = {
        (r["task"], r["family"]): (r["responses"], r["extra_generated_tokens"], r["extra_scored_tokens"])
        for r in cost.iter_rows(named=True)
    }
    assert rows == {
        ("dna", "single_pass"): (2, 0.0, 0.0),
        ("dna", "samples"): (2, 15.0, 0.0),
        ("matmul", "single_pass"): (4, 0.0, 0.0),
        ("matmul", "second_pass"): (4, 1.5, 40.0),
    }
    assert estimator_cost(health.head(0)).is_empty()


def test_findings_name_the_best_of_each_family_with_its_cost():
    metrics = _dominance_metrics()
    health = pl.DataFrame({"model": ["m"], "style": ["direct"], "task": ["dna"], "responses": [14]})
    draws = {("m", "direct", "dna"): pl.DataFrame({"sample_id": ["s"] * 4, "num_generated_tokens": [7] * 4})}
    cost = estimator_cost(health, draws)
    table = frontier(metrics, cost)
    TABLES["frontier"].validate(table, "test")
    agreement = table.filter(pl.col("confidence") == "agreement")
    assert agreement["extra_generated_tokens"].to_list() == [2.0] * 3 and agreement["extra_tokens"][0] == 2.0
    assert table.filter(pl.col("family") == "single_pass")["extra_tokens"].unique().to_list() == [0.0]
    assert table.filter(pl.col("confidence") == "verbalized")["extra_tokens"].is_nan().all()  # not measured
    assert table.filter(pl.col("confidence") == "reasoning_tokens")["granularity"].to_list() == ["generation"]
    tables = {"dominance": dominance(metrics), "frontier": table}
    text = findings_markdown(tables)
    known = {fmt(v) for t in tables.values() for c, d in t.schema.items() if d.is_float() for v in t[c]}
    assert set(re.findall(r"-?\d+\.\d{3}\b", text)) <= known  # every number of the page is in a table
    section = text.split("## 1.")[1].split("## 2.")[0]
    assert "**agreement** (samples, +2 generated, +0 scored tokens per response)" in section
    assert "By family — samples: agreement" in section and "single_pass:" in section
    assert "second_pass: verbalized" in section and "extra cost: not enough data" in section
