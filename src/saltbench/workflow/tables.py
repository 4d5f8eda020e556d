"""Every analysis table, declared once: its rule's inputs, the configuration keys it reads, the function that
computes it and what it writes (docs/architecture.md §4; adding one: docs/extending.md §6).

rules/analysis.smk generates one rule ``table_{name}`` per entry of :data:`TABLE_RULES` (log
``logs/tables/{name}.log``, benchmark ``benchmarks/tables/{name}.tsv``, script
workflow_scripts/make_table.py); the default target takes :func:`target_files`; each table's contract is
:data:`saltbench.core.contracts.TABLES` (a job refuses to write a table without one) and its report caption
``report/table_{name}.rst``. A table's function gets a :class:`~saltbench.workflow.table_rules.TableJob`
(named input files, parameters) and returns its frame(s); it imports what it needs when its job runs, so
that this module, read by the Snakefile, stays cheap.

>>> [t.name for t in TABLE_OUTPUTS if t.needs == "interventions"][:2]
['interventions', 'interventions_by_position']
>>> table_rule(TABLE_RULES, "table_dominance").params
{'calibration': 'analysis.ece_calibration'}
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import TYPE_CHECKING

from saltbench.core.outputs import Derived, Needs, figure_files
from saltbench.workflow.table_rules import (
    DATA_ONLY,
    ModelParts,
    RuleInput,
    TableFrames,
    TableJob,
    TableOutput,
    TableRule,
    table_rule,
)

if TYPE_CHECKING:
    import polars as pl

    from saltbench.analysis import SimulatedRun

ALPHA = Derived(("metrics.ci_level",), lambda level: 1 - level)
"""The test level of an interval: ``1 - metrics.ci_level``."""

_CELL_COLUMNS = ("model", "style", "task", "granularity")
"""The units columns that name a cell."""
_UNITS_KEYS = (*_CELL_COLUMNS, "sample_id", "status", "is_correct")
"""The units columns the unit-level tables read besides the confidence columns."""


def generation_health_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.generation_health` of one row per response (its units repeat its columns),
    read file by file: bounded memory at paper size."""
    import polars as pl

    from saltbench.analysis import RESPONSE_COLUMNS, generation_health
    from saltbench.workflow.unit_files import iter_units

    files = iter_units(job.files("units"), RESPONSE_COLUMNS)
    responses = pl.concat(units.unique("sample_id", maintain_order=True) for units in files)
    draws = _draw_statuses(job) if job.files("draws") else None
    counts = job.params.draws  # run.draw_counts: models, n (and the scoring options with draws)
    return generation_health(
        responses,
        draws,
        n_draws=counts["n"],
        draw_models=counts["models"],
        second_pass=second_pass_replies(job.files("second_pass")),
    )


def second_pass_replies(paths: list[str]) -> pl.DataFrame | None:
    """``model, style, task, status`` of every second-pass reply of ``paths``
    (``data/second_pass/{model}/{style}/{task}.parquet``, docs/confidence.md §8); ``None`` without any."""
    import polars as pl

    from saltbench.io import read_table

    if not paths:
        return None
    parts = []
    for path in paths:
        model, style, task = path.removesuffix(".parquet").split("/")[-3:]
        status = read_table(path, "second_pass", columns=["status"])
        cell = {"model": pl.lit(model), "style": pl.lit(style), "task": pl.lit(task)}
        parts.append(status.select(**cell, status=pl.col("status")))
    return pl.concat(parts)


def _draw_statuses(job: TableJob) -> pl.DataFrame:
    """One row per draw of the draws files of input ``draws``: ``model, style, task, answer_status`` (a
    draw's status as a response's, :func:`saltbench.evaluation.response_status` with the run's scoring
    options and the model's reasoning format), read file by file."""
    import polars as pl

    from saltbench.evaluation import response_status
    from saltbench.inference import load_model_registry
    from saltbench.io import read_table

    registry = load_model_registry(job.file("registry"))
    options = job.params.draws
    parts = []
    for path in job.files("draws"):
        draws = read_table(path, "draws", ["model", "style", "task", "text", "finish_reason"])
        reasoning = registry[draws["model"][0]].reasoning_format if draws.height else None
        statuses = [
            response_status(
                text,
                reason,
                keyword_filter=options["keyword_filter"],
                reasoning=reasoning,
                fence_rule=options["fence_rule"],
            )
            for text, reason in zip(draws["text"].to_list(), draws["finish_reason"].to_list(), strict=True)
        ]
        parts.append(draws.select("model", "style", "task").with_columns(answer_status=pl.Series(statuses)))
    return pl.concat(parts)


