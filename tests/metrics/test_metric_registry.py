"""The metric registry (saltbench.core.metric_registry, docs/extending.md §8): the built-in metrics as the
metrics stage, the contracts and the dominance analysis use them, and a plugin metric that joins all three."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from helpers.fake_plugins import env_with, fake_plugin

from saltbench.config import MetricsConfig
from saltbench.core.contracts import METRICS, ContractError
from saltbench.core.metric_registry import (
    ASPECT_METRICS,
    BUILTIN_METRICS,
    METRIC_GROUP,
    MetricSpec,
    metric_names,
    metric_spec,
)
from saltbench.metrics import auroc, ece, mean_score

TESTS = Path(__file__).resolve().parents[1]


def test_the_builtin_metrics_their_directions_aspects_and_functions():
    assert metric_names()[: len(BUILTIN_METRICS)] == (
        "precision",
        "recall",
        "ece",
        "mce",
        "brier",
        "auroc_pooled",
        "auroc_per_response",
        "prr",
        "aurc",
    )
    assert {m.name for m in BUILTIN_METRICS if m.lower_is_better} == {"ece", "mce", "brier", "aurc"}
    assert dict(ASPECT_METRICS) == {"calibration": "ece", "ranking": "auroc_pooled", "rejection": "aurc"}
    settings = MetricsConfig(n_bins=7, ece_binning="paper", prr_ties="paper")
    assert metric_spec("auroc_pooled").bind(settings) is auroc  # bare: the bootstrap's shared fast path
    assert metric_spec("precision").bind(settings) is mean_score
    bound = metric_spec("ece").bind(settings)
    assert isinstance(bound, functools.partial) and bound.func is ece
    assert bound.keywords == {"n_bins": 7, "binning": "paper"}
    assert metric_spec("prr").bind(settings).keywords == {"ties": "paper"}
    with pytest.raises(ValueError, match="unknown metric 'auroc'; known: precision, recall"):
        metric_spec("auroc")


def test_a_metric_from_a_module_name_and_the_contract_names_the_registry():
    spec = MetricSpec("x", "ranking", "higher", "saltbench.metrics:auroc", "X")
    assert spec.load() is auroc and not spec.lower_is_better
    with pytest.raises(ValueError, match="has no attribute 'nope'"):
        MetricSpec("x", "ranking", "higher", "saltbench.metrics:nope", "X").load()
    row = {
        "model": "m",
        "style": "direct",
        "task": "dna",
        "granularity": "atom",
        "confidence": None,
        "flavour": None,
        "calibration": None,
        "metric": "accuracy",
        "value": 0.5,
        "ci_low": 0.4,
        "ci_high": 0.6,
        "n_units": 3,
        "n_responses": 1,
    }
    frame = pl.DataFrame([row], schema=METRICS.columns)
    with pytest.raises(ContractError, match="metric is a known metric"):
        METRICS.validate(frame, "metrics")
    METRICS.validate(frame.with_columns(metric=pl.lit("recall")), "metrics")


PLUGIN = '''
import numpy as np
from saltbench.metrics import MetricSpec


def top_half_accuracy(scores, correct):
    """Accuracy of the more confident half of the units (NaN for none)."""
    s, y = np.asarray(scores, dtype=float), np.asarray(correct, dtype=float)
    if s.size == 0:
        return float("nan")
    return float(y[np.argsort(-s, kind="stable")[: max(1, s.size // 2)]].mean())


TOP_HALF = MetricSpec("top_half_accuracy", "rejection", "higher", top_half_accuracy, "top-half accuracy")
SHADOW = MetricSpec("ece", "calibration", "higher", top_half_accuracy, "not ECE")
'''

PROBE = """
import json
import numpy as np
import polars as pl
from helpers.synthetic_tables import synthetic_units
from saltbench.analysis import dominance
from saltbench.config import MetricsConfig
from saltbench.core.metric_registry import metric_names
from saltbench.core.plugins import broken_plugins
from saltbench.core.vocabulary import RESPONSE_STATUSES
from saltbench.io import read_table, write_table
from saltbench.plotting._style import METRIC_LABELS
from saltbench.stages.metrics import compute_metrics
from saltbench.workflow.rule_support import plugin_versions

units = synthetic_units(models=("m",), styles=("direct",), tasks=("dna",), n_samples=12, seed=2)
metrics = compute_metrics(units, settings=MetricsConfig(n_bootstrap=20), seed=1)
keyed = metrics.with_columns(model=pl.lit("m"), style=pl.lit("direct"), task=pl.lit("dna"))
keyed = keyed.select("model", "style", "task", *metrics.columns)
write_table(keyed, "metrics.parquet", {"stage": "test"}, "metrics")
plugin = metrics.filter(pl.col("metric") == "top_half_accuracy")
pooled = metrics.filter(pl.col("metric") == "auroc_pooled")
scored = pl.col("status").is_in(RESPONSE_STATUSES) & pl.col("topk.mean_probability").is_finite()
atom = units.filter((pl.col("granularity") == "atom") & scored)
scores = atom["topk.mean_probability"].to_numpy()
expected = np.asarray(atom["is_correct"], dtype=float)[np.argsort(-scores, kind="stable")[: scores.size // 2]]
row = plugin.filter((pl.col("granularity") == "atom") & (pl.col("confidence") == "mean_probability")
                    & (pl.col("flavour") == "topk"))
print(json.dumps({
    "names": list(metric_names()),
    "rows": plugin.height,
    "pooled_rows": pooled.height,
    "value": row["value"][0],
    "expected": float(expected.mean()),
    "ci": [row["ci_low"][0], row["ci_high"][0]],
    "read": read_table("metrics.parquet", "metrics").height == keyed.height,
    "dominance": sorted(set(dominance(keyed)["metric"])),
    "label": METRIC_LABELS["top_half_accuracy"],
    "broken": {name: str(error) for name, error in broken_plugins("saltbench.metrics").items()},
    "plugins": plugin_versions(metrics=True),
}))
"""


def test_a_metric_plugin_joins_the_metrics_table_its_contract_labels_and_provenance(tmp_path):
    """An installed metric is computed for every confidence function, flavour and granularity beside the
    ranking metrics, passes the metrics contract, gets its label, and is part of the metrics jobs'
    ``plugins`` parameter; one that reuses a built-in name is left out, named, and the rest goes on."""
    root = fake_plugin(
        tmp_path / "site",
        "saltbench-tophalf",
        "saltbench_tophalf",
        PLUGIN,
        {
            METRIC_GROUP: {
                "top_half_accuracy": "saltbench_tophalf:TOP_HALF",
                "ece": "saltbench_tophalf:SHADOW",
            }
        },
    )
    env = env_with(root)
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{TESTS}"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["names"][-1] == "top_half_accuracy" and out["names"].count("ece") == 1
    assert out["rows"] == out["pooled_rows"] > 0
    assert out["value"] == pytest.approx(out["expected"]) and out["ci"][0] <= out["value"] <= out["ci"][1]
    assert out["read"] and out["dominance"] == ["aurc", "auroc_pooled", "ece"]
    assert out["label"] == "top-half accuracy"
    assert "reuses the name of a built-in metric" in out["broken"]["ece"]
    assert out["plugins"].startswith("metric top_half_accuracy: saltbench-tophalf 0.1, source ")
    assert "metric 'ece' left out" in proc.stderr
