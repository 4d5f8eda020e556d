"""Rule table_recovery: results/tables/recovery.{parquet,csv} — every planted value of the run's simulated
models beside the run's estimate of it (docs/simulation.md §4)."""

import polars as pl

from saltbench.analysis import (
    INTERVENTIONS_SCHEMA,
    METRICS_SCHEMA,
    RESPONSE_COLUMNS,
    SimulatedRun,
    planted_values,
    read_tables,
    recovery_estimates,
    recovery_table,
)
from saltbench.core.contracts import TABLES
from saltbench.inference import load_model_registry
from saltbench.inference.sources import SimulatedSource
from saltbench.io import read_table
from saltbench.workflow.analysis_rules import iter_units, write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    p, inputs = snakemake.params, snakemake.input
    registry = load_model_registry(inputs.registry)
    params = {
        m: registry[m].source.parameters for m in p.models if isinstance(registry[m].source, SimulatedSource)
    }
    tradeoff = read_table(inputs.tradeoff, "table.reasoning_tradeoff")
    # one row per response of the simulated models (their units repeat its columns)
    responses = pl.concat(u.unique("sample_id") for u in iter_units(list(inputs.units), RESPONSE_COLUMNS))
    budgets = responses.group_by("model", "style", "task").agg(pl.col("max_new_tokens").max())
    run = SimulatedRun(
        params=params,
        styles=p.styles,
        datasets={t: read_table(f, "dataset") for t, f in zip(p.tasks, inputs.datasets, strict=True)},
        intervention_models=p.intervention_models,
        intervention_tasks=p.intervention_tasks,
        intervention_style=p.intervention_style,
        interventions=read_tables(list(inputs.intervention_rows), INTERVENTIONS_SCHEMA, "interventions")
        if p.intervention_models
        else None,
        comparisons=list(tradeoff.select("model_a", "style_a", "model_b", "style_b").iter_rows()),
        thinking={m for m in params if registry[m].reasoning_format == "think"},
        budgets={(m, s, t): b for m, s, t, b in budgets.iter_rows()},
    )
    planted = planted_values(run, seed=p.seed)
    estimates = recovery_estimates(
        read_tables(list(inputs.metrics), METRICS_SCHEMA, "metrics"),
        read_table(inputs.health, "table.generation_health"),
        read_table(inputs.interventions, "table.interventions") if inputs.get("interventions") else None,
        tradeoff,
        responses,
    )
    table = recovery_table(planted, estimates, p.intervention_style)
    inside = table.filter(pl.col("inside").is_not_null())
    log.info(
        "%d planted values, %d estimated, %d inside their intervals",
        table.height,
        inside.height,
        inside["inside"].sum(),
    )
    write_rule_tables(snakemake, table, TABLES["recovery"])


main(snakemake)  # noqa: F821