def eligibility_cells_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.eligibility_table` of the health table and the units an AUROC of the default
    confidence ranks (counted file by file)."""
    from saltbench.analysis import auroc_unit_counts, eligibility_table
    from saltbench.core.contracts import confidence_column
    from saltbench.io import read_table
    from saltbench.workflow.unit_files import iter_units

    p = job.params
    columns = [*_CELL_COLUMNS, "sample_id", "status", confidence_column(p.flavour, p.confidence)]
    counts = auroc_unit_counts(
        iter_units(job.files("units"), columns), confidence=p.confidence, flavour=p.flavour
    )
    return eligibility_table(
        read_table(job.file("health"), "table.generation_health"),
        counts,
        min_answered_share=p.min_answered_share,
        min_model_units=p.min_model_units,
    )


def _eligibility(job: TableJob) -> pl.DataFrame:
    """The eligibility table of input ``eligibility`` (docs/metrics.md §10)."""
    from saltbench.io import read_table

    return read_table(job.file("eligibility"), "table.eligibility")


def _eligible_metrics(job: TableJob) -> pl.DataFrame:
    """The metrics rows of input ``metrics`` that enter pooled and compared estimates."""
    from saltbench.analysis import eligible_metrics

    return eligible_metrics(_metrics(job), _eligibility(job))


def _eligible_units(job: TableJob, columns: list[str]) -> Iterator[pl.DataFrame]:
    """The units files of input ``units`` (``columns``), one at a time, restricted to the eligible cells."""
    from saltbench.workflow.unit_files import iter_units

    return _eligible_cells_of(job, iter_units(job.files("units"), columns))


def _eligible_cells_of(job: TableJob, frames: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """Each of ``frames`` (rows named by model, style, task and granularity) restricted to the eligible cells
    of input ``eligibility``."""
    from saltbench.analysis import eligible_units

    return eligible_units(frames, _eligibility(job))


def _metrics(job: TableJob) -> pl.DataFrame:
    """The metrics tables of input ``metrics``, concatenated."""
    from saltbench.analysis import METRICS_SCHEMA, read_tables

    return read_tables(job.files("metrics"), METRICS_SCHEMA, "metrics")


def leaderboard_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.leaderboard` of every metrics table."""
    from saltbench.analysis import leaderboard

    p = job.params
    return leaderboard(
        _metrics(job),
        confidence=p.confidence,
        flavour=p.flavour,
        calibration=p.calibration,
        granularity=p.granularity,
        eligibility=_eligibility(job),
    )


def accuracy_by_task_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.accuracy_by_task` of every metrics table, each row marked ``eligible`` or
    not (docs/metrics.md §10): its figure pools the eligible models and draws the others hollow."""
    from saltbench.analysis import accuracy_by_task

    return accuracy_by_task(_metrics(job), eligibility=_eligibility(job))


def dominance_tables(job: TableJob) -> TableFrames:
    """:func:`saltbench.analysis.dominance` and the per-cell winners behind it (``dominance_cells``), of the
    eligible cells (docs/metrics.md §10)."""
    from saltbench.analysis import dominance, dominance_cells

    metrics, calibration = _eligible_metrics(job), job.params.calibration
    return {
        "dominance": dominance(metrics, calibration=calibration),
        "dominance_cells": dominance_cells(metrics, calibration=calibration),
    }


def _cell_frames(
    paths: Iterable[str], artifact: str | None, columns: list[str]
) -> dict[tuple[str, str, str], pl.DataFrame]:
    """``{(model, style, task): columns of the file}`` of files laid out as
    ``…/{model}/{style}/{task}.parquet``."""
    from pathlib import Path

    from saltbench.io import read_table

    frames = {}
    for path in paths:
        parts = Path(path).parts
        frames[(parts[-3], parts[-2], Path(parts[-1]).stem)] = read_table(path, artifact, columns)
    return frames


