"""Planted unit-level values (saltbench.analysis._planted): the closed forms, and agreement with simulated
answers scored by the scoring stage (docs/simulation.md §4.1)."""

import dataclasses
import math

import numpy as np
import polars as pl
import pytest

from saltbench.analysis import SimulatedRun, planted_values, recovery_estimates
from saltbench.analysis._planted import class_auroc, class_brier, class_ece
from saltbench.config import InferenceConfig
from saltbench.core.vocabulary import RESPONSE_STATUSES
from saltbench.inference import load_model_registry
from saltbench.inference.simulated import SimulationParams, token_probability
from saltbench.metrics import auroc, brier
from saltbench.stages.generation import generate_shard
from saltbench.stages.scoring import score_generations
from saltbench.tasks import get_task


def test_the_class_formulas_are_the_latent_model():
    params = SimulationParams(separation=1.3, calibration_shift=0.5, calibration_slope=1.5)
    counts = np.array([700.0, 0.0, 0.0, 300.0])
    assert class_auroc(counts, 1.3) == pytest.approx(0.5 * (1 + math.erf(1.3 / 2)))
    rng = np.random.default_rng(0)
    y = rng.random(400_000) < 0.7
    p = token_probability(params, rng.standard_normal(y.size) + 1.3 * y)
    assert class_brier(counts, params, 1.3, "mean_probability") == pytest.approx(
        np.mean((p - y) ** 2), abs=2e-3
    )
    edges = np.arange(16) / 15
    bins = np.searchsorted(edges, p, side="left")
    gaps = np.bincount(bins, weights=p - y, minlength=16)[1:]
    ece = np.abs(gaps).sum() / y.size
    assert class_ece(counts, params, 1.3, "mean_probability", 15) == pytest.approx(ece, abs=3e-3)
    # a correct unit whose latent is not separated (an atom on a wrong line) ties with the wrong ones
    assert class_auroc(np.array([500.0, 500.0, 0.0, 300.0]), 1.3) == pytest.approx(
        0.5 + 0.5 * (class_auroc(counts, 1.3) - 0.5)
    )


def _scored(params: SimulationParams, frame: pl.DataFrame, folder, task: str) -> pl.DataFrame:
    """The scored units of ``params``' answers to ``frame`` (direct style)."""
    base = load_model_registry("config/models.yaml")["sim-planted"]
    spec = dataclasses.replace(base, source=dataclasses.replace(base.source, parameters=params))
    inference = InferenceConfig(max_new_tokens={"default": 4096})
    generations = generate_shard(
        frame,
        inference,
        model_name="sim",
        model_path=folder,
        spec=spec,
        style="direct",
        n_shots=None,
        progress=False,
    )
    return score_generations(generations, frame, task, reasoning=None, max_new_tokens=4096)


def _observed(units: pl.DataFrame, granularity: str) -> dict[str, float]:
    """Mean per-response precision, pooled AUROC and Brier of ``mean_probability`` at one granularity."""
    rows = units.filter(pl.col("granularity") == granularity).with_columns(
        written=pl.col("status").cast(pl.String).is_in(list(RESPONSE_STATUSES))
    )
    per = rows.group_by("sample_id").agg(
        c=(pl.col("written") & pl.col("is_correct")).sum(), r=pl.col("written").sum()
    )
    precision = per.select(
        pl.when(pl.col("r") > 0).then(pl.col("c") / pl.col("r")).otherwise(0.0)
    ).to_series()
    scored = rows.filter("written")
    y, c = scored["is_correct"].to_numpy(), scored["topk.mean_probability"].to_numpy()
    return {"precision": float(precision.mean()), "auroc": auroc(c, y), "brier": brier(c, y)}


@pytest.mark.parametrize(
    "params",
    [
        SimulationParams(seed=3, accuracy=0.85, separation=1.2, truncation_rate=0.3),
        SimulationParams(seed=4, accuracy=0.9, line_separation=2.0, truncation_rate=0.2),
    ],
    ids=["cut answers", "line latent"],
)
def test_planted_values_agree_with_scored_simulated_answers(tmp_path, params):
    frame = get_task("matmul").generate(300, seed=1, output_lengths=[9, 16])
    frame.write_parquet(tmp_path / "matmul.parquet")
    units = _scored(params, frame, tmp_path, "matmul")
    run = SimulatedRun(params={"sim": params}, styles=["direct"], datasets={"matmul": frame})
    planted = planted_values(run, replicates=500)
    value = dict(zip(planted["quantity"], planted["planted"], strict=True))
    for granularity in ("atom", "line"):
        observed = _observed(units, granularity)
        assert observed["precision"] == pytest.approx(value[f"{granularity}_precision"], abs=0.04)
        if params.line_separation is None and granularity == "line":
            assert np.isnan(value["line_auroc"])  # a row of several atoms mixes their latents
            continue
        assert observed["auroc"] == pytest.approx(value[f"{granularity}_auroc"], abs=0.04)
        assert observed["brier"] == pytest.approx(value[f"{granularity}_brier"], abs=0.03)
    if params.line_separation is not None:  # the line knows it is wrong, an atom only sees its line
        assert value["line_auroc"] > value["atom_auroc"] + 0.1


def test_a_run_at_line_granularity_compares_lines_with_lines():
    frame = get_task("logic").generate(20, seed=1)
    params = {
        "a": SimulationParams(separation=1.0),
        "b": SimulationParams(separation=2.0, line_separation=2.5),
    }
    comparisons = [("a", "direct", "b", "direct")]
    run = SimulatedRun(
        params=params,
        styles=["direct"],
        datasets={"logic": frame},
        comparisons=comparisons,
        granularity="line",
    )
    planted = planted_values(run, replicates=200)
    value = {(m, q): v for m, q, v in planted.select("model", "quantity", "planted").iter_rows()}
    assert value[("b", "line_auroc")] == pytest.approx(0.5 * (1 + math.erf(2.5 / 2)))
    assert value[("a", "line_auroc")] == pytest.approx(value[("a", "atom_auroc")])  # a logic line is one atom
    label = "a:direct→b:direct"
    assert value[(label, "rel_delta_auroc")] == pytest.approx(
        value[("b", "line_auroc")] / value[("a", "line_auroc")] - 1
    )
    assert value[(label, "delta_precision")] == pytest.approx(
        value[("b", "line_precision")] - value[("a", "line_precision")]
    )
    # the estimates are read at the same granularity, of the same function, flavour and calibration
    metrics = pl.DataFrame(
        [
            ("a", "direct", "logic", g, conf, "topk", "none", "auroc_pooled", v, v - 0.01, v + 0.01, 10, 5)
            for g, conf, v in (
                ("atom", "mean_probability", 0.1),
                ("line", "mean_probability", 0.2),
                ("line", "max_probability", 0.3),
            )
        ],
        schema=["model", "style", "task", "granularity", "confidence", "flavour", "calibration", "metric"]
        + ["value", "ci_low", "ci_high", "n_units", "n_responses"],
        orient="row",
    )
    health = pl.DataFrame(
        {"model": ["a"], "style": ["direct"], "task": ["logic"], "truncated": [0.0], "responses": [5]}
    )
    estimates = recovery_estimates(metrics, health, granularities=["line"], confidence="mean_probability")
    line = estimates.filter(pl.col("quantity") == "line_auroc")
    assert line["estimate"].to_list() == [0.2]
    assert not estimates["quantity"].str.starts_with("atom_").any()
