"""Planted values (saltbench.analysis._recovery) and the interventions' estimand."""

import dataclasses

import numpy as np
import polars as pl
import pytest

from saltbench.analysis import (
    MIN_CLASS_UNITS,
    SimulatedRun,
    distinct_interventions,
    fit_intervention_effects,
    planted_values,
    ranked_classes,
    recovery_estimates,
    recovery_table,
    scored_estimators,
)
from saltbench.analysis._interventions import population_effects
from saltbench.analysis._planted import (
    agreement_auroc,
    draw_class_pmfs,
    p_true_auroc,
    row_geometry,
    verbalized_auroc,
)
from saltbench.analysis._recovery import expected_precision, intervention_p_correct
from saltbench.inference.simulated import SimulationParams
from saltbench.tasks import get_task


def design(n_samples: int, placements: tuple[str, ...], seed: int = 0) -> pl.DataFrame:
    """Intervention rows of ``n_samples`` answers of 12 atoms: every k in 3..12, c in 0..2, each placement."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_samples):
        for k in range(3, 13):
            rows.append((f"s{s}", k, 0, "clean", []))
            for c in (1, 2):
                for placement in placements:
                    chosen = {
                        "local": list(range(k - c, k)),
                        "distant": list(range(1, c + 1)),
                        "random": sorted(rng.choice(np.arange(1, k), c, replace=False).tolist()),
                    }[placement]
                    rows.append((f"s{s}", k, c, placement, chosen))
    frame = pl.DataFrame(
        rows,
        schema=["sample_id", "position", "n_corrupted", "placement", "corrupted_positions"],
        orient="row",
    )
    return frame.with_columns(
        model=pl.lit("sim"),
        task=pl.lit("dna"),
        corrupted_fraction=pl.col("n_corrupted") / (pl.col("position") - 1),
        position_fraction=pl.col("position") / 12,
    )


PARAMS = SimulationParams(
    accuracy={"default": 0.85}, position_effect=-1.0, propagation_fraction=-1.5, propagation_local=-1.0
)


def test_without_random_placements_the_estimand_is_the_planted_process():
    frame = distinct_interventions(design(5, ("local", "distant")))
    p = intervention_p_correct(PARAMS, "dna", "direct", frame)
    effects = population_effects(frame, p, ridge=0.0)
    assert effects["corrupted_fraction"] == pytest.approx(-1.5, abs=1e-6)
    assert effects["placement_local"] == pytest.approx(-1.0, abs=1e-6)
    assert effects["position_fraction"] == pytest.approx(-1.0, abs=1e-6)
    assert effects["intercept"] == pytest.approx(PARAMS.base_logit("dna", "direct"), abs=1e-6)


def test_random_placements_move_the_estimand_and_the_fit_recovers_it():
    frame = distinct_interventions(design(300, ("random", "local", "distant")))
    p = intervention_p_correct(PARAMS, "dna", "direct", frame)
    estimand = population_effects(frame, p)
    assert (
        estimand["corrupted_fraction"] < -1.5
    )  # random placements corrupt atom k-1 in proportion to c/(k-1)
    rng = np.random.default_rng(1)
    observed = frame.with_columns(next_correct=pl.Series(rng.random(frame.height) < p))
    fit = fit_intervention_effects(observed, n_resamples=50, seed=0)
    for row in fit.iter_rows(named=True):
        assert row["status"] == "ok"
        assert row["ci_low"] <= estimand[row["term"]] <= row["ci_high"], row


def test_expected_precision_without_propagation_is_the_base_probability():
    flat = SimulationParams(
        accuracy={"default": 0.7}, position_effect=0.0, propagation_fraction=0.0, propagation_local=0.0
    )
    value = expected_precision(flat, "dna", "direct", np.array([3, 5, 5, 8]), replicates=20000, seed=0)
    assert value == pytest.approx(0.7, abs=0.005)


def test_the_recovery_table_says_what_lies_inside(tmp_path):
    datasets = {
        "dna": pl.DataFrame(
            {"reference": ["AAA CCC", "GGG"], "variant": [None, None]},
            schema={"reference": pl.String, "variant": pl.String},
        )
    }
    run = SimulatedRun(params={"sim": SimulationParams()}, styles=["direct"], datasets=datasets)
    planted = planted_values(run, replicates=200)
    unit = {f"{g}_{q}" for g in ("atom", "line") for q in ("precision", "auroc", "brier", "ece")}
    assert set(planted["quantity"]) == {"truncated_share", *unit}
    values = dict(zip(planted["quantity"], planted["planted"], strict=True))
    assert values["atom_auroc"] == pytest.approx(SimulationParams().planted_atom_auroc("direct"))
    # a line of two atoms, one latent each, and the space between them certain: not planted
    assert np.isnan(values["line_auroc"]) and np.isnan(values["line_brier"])
    assert not np.isnan(values["line_precision"])
    auroc = values["atom_auroc"]
    estimates = pl.DataFrame(
        {
            "model": ["sim"] * 3,
            "style": ["direct"] * 3,
            "task": ["dna"] * 3,
            "quantity": ["atom_auroc", "truncated_share", "line_auroc"],
            "estimate": [auroc + 0.01, 0.2, 0.8],
            "ci_low": [auroc - 0.02, 0.1, 0.7],
            "ci_high": [auroc + 0.03, 0.3, 0.9],
        }
    )
    table = recovery_table(planted, estimates)
    inside = dict(zip(table["quantity"], table["inside"], strict=True))
    assert inside["atom_auroc"] is True and inside["truncated_share"] is False
    assert inside["atom_precision"] is None  # no estimate
    assert inside["line_auroc"] is None  # an estimate, but nothing planted to compare it with
    assert table["structural"].is_nan().all()


def test_a_reasoning_model_plants_its_cuts_inside_the_thinking_and_its_trace_length():
    datasets = {
        "dna": pl.DataFrame(
            {"reference": ["AAA CCC"], "variant": [None]}, schema_overrides={"variant": pl.String}
        )
    }
    reason = SimulationParams(
        reasoning_rate=1.0, reasoning_tokens=300, reasoning_truncation_rate=0.1, truncation_rate=0.05
    )
    run = SimulatedRun(
        params={"r": reason, "plain": SimulationParams()},
        styles=["direct"],
        datasets=datasets,
        thinking={"r"},
        budgets={("r", "direct", "dna"): 2048},
    )
    planted = planted_values(run, replicates=50)
    values = {(m, q): v for m, q, v in planted.select("model", "quantity", "planted").iter_rows()}
    assert values[("r", "truncated_share")] == pytest.approx(0.1 + 0.9 * 0.05)
    assert values[("r", "reasoning_truncated_share")] == pytest.approx(0.1)
    assert values[("r", "reasoning_tokens")] == pytest.approx(300.0)
    # precision is planted for the reasoning model too: 10 % of its responses cut inside the thinking
    # score 0, 5 % of the rest are cut inside the answer
    assert values[("r", "atom_precision")] < 0.9 * values[("plain", "atom_precision")]
    assert not {q for m, q in values if m == "plain"} & {"reasoning_tokens", "reasoning_truncated_share"}
    with pytest.raises(ValueError, match="no budget for the reasoning model 'r' in direct/dna"):
        planted_values(
            SimulatedRun(params={"r": reason}, styles=["direct"], datasets=datasets, thinking={"r"})
        )


def test_intervention_rows_carry_the_structural_parameters():
    frame = design(3, ("random", "local", "distant")).with_columns(next_correct=pl.lit(True))
    datasets = {
        "dna": pl.DataFrame(
            {"reference": ["AAA"], "variant": [None]}, schema_overrides={"variant": pl.String}
        )
    }
    run = SimulatedRun(
        params={"sim": PARAMS},
        styles=["direct"],
        datasets=datasets,
        intervention_models=["sim"],
        intervention_tasks=["dna"],
        interventions=frame,
    )
    planted = planted_values(run, replicates=20).filter(pl.col("quantity").str.starts_with("intervention_"))
    structural = dict(zip(planted["quantity"], planted["structural"], strict=True))
    assert structural["intervention_corrupted_fraction"] == -1.5
    assert structural["intervention_placement_local"] == -1.0
    assert structural["intervention_position_fraction"] == -1.0
    assert structural["intervention_intercept"] == pytest.approx(PARAMS.base_logit("dna", "direct"))
    assert np.isnan(structural["intervention_placement_random"])


def _metric_rows(rows: list[tuple[str, str, str, float, float, float]]) -> pl.DataFrame:
    """A metrics table of pooled AUROC rows ``(granularity, flavour, confidence, value, low, high)``."""
    return pl.DataFrame(
        [
            ("sim", "direct", "logic", g, c, f, "none", "auroc_pooled", v, lo, hi, 10, 5)
            for g, f, c, v, lo, hi in rows
        ],
        schema=["model", "style", "task", "granularity", "confidence", "flavour", "calibration", "metric"]
        + ["value", "ci_low", "ci_high", "n_units", "n_responses"],
        orient="row",
    )


def test_the_draws_and_second_pass_rows_are_planted_and_compared():
    frame = get_task("logic").generate(20, seed=1)
    params = SimulationParams(repeat_correct=0.8, repeat_wrong=0.3)
    planted_auroc = {
        "agreement": agreement_auroc(
            draw_class_pmfs(params, "logic", "direct", _rows(frame, "atom"), 5, 400, 0)
        ),
        "verbalized": verbalized_auroc(params),
        "p_true": p_true_auroc(params),
    }
    metrics = _metric_rows(
        [
            ("atom", "draws", "agreement", 0.9, 0.85, 0.95),
            ("atom", "draws", "entropy", 0.6, 0.55, 0.65),
            ("generation", "draws", "entropy", 0.6, 0.5, 0.7),
            ("line", "second_pass", "verbalized", 0.8, 0.7, 0.9),
            ("generation", "second_pass", "p_true", 0.5, 0.4, 0.6),
            ("atom", "topk", "mean_probability", 0.8, 0.7, 0.9),  # a token function: not an estimator row
        ]
    )
    estimators = scored_estimators(metrics)
    assert ("atom", "draws", "agreement") in estimators and len(estimators) == 5
    run = SimulatedRun(
        params={"sim": params, "off": SimulationParams()},
        styles=["direct"],
        datasets={"logic": frame},
        draws=5,
        estimators=estimators,
    )
    planted = planted_values(run, replicates=400)
    value = {(m, q): v for m, q, v in planted.select("model", "quantity", "planted").iter_rows()}
    assert value[("sim", "atom_auroc_agreement")] == pytest.approx(planted_auroc["agreement"], abs=0.01)
    assert value[("sim", "line_auroc_verbalized")] == pytest.approx(planted_auroc["verbalized"])
    assert value[("sim", "generation_auroc_p_true")] == pytest.approx(planted_auroc["p_true"])
    assert not np.isnan(value[("sim", "atom_auroc_entropy")])  # an atom: two values at most
    assert np.isnan(value[("sim", "generation_auroc_entropy")])  # an answer of several atoms: not planted
    assert np.isnan(value[("off", "atom_auroc_agreement")])  # no planted sampling signal
    estimates = recovery_estimates(metrics, _health(), granularities=())
    table = recovery_table(planted, estimates).filter(pl.col("model") == "sim")
    inside = dict(zip(table["quantity"], table["inside"], strict=True))
    assert inside["atom_auroc_agreement"] == (0.85 <= value[("sim", "atom_auroc_agreement")] <= 0.95)
    assert inside["line_auroc_verbalized"] is True and inside["generation_auroc_p_true"] is False
    assert inside["generation_auroc_entropy"] is None  # an estimate, nothing planted to compare with
    # dynamic alignment: the simulated model's judgement is the strict alignment's, not planted
    dynamic = planted_values(dataclasses.replace(run, alignment="dynamic"), replicates=100)
    second = dynamic.filter(pl.col("quantity").str.contains("verbalized|p_true"))
    assert second.height == 4 and second["planted"].is_nan().all()  # two models, two kinds


def _answers(n_correct: int, n_wrong: int, task: str) -> pl.DataFrame:
    """Whole-answer units of one cell: ``n_correct`` correct and ``n_wrong`` wrong answers with an agreement
    value, one more wrong answer whose second pass was unparsable (NaN) and one missing unit."""
    n = n_correct + n_wrong + 1
    status = ["correct"] * n_correct + ["incorrect"] * (n_wrong + 1) + ["missing"]
    return pl.DataFrame(
        {
            "model": "sim",
            "style": "direct",
            "task": task,
            "granularity": "generation",
            "status": status,
            "is_correct": [s == "correct" for s in status],
            "draws.agreement": [0.8] * n + [float("nan")],
            "second_pass.verbalized": [0.9] * (n - 1) + [float("nan")] * 2,
        }
    )


def test_ranked_classes_counts_the_units_each_estimator_ranks():
    classes = ranked_classes(pl.concat([_answers(3, 5, "dna"), _answers(0, 2, "logic")]))
    counts = {
        (t, q): (c, w) for t, q, c, w in classes.select("task", "quantity", "n_correct", "n_wrong").rows()
    }
    # the agreement ranks the unparsable answer too; neither ranks the missing unit
    assert counts == {
        ("dna", "generation_auroc_agreement"): (3, 6),
        ("dna", "generation_auroc_verbalized"): (3, 5),
        ("logic", "generation_auroc_agreement"): (0, 3),
        ("logic", "generation_auroc_verbalized"): (0, 2),
    }
    # an estimator the run did not score has no rows
    assert ranked_classes(_answers(1, 1, "dna").drop("draws.agreement"))["quantity"].to_list() == [
        "generation_auroc_verbalized"
    ]


def test_a_cell_of_too_few_correct_or_wrong_units_is_not_compared():
    k = MIN_CLASS_UNITS
    cells = {"enough": (k, k - 1), "few_correct": (k - 1, k), "few_wrong": (k + 5, k - 2), "none": (0, 40)}
    units = pl.concat([_answers(c, w, task) for task, (c, w) in cells.items()])
    planted = pl.DataFrame(
        {
            "model": "sim",
            "style": "direct",
            "task": list(cells),
            "quantity": "generation_auroc_agreement",
            "planted": 0.7,
            "structural": float("nan"),
        }
    )
    estimates = planted.select("model", "style", "task", "quantity", estimate=pl.lit(0.72)).with_columns(
        ci_low=pl.lit(0.6), ci_high=pl.lit(0.8)
    )
    table = recovery_table(planted, estimates, classes=ranked_classes(units))
    inside = dict(zip(table["task"], table["inside"], strict=True))
    # "enough": k correct, k wrong (the unparsable answer is ranked too): compared, and inside
    assert inside == {"enough": True, "few_correct": None, "few_wrong": None, "none": None}
    # not compared, yet the planted value and the estimate stay in the table
    assert table["planted"].is_not_nan().all() and table["estimate"].is_not_null().all()
    # without the class counts (or a row they do not name) every interval is compared
    assert recovery_table(planted, estimates)["inside"].all()
    assert recovery_table(planted, estimates, classes=ranked_classes(units), min_class_units=0)[
        "inside"
    ].all()


def _rows(frame: pl.DataFrame, granularity: str) -> list:
    return [row_geometry(r.strip(), "logic", None, granularity, False, False) for r in frame["reference"]]


def _health() -> pl.DataFrame:
    return pl.DataFrame(
        {"model": ["sim"], "style": ["direct"], "task": ["logic"], "truncated": [0.0], "responses": [20]}
    )