def estimator_cost_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.estimator_cost` of the health table, the draws (when
    ``inference.samples.n > 0``) and the second-pass files (when ``inference.second_pass`` is on), two or
    three columns of each read at a time."""
    from saltbench.analysis import estimator_cost
    from saltbench.io import read_table

    return estimator_cost(
        read_table(job.file("health"), "table.generation_health"),
        _cell_frames(job.files("draws"), "draws", ["sample_id", "num_generated_tokens"]),
        _cell_frames(job.files("second_pass"), None, ["sample_id", "prompt_tokens", "n_tokens"]),
    )


def frontier_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.frontier` of the eligible cells' metrics (docs/metrics.md §10) and the
    estimator-cost table."""
    from saltbench.analysis import frontier
    from saltbench.io import read_table

    cost = read_table(job.file("cost"), "table.estimator_cost")
    return frontier(_eligible_metrics(job), cost, flavour=job.params.flavour)


def granularity_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.granularity_table` of the eligible cells (docs/metrics.md §10), with the
    correct and incorrect units each AUROC rests on and the paired difference of the pooled AUROC from the
    line level's with its bootstrap interval (:func:`saltbench.analysis.granularity_deltas`), the units read
    one task × style at a time."""
    import polars as pl

    from saltbench.analysis import auroc_unit_counts, eligible_units, granularity_deltas
    from saltbench.analysis import granularity_table as table
    from saltbench.core.contracts import confidence_column
    from saltbench.workflow.unit_files import read_units, units_by_task_style

    p = job.params
    column = confidence_column(p.flavour, p.confidence)
    options = {"confidence": p.confidence, "flavour": p.flavour}
    eligibility = _eligibility(job)
    counts, deltas = [auroc_unit_counts([], **options)], []
    for paths in units_by_task_style(job.files("units")):
        read = read_units(paths, ["model", "style", "task", "granularity", "sample_id", "status", column])
        (units,) = eligible_units([read], eligibility)
        counts.append(auroc_unit_counts(units, **options))
        deltas.append(
            granularity_deltas(units, n_resamples=p.n_resamples, alpha=p.alpha, seed=p.seed, **options)
        )
    deltas_table = pl.concat(deltas) if deltas else None
    return table(_eligible_metrics(job), counts=pl.concat(counts), deltas=deltas_table, **options)


def reasoning_tradeoff_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.reasoning_tradeoff` (task level) or its sample-level form of every model run
    with both styles (CoT vs direct) and every reasoning / non-reasoning pair of the roster
    (:func:`saltbench.analysis.model_pairs`: registry key ``pair_with`` or the base-model name rule); the
    pairs go into the provenance."""
    import logging

    from saltbench.analysis import comparisons, eligible_styles, model_pairs, reasoning_tradeoff
    from saltbench.workflow.unit_files import reasoning_tradeoff_from_unit_files, registry_entries

    p = job.params
    metrics = _eligible_metrics(job)
    pairs = model_pairs(registry_entries(job.file("registry")), p.models)
    eligible = eligible_styles(_eligibility(job))
    cmps = comparisons([(m, s) for m in p.models for s in p.styles if (m, s) in eligible], pairs)
    logging.getLogger(__name__).info(
        "%d reasoning pairs, %d comparisons of eligible models (%s level)", len(pairs), len(cmps), p.level
    )
    options = {
        "confidence": p.confidence,
        "flavour": p.flavour,
        "granularity": p.granularity,
        "n_resamples": p.n_resamples,
        "alpha": p.alpha,
    }
    job.provenance["pairs"] = [pair.__dict__ for pair in pairs]
    if p.level == "sample":
        return reasoning_tradeoff_from_unit_files(job.files("units"), cmps, seed=p.seed, **options)
    return reasoning_tradeoff(metrics, cmps, seed=p.seed, **options)


def intervention_tables(job: TableJob) -> TableFrames:
    """The fitted intervention effects (:func:`saltbench.analysis.fit_intervention_effects`) and the
    next-atom accuracy by position, corrupted fraction and placement."""
    from saltbench.analysis import (
        INTERVENTIONS_SCHEMA,
        accuracy_by_corruption,
        accuracy_by_placement,
        accuracy_by_position,
        fit_intervention_effects,
        read_tables,
    )

    p = job.params
    data = read_tables(job.files("interventions"), INTERVENTIONS_SCHEMA, "interventions")
    return {
        "interventions": fit_intervention_effects(
            data, method=p.method, n_resamples=p.n_resamples, alpha=p.alpha, seed=p.seed
        ),
        "interventions_by_position": accuracy_by_position(data, n_bins=p.position_bins),
        "interventions_by_corruption": accuracy_by_corruption(data, n_bins=p.corruption_bins),
        "interventions_by_placement": accuracy_by_placement(
            data, n_resamples=p.n_resamples, alpha=p.alpha, seed=p.seed
        ),
    }


def _scored_units_columns(job: TableJob) -> tuple[list[str], list[str]]:
    """The confidence functions the run scored in the table's flavour, and the units columns to read."""
    from saltbench.confidence import scored_columns

    p = job.params
    functions = [name for _, name in scored_columns(p.functions, [p.flavour])]
    return functions, [*_UNITS_KEYS, *(f"{p.flavour}.{fn}" for fn in functions)]


def reliability_diagram_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.reliability_table` of every scored confidence function."""
    from saltbench.analysis import reliability_table
    from saltbench.core.vocabulary import GRANULARITIES

    p = job.params
    functions, columns = _scored_units_columns(job)
    return reliability_table(
        _eligible_units(job, columns),
        confidences=functions,
        flavour=p.flavour,
        granularities=GRANULARITIES,
        method=p.method,
        calibration_fraction=p.calibration_fraction,
        seed=p.seed,
        n_bins=p.n_bins,
    )


def rejection_curve_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.rejection_table` of every scored confidence function."""
    from saltbench.analysis import rejection_table

    p = job.params
    functions, columns = _scored_units_columns(job)
    return rejection_table(
        _eligible_units(job, columns), confidences=functions, flavour=p.flavour, n_points=p.n_points
    )


