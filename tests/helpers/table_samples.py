"""One frame per analysis table (:data:`saltbench.core.contracts.TABLES`), built by the function of
:mod:`saltbench.analysis` that builds it in the workflow, on synthetic upstream tables.

Three cases of inputs: realistic (two models, a reasoning pair, both styles), all-NaN scores and metrics
with null outcomes, and empty tables — the dtypes of every table must not depend on which.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from helpers.synthetic_tables import synthetic_interventions, synthetic_metrics, synthetic_units
from saltbench.analysis import (
    Comparison,
    accuracy_by_corruption,
    accuracy_by_placement,
    accuracy_by_position,
    accuracy_by_task,
    auroc_unit_counts,
    comparisons,
    dominance,
    dominance_cells,
    eligibility_table,
    estimator_cost,
    fit_intervention_effects,
    frontier,
    generation_health,
    granularity_deltas,
    granularity_table,
    label_noise_sensitivity,
    leaderboard,
    model_pairs,
    reasoning_tradeoff,
    reasoning_tradeoff_units,
    rejection_table,
    reliability_table,
)
from saltbench.core.vocabulary import GRANULARITIES

MODELS = ("toy-1b", "toy-1b-thinking")
TASKS = ("dna", "matmul")
STYLES = ("direct", "cot")


@dataclass(frozen=True)
class Inputs:
    """The upstream tables the analysis tables are built from."""

    metrics: pl.DataFrame
    units: pl.DataFrame
    interventions: pl.DataFrame


@functools.cache
def realistic(seed: int = 0) -> Inputs:
    """Two models (the second the reasoning variant of the first), both styles; metrics of every task (enough
    pairs for the task-level trade-off), units and interventions of two (cached: polars frames are
    immutable)."""
    return Inputs(
        synthetic_metrics(models=MODELS, styles=STYLES, seed=seed),  # all six tasks: task-level pairs
        synthetic_units(models=MODELS, styles=STYLES, tasks=TASKS, n_samples=10, seed=seed),
        synthetic_interventions(models=MODELS[:1], tasks=TASKS, n_samples=12, seed=seed),
    )


def all_nan(seed: int = 0) -> Inputs:
    """Every metric value and score NaN, every next-atom outcome null."""
    raw = realistic(seed)
    scores = [c for c in raw.units.columns if "." in c]
    return Inputs(
        raw.metrics.with_columns(pl.lit(float("nan")).alias(c) for c in ("value", "ci_low", "ci_high")),
        raw.units.with_columns(pl.lit(float("nan")).alias(c) for c in scores),
        raw.interventions.with_columns(pl.lit(None, dtype=pl.Boolean).alias("next_correct")),
    )


def empty(seed: int = 0) -> Inputs:
    raw = realistic(seed)
    return Inputs(raw.metrics.head(0), raw.units.head(0), raw.interventions.head(0))


CASES: Mapping[str, Callable[[], Inputs]] = {"realistic": realistic, "all_nan": all_nan, "empty": empty}


def tradeoff_comparisons() -> list[Comparison]:
    """Both comparison kinds: CoT vs direct per model, and the reasoning pair per style."""
    pairs = model_pairs({MODELS[0]: {"reasoning": False}, MODELS[1]: {"reasoning": True}}, MODELS)
    return comparisons([(m, s) for m in MODELS for s in STYLES], pairs)


def cost_sample(inputs: Inputs) -> pl.DataFrame:
    """:func:`saltbench.analysis.estimator_cost` with two draws of every response (each as long as the greedy
    answer) and a second pass of one prompt per response of the first model."""
    responses = inputs.units.unique(["model", "style", "task", "sample_id"], maintain_order=True)
    cells = responses.partition_by("model", "style", "task", as_dict=True)
    draws = {
        key: pl.concat([part.select("sample_id", "num_generated_tokens")] * 2)
        for key, part in cells.items()  # type: ignore[misc]
    }
    second = {
        key: part.select("sample_id", prompt_tokens=pl.lit(40, pl.Int32), n_tokens=pl.lit(3, pl.Int32))
        for key, part in cells.items()
        if key[0] == MODELS[0]
    }
    return estimator_cost(generation_health(inputs.units), draws, second)  # type: ignore[arg-type]


TABLE_BUILDERS: Mapping[str, Callable[[Inputs], pl.DataFrame]] = {
    "generation_health": lambda i: generation_health(i.units),
    "eligibility": lambda i: eligibility_table(
        generation_health(i.units), auroc_unit_counts(i.units), min_answered_share=0.5, min_model_units=5
    ),
    "leaderboard": lambda i: leaderboard(i.metrics),
    "accuracy_by_task": lambda i: accuracy_by_task(i.metrics),
    "dominance": lambda i: dominance(i.metrics),
    "dominance_cells": lambda i: dominance_cells(i.metrics),
    "estimator_cost": cost_sample,
    "frontier": lambda i: frontier(i.metrics, cost_sample(i)),
    "granularity": lambda i: granularity_table(i.metrics, deltas=granularity_deltas(i.units, n_resamples=20)),
    "reasoning_tradeoff": lambda i: reasoning_tradeoff(i.metrics, tradeoff_comparisons(), n_resamples=20),
    "label_noise": lambda i: label_noise_sensitivity(i.units, epsilons=(0.0, 0.2), n_replicates=2),
    "reliability": lambda i: reliability_table(i.units, granularities=GRANULARITIES, n_bins=5),
    "rejection": lambda i: rejection_table(i.units, n_points=5),
    "interventions": lambda i: fit_intervention_effects(i.interventions, n_resamples=5),
    "interventions_by_position": lambda i: accuracy_by_position(i.interventions),
    "interventions_by_corruption": lambda i: accuracy_by_corruption(i.interventions),
    "interventions_by_placement": lambda i: accuracy_by_placement(i.interventions, n_resamples=20),
    "recovery": lambda i: recovery_sample(i),
}
"""Table name → how the workflow builds it (the functions of rules/analysis.smk's scripts)."""


def recovery_sample(inputs: Inputs) -> pl.DataFrame:
    """The recovery table of the sample inputs, their models taken for simulated ones with default
    parameters (one reference per task)."""
    from saltbench.analysis import SimulatedRun, planted_values, recovery_estimates, recovery_table
    from saltbench.inference.simulated import SimulationParams

    datasets = {
        t: pl.DataFrame(
            {"reference": ["1 2 3"], "variant": [None]}, schema={"reference": pl.String, "variant": pl.String}
        )
        for t in TASKS
    }
    interventions = inputs.interventions.with_columns(  # the corrupted positions of a local placement
        corrupted_positions=pl.int_ranges(pl.col("position") - pl.col("n_corrupted"), pl.col("position"))
    )
    run = SimulatedRun(
        {m: SimulationParams() for m in MODELS},
        ["direct", "cot"],
        datasets,
        MODELS[:1],
        TASKS,
        interventions=interventions,
    )
    tradeoff = reasoning_tradeoff(inputs.metrics, tradeoff_comparisons(), n_resamples=20)
    estimates = recovery_estimates(
        inputs.metrics,
        generation_health(inputs.units),
        fit_intervention_effects(inputs.interventions, n_resamples=5),
        tradeoff,
    )
    return recovery_table(planted_values(run, replicates=50), estimates)


SAMPLE_LEVEL_TRADEOFF: Callable[[Inputs], pl.DataFrame] = lambda i: reasoning_tradeoff_units(  # noqa: E731
    i.units, tradeoff_comparisons(), n_resamples=10
)
"""The other builder of ``reasoning_tradeoff`` (config ``analysis.reasoning_level: sample``)."""
