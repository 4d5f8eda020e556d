"""Planted unit-level values (saltbench.analysis._planted): the closed forms, and agreement with simulated
answers scored by the scoring stage (docs/simulation.md §4.1)."""

import dataclasses
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from saltbench.analysis import SimulatedRun, planted_values, recovery_estimates
from saltbench.analysis._planted import (
    agreement_auroc,
    class_auroc,
    class_brier,
    class_ece,
    discrete_auroc,
    draw_class_pmfs,
    entropy_auroc,
    p_true_auroc,
    row_geometry,
    verbalized_auroc,
)
from saltbench.config import InferenceConfig
from saltbench.core.vocabulary import RESPONSE_STATUSES
from saltbench.evaluation import EvaluateOptions, draw_consistency, parse_verbalized
from saltbench.inference import load_model_registry
from saltbench.inference.backends import load_backend
from saltbench.inference.base import DrawSettings, draw_seed
from saltbench.inference.simulated import SecondPassEffect, SimulationParams, token_probability
from saltbench.inference.simulated.draws import repeated
from saltbench.inference.simulated.second_pass import p_true_value, verbalized_text
from saltbench.metrics import auroc, brier
from saltbench.stages.generation import build_prompts, generate_shard
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


def _spec(params: SimulationParams):
    """sim-planted's registry entry with ``params``."""
    base = load_model_registry("config/models.yaml")["sim-planted"]
    return dataclasses.replace(base, source=dataclasses.replace(base.source, parameters=params))


def _model(params: SimulationParams, folder):
    """The simulated model of ``params`` answering the datasets in ``folder``."""
    return load_backend(folder, _spec(params))


def _scored(params: SimulationParams, frame: pl.DataFrame, folder, task: str) -> pl.DataFrame:
    """The scored units of ``params``' answers to ``frame`` (direct style)."""
    spec = _spec(params)
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


# -- the draws' and second pass's planted AUROC (docs/simulation.md §9–10) ---------------------------------
@given(
    st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=2, max_size=40).filter(
        lambda pairs: len({y for _, y in pairs}) == 2
    )
)
def test_the_discrete_auroc_counts_ties_half(pairs):
    scores = np.array([s for s, _ in pairs], np.float64)
    y = np.array([c for _, c in pairs])
    planted = discrete_auroc(scores, y.astype(float), (~y).astype(float))
    assert planted == pytest.approx(auroc(scores, y))


SIGNAL = {"repeat_correct": 0.8, "repeat_wrong": 0.35}


def test_the_draws_planted_auroc_is_that_of_the_simulators_repeats(tmp_path):
    """Monte Carlo from the simulator's own draws (which atoms each draw repeats), many responses: the
    pooled AUROC of the agreement k/n at atom and line level, and of the entropy at atom level."""
    frame = get_task("matmul").generate(60, seed=2, output_lengths=[9, 16])
    frame.write_parquet(tmp_path / "matmul.parquet")
    n, seeds = 5, range(40)
    rows = {
        g: [row_geometry(r.strip(), "matmul", None, g, False, False) for r in frame["reference"]]
        for g in ("atom", "line")
    }
    prompts = build_prompts(frame, "direct", None)
    units: dict[str, list[tuple[int, bool]]] = {"atom": [], "line": []}
    for seed in seeds:
        params = SimulationParams(seed=seed, accuracy=0.8, **SIGNAL)
        model = _model(params, tmp_path)
        for i, prompt in enumerate(prompts):
            plan = model.plan(prompt)
            keep = np.stack([repeated(plan, 0.8, 0.35, draw_seed(seed, d), prompt) for d in range(n)])
            for g in units:
                members = rows[g][i].members > 0
                k = (keep[:, :, None] | ~members[None]).all(axis=1).sum(axis=0)
                right = ~(~plan.correct[:, None] & members).any(axis=0)
                units[g] += list(zip(k.tolist(), right.tolist(), strict=True))
    params = SimulationParams(accuracy=0.8, **SIGNAL)
    for g, pairs in units.items():
        k, y = np.array(pairs).T
        pmfs = draw_class_pmfs(params, "matmul", "direct", rows[g], n, 4000, 1)
        assert auroc(k / n, y.astype(bool)) == pytest.approx(agreement_auroc(pmfs), abs=0.01)
        share = k / n
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = -np.nan_to_num(share * np.log(share)) - np.nan_to_num((1 - share) * np.log(1 - share))
        if g == "atom":
            assert auroc(-entropy, y.astype(bool)) == pytest.approx(entropy_auroc(pmfs), abs=0.01)