def label_noise_part_table(job: TableJob) -> pl.DataFrame:
    """One model's part of the label-noise table: :func:`saltbench.analysis.label_noise_cells` of its units
    (the default confidence function), read file by file."""
    from saltbench.analysis import label_noise_cells
    from saltbench.core.contracts import confidence_column
    from saltbench.workflow.unit_files import iter_units

    p = job.params
    columns = [*_UNITS_KEYS, confidence_column(p.flavour, p.confidence)]
    return label_noise_cells(
        iter_units(job.files("units"), columns),
        confidence=p.confidence,
        flavour=p.flavour,
        granularities=p.granularities,
        epsilons=p.epsilons,
        n_replicates=p.n_replicates,
        n_bins=p.n_bins,
        seed=p.seed,
    )


def label_noise_table(job: TableJob) -> pl.DataFrame:
    """:func:`saltbench.analysis.label_noise_summary` of the eligible cells (docs/metrics.md §10) of every
    model's part: the table :func:`saltbench.analysis.label_noise_sensitivity` makes of their units at once
    (a part covers every cell of its model, so that it depends on its model's files only)."""
    from saltbench.analysis import LABEL_NOISE_CELLS_SCHEMA, label_noise_summary, read_tables

    p = job.params
    cells = read_tables(job.files("parts"), LABEL_NOISE_CELLS_SCHEMA, "table_part.label_noise")
    (eligible,) = _eligible_cells_of(job, [cells])
    return label_noise_summary(eligible, alpha=p.alpha, confidence=p.confidence, flavour=p.flavour)