def test_the_second_pass_planted_auroc_is_that_of_the_replies():
    """Monte Carlo from the simulator's own replies: the stated confidence (rounded to its step, its
    unparsable replies left out) and P(True)."""
    params = SimulationParams(
        second_pass=SecondPassEffect(verbalized_separation=1.2, verbalized_step=10, p_true_separation=0.8)
    )
    rng = np.random.default_rng(0)
    y = rng.random(40_000) < 0.6
    stated = [parse_verbalized(verbalized_text(params, bool(c), rng)) for c in y]
    ok = np.array([s == "ok" for _, s in stated])
    values = np.array([v for v, _ in stated])
    assert 1 - ok.mean() == pytest.approx(params.second_pass.unparsable_rate, abs=0.005)
    assert auroc(values[ok], y[ok]) == pytest.approx(verbalized_auroc(params), abs=0.008)
    assert len(np.unique(values[ok])) <= 11  # steps of 10: ties
    p = np.array([p_true_value(params, bool(c), rng) for c in y])
    assert auroc(p, y) == pytest.approx(p_true_auroc(params), abs=0.008)
    assert p_true_auroc(params) == pytest.approx(0.5 * (1 + math.erf(0.8 / 2)))


def test_draws_scored_by_draw_consistency_recover_the_planted_auroc(tmp_path):
    """End to end on one task: greedy answers scored by the scoring stage, draws from the backend scored by
    draw_consistency; the observed pooled AUROC at atom, line and generation level against the planted."""
    frame = get_task("matmul").generate(200, seed=1, output_lengths=[9, 16])
    frame.write_parquet(tmp_path / "matmul.parquet")
    params = SimulationParams(seed=3, accuracy=0.8, separation=1.2, **SIGNAL)
    units = _scored(params, frame, tmp_path, "matmul").with_columns(task=pl.lit("matmul"))
    model = _model(params, tmp_path)
    prompts = build_prompts(frame, "direct", None)
    drawn = model.sample(prompts, [4096] * len(prompts), list(range(len(prompts))), DrawSettings(5))
    draws = pl.DataFrame(
        [(s, d, r.text) for s, rs in zip(frame["sample_id"], drawn, strict=True) for d, r in enumerate(rs)],
        schema={"sample_id": pl.String, "draw": pl.Int32, "text": pl.String},
        orient="row",
    )
    scored = draw_consistency(units, draws, options=EvaluateOptions(fence_rule="line"))
    estimators = {
        (g, "draws", name) for g in ("atom", "line", "generation") for name in ("agreement", "entropy")
    }
    run = SimulatedRun(
        params={"sim": params}, styles=["direct"], datasets={"matmul": frame}, draws=5, estimators=estimators
    )
    planted = planted_values(run, replicates=1000)
    value = dict(zip(planted["quantity"], planted["planted"], strict=True))
    assert np.isnan(value["line_auroc_entropy"]) and np.isnan(value["generation_auroc_entropy"])
    for g, tolerance in (("atom", 0.02), ("line", 0.03), ("generation", 0.1)):
        rows = scored.filter(
            pl.col("granularity") == g, pl.col("status").cast(pl.String).is_in(list(RESPONSE_STATUSES))
        )
        y = rows["is_correct"].to_numpy()
        observed = auroc(rows["draws.agreement"].to_numpy(), y)
        assert observed == pytest.approx(value[f"{g}_auroc_agreement"], abs=tolerance), g
    atoms = scored.filter(pl.col("granularity") == "atom", pl.col("response_unit").is_not_null())
    observed = auroc(-atoms["draws.entropy"].to_numpy(), atoms["is_correct"].to_numpy())
    assert observed == pytest.approx(value["atom_auroc_entropy"], abs=0.02)