def _simulated_run(
    job: TableJob, tradeoff: pl.DataFrame, responses: pl.DataFrame, metrics: pl.DataFrame
) -> SimulatedRun:
    """The :class:`saltbench.analysis.SimulatedRun` of the job: the simulated models' parameters, datasets,
    intervention rows, compared conditions, reasoning models and budgets, the draws per prompt and the
    draws' and second pass's estimators the metrics scored."""
    import polars as pl

    from saltbench.analysis import INTERVENTIONS_SCHEMA, SimulatedRun, read_tables, scored_estimators
    from saltbench.inference import load_model_registry
    from saltbench.inference.sources import SimulatedSource
    from saltbench.io import read_table

    p = job.params
    registry = load_model_registry(job.file("registry"))
    params = {
        m: source.parameters for m in p.models if isinstance(source := registry[m].source, SimulatedSource)
    }
    budgets = responses.group_by("model", "style", "task").agg(pl.col("max_new_tokens").max())
    return SimulatedRun(
        params=params,
        styles=p.styles,
        datasets={t: read_table(f, "dataset") for t, f in zip(p.tasks, job.files("datasets"), strict=True)},
        intervention_models=p.intervention_models,
        intervention_tasks=p.intervention_tasks,
        intervention_style=p.intervention_style,
        interventions=read_tables(job.files("intervention_rows"), INTERVENTIONS_SCHEMA, "interventions")
        if p.intervention_models
        else None,
        comparisons=list(tradeoff.select("model_a", "style_a", "model_b", "style_b").iter_rows()),
        thinking={m for m in params if registry[m].reasoning_format == "think"},
        budgets={(m, s, t): b for m, s, t, b in budgets.iter_rows()},
        granularity=p.granularity,
        granularities=[g for g in p.granularities if g in ("atom", "line", p.granularity)],
        confidence=p.confidence,
        n_bins=p.n_bins,
        alignment=p.alignment,
        draws=p.draws["n"],  # run.draw_counts: the draws per prompt (0: none)
        # every granularity scored; a cell of too few correct or wrong units is not compared (§10.2)
        estimators=scored_estimators(metrics),
    )


def recovery_table(job: TableJob) -> pl.DataFrame:
    """Every planted value of the run's simulated models beside the run's estimate of it
    (:func:`saltbench.analysis.recovery_table`, docs/simulation.md §4); the units' class counts
    (:func:`saltbench.analysis.ranked_classes`) say which of the draws' and second pass's rows are compared
    (§10.2)."""
    import logging

    import polars as pl

    from saltbench.analysis import (
        RANKED_COLUMNS,
        RESPONSE_COLUMNS,
        planted_values,
        ranked_classes,
        recovery_estimates,
    )
    from saltbench.analysis import recovery_table as table
    from saltbench.io import read_table
    from saltbench.workflow.unit_files import iter_units

    tradeoff = read_table(job.file("tradeoff"), "table.reasoning_tradeoff")
    parts, classes = [], []
    for units in iter_units(job.files("units"), list(dict.fromkeys([*RESPONSE_COLUMNS, *RANKED_COLUMNS]))):
        # one row per response of the simulated models (their units repeat its columns)
        columns = [c for c in RESPONSE_COLUMNS if c in units.columns]
        parts.append(units.select(columns).unique("sample_id", maintain_order=True))
        classes.append(ranked_classes(units))  # which estimator rows are compared (docs/simulation.md §10.2)
    responses = pl.concat(parts)
    metrics = _metrics(job)
    run = _simulated_run(job, tradeoff, responses, metrics)
    planted = planted_values(run, seed=job.params.seed)
    interventions = job.files("interventions")
    estimates = recovery_estimates(
        metrics,
        read_table(job.file("health"), "table.generation_health"),
        read_table(interventions[0], "table.interventions") if interventions else None,
        tradeoff,
        responses,
        granularities=run.granularities,
        confidence=job.params.confidence,
        flavour=job.params.flavour,
    )
    recovery = table(planted, estimates, job.params.intervention_style, pl.concat(classes))
    inside = recovery.filter(pl.col("inside").is_not_null())
    logging.getLogger(__name__).info(
        "%d planted values, %d compared, %d inside their intervals",
        recovery.height,
        inside.height,
        inside["inside"].sum(),
    )
    return recovery


_REASONING_RESAMPLES = Derived(
    ("analysis.reasoning_level", "analysis.paired_bootstrap", "metrics.n_bootstrap"),
    lambda level, paired, n_bootstrap: paired if level == "task" else max(n_bootstrap, 1),
)
"""Task level: ``analysis.paired_bootstrap`` paired resamples; sample level: the metrics' bootstrap size."""

TABLE_RULES: tuple[TableRule, ...] = (
    TableRule(
        "generation_health",
        "What each model's responses hold (answered, truncated, no fence, error), its tokens and its budget.",
        generation_health_table,
        inputs={
            "units": "units",
            # the draws' counts (docs/generation.md §7): their statuses need each model's reasoning format
            "draws": "draws",
            "registry": RuleInput("registry", when=("run.draws", True)),
            "second_pass": "second_pass",
        },
        params={"draws": "run.draw_counts"},
    ),
    TableRule(
        "eligibility",
        "Which models and cells enter pooled and compared estimates, and why not (docs/metrics.md §10).",
        eligibility_cells_table,
        inputs={"units": "units", "health": "table:generation_health"},
        params={
            "confidence": "metrics.default_confidence",
            "flavour": "analysis.flavour",
            "min_answered_share": "analysis.eligible_answered_share",
            "min_model_units": "analysis.min_model_units",
        },
    ),
    TableRule(
        "leaderboard",
        "Per model x style: precision at three granularities, ECE, AUROC, AURC of the default confidence.",
        leaderboard_table,
        inputs={"metrics": "metrics", "eligibility": "table:eligibility"},
        params={
            "confidence": "metrics.default_confidence",
            "flavour": "analysis.flavour",
            "calibration": "analysis.ece_calibration",
            "granularity": "analysis.granularity",
        },
    ),
    TableRule(
        "accuracy_by_task",
        "Per-task precision of every model, style and granularity (tidy; behind figure accuracy_by_task).",
        accuracy_by_task_table,
        inputs={"metrics": "metrics", "eligibility": "table:eligibility"},
    ),
    TableRule(
        "dominance",
        "Which confidence function wins each aspect (ECE, AUROC, AURC) per granularity, and by how much.",
        dominance_tables,
        inputs={"metrics": "metrics", "eligibility": "table:eligibility"},
        params={"calibration": "analysis.ece_calibration"},
        also=(TableOutput("dominance_cells", ("parquet",), target=False, prefix="cells_"),),
    ),
    TableRule(
        "estimator_cost",
        "Per model x style x task x estimator family: extra tokens generated and scored per response.",
        estimator_cost_table,
        inputs={"health": "table:generation_health", "draws": "draws", "second_pass": "second_pass"},
    ),
    TableRule(
        "frontier",
        "Per granularity x estimator: pooled AUROC and PRR against extra tokens per response (cost/quality).",
        frontier_table,
        inputs={"metrics": "metrics", "eligibility": "table:eligibility", "cost": "table:estimator_cost"},
        params={"flavour": "analysis.flavour"},
    ),
    TableRule(
        "granularity",
        "AUROC (pooled and per response) at atom, line and generation level, per task and style, with the "
        "correct and incorrect units each rests on and the paired difference from the line level.",
        granularity_table,
        inputs={"metrics": "metrics", "units": "units", "eligibility": "table:eligibility"},
        params={
            "confidence": "metrics.default_confidence",
            "flavour": "analysis.flavour",
            "n_resamples": "analysis.paired_bootstrap",
            "alpha": ALPHA,
            "seed": "seed",
        },
    ),
    TableRule(
        "reasoning_tradeoff",
        "Paired CoT-vs-direct and reasoning-vs-base comparisons: delta precision, relative delta AUROC.",
        reasoning_tradeoff_table,
        inputs={
            "metrics": "metrics",
            "units": RuleInput("units", when=("analysis.reasoning_level", "sample")),
            "registry": "registry",
            "eligibility": "table:eligibility",
        },
        params={
            "models": "run.models",
            "styles": "run.styles",
            "level": "analysis.reasoning_level",
            "confidence": "metrics.default_confidence",
            "flavour": "analysis.flavour",
            "granularity": "analysis.granularity",
            "n_resamples": _REASONING_RESAMPLES,
            "alpha": ALPHA,
            "seed": "seed",
        },
        mem_mb=8000,
        runtime=60,
        local=False,
    ),
    TableRule(
        "label_noise",
        "How ECE, AUROC and PRR move when a seeded fraction of the correctness labels is flipped.",
        label_noise_table,
        inputs={"parts": "parts", "eligibility": "table:eligibility"},
        params={
            "confidence": "metrics.default_confidence",
            "flavour": "analysis.flavour",
            "alpha": ALPHA,
        },
        parts=ModelParts(
            label_noise_part_table,
            inputs={"units": "units"},
            params={
                "confidence": "metrics.default_confidence",
                "flavour": "analysis.flavour",
                "granularities": "scoring.granularities",
                "epsilons": "analysis.label_noise_epsilons",
                "n_replicates": "analysis.label_noise_replicates",
                "n_bins": "metrics.n_bins",
                "seed": "seed",
            },
            mem_mb=8000,
            runtime=60,
        ),
    ),
    TableRule(
        "reliability",
        "Reliability-diagram bins of every confidence function (calibrated on a calibration split).",
        reliability_diagram_table,
        inputs={"units": "units", "eligibility": "table:eligibility"},
        params={
            "flavour": "analysis.flavour",
            "functions": "scoring.confidence_functions",
            "method": "analysis.ece_calibration",
            "calibration_fraction": "metrics.calibration_fraction",
            "n_bins": "metrics.n_bins",
            "seed": "seed",
        },
        formats=DATA_ONLY,
        mem_mb=8000,
        runtime=60,
        local=False,
    ),
    TableRule(
        "rejection",
        "Risk-coverage curves of every confidence function with oracle and random baselines.",
        rejection_curve_table,
        inputs={"units": "units", "eligibility": "table:eligibility"},
        params={
            "flavour": "analysis.flavour",
            "functions": "scoring.confidence_functions",
            "n_points": "analysis.rejection_points",
        },
        formats=DATA_ONLY,
        mem_mb=8000,
        runtime=60,
        local=False,
    ),
    TableRule(
        "interventions",
        "Fitted intervention effects (with cluster-bootstrap CIs) and next-atom accuracy tables.",
        intervention_tables,
        inputs={"interventions": "interventions"},
        params={
            "method": "analysis.intervention_fit",
            "n_resamples": "analysis.intervention_bootstrap",
            "alpha": ALPHA,
            "position_bins": "analysis.position_bins",
            "corruption_bins": "analysis.corruption_bins",
            "seed": "seed",
        },
        needs="interventions",
        also=tuple(
            TableOutput(f"interventions_by_{by}", needs="interventions", prefix=f"{by}_")
            for by in ("position", "corruption", "placement")
        ),
        runtime=30,
    ),
    TableRule(
        "recovery",
        "Runs with simulated models: every planted value beside the run's estimate of it and its interval.",
        recovery_table,
        inputs={
            "metrics": "metrics",
            "health": "table:generation_health",
            # the simulated models' units: their response columns, reasoning traces (docs/simulation.md §4)
            "units": "simulated_units",
            "tradeoff": "table:reasoning_tradeoff",
            "interventions": RuleInput("table:interventions", when=("run.interventions", True)),
            "intervention_rows": "interventions",
            "datasets": "datasets",
            "registry": "registry",
        },
        params={
            "models": "run.models",
            "styles": "run.styles",
            "tasks": "run.tasks",
            "simulation": "run.simulation",
            "intervention_models": "run.intervention_models",
            "intervention_tasks": "run.intervention_tasks",
            "intervention_style": "interventions.style",
            "seed": "seed",
            # what the estimates are of (docs/simulation.md §4)
            "granularity": "analysis.granularity",
            "granularities": "scoring.granularities",
            "confidence": "metrics.default_confidence",
            "flavour": "analysis.flavour",
            "n_bins": "metrics.n_bins",
            "alignment": "scoring.alignment",
            "draws": "run.draw_counts",
        },
        formats=DATA_ONLY,
        needs="simulation",
        runtime=30,
    ),
)
"""Every table rule, in the order of the paper's sections (rules/analysis.smk generates them)."""

TABLE_OUTPUTS: tuple[TableOutput, ...] = tuple(out for rule in TABLE_RULES for out in rule.outputs)
"""Every analysis table, in the order of the paper's sections."""


def table_output(name: str) -> TableOutput:
    """The entry of table ``name``.

    Raises:
        KeyError: naming the known tables.
    """
    for table in TABLE_OUTPUTS:
        if table.name == name:
            return table
    raise KeyError(f"{name!r} is not a table of the study ({', '.join(t.name for t in TABLE_OUTPUTS)})")


def target_files(enabled: Collection[Needs]) -> list[str]:
    """The table and figure files of a run whose enabled parts are ``enabled`` (``always`` is implied)."""
    parts = {"always", *enabled}
    tables = [
        f"results/tables/{t.name}.{fmt}"
        for t in TABLE_OUTPUTS
        if t.target and t.needs in parts
        for fmt in t.formats
    ]
    return tables + figure_files(parts)


__all__ = [
    "TABLE_OUTPUTS",
    "TABLE_RULES",
    "table_output",
    "table_rule",
    "target_files",
]
