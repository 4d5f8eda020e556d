"""Rule table_reasoning_tradeoff: results/tables/reasoning_tradeoff.{parquet,csv,tex}.

Comparisons: every model run with both styles (CoT vs direct) and every reasoning / non-reasoning pair of
the roster (saltbench.analysis.model_pairs: registry key ``pair_with`` or the base-model name rule).
"""

from saltbench.analysis import METRICS_SCHEMA, comparisons, model_pairs, read_tables, reasoning_tradeoff
from saltbench.core.contracts import TABLES
from saltbench.workflow.analysis_rules import (
    reasoning_tradeoff_from_unit_files,
    registry_entries,
    write_rule_tables,
)
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    p = snakemake.params
    metrics = read_tables(list(snakemake.input.metrics), METRICS_SCHEMA, "metrics")
    pairs = model_pairs(registry_entries(snakemake.input.registry), p.models)
    cmps = comparisons([(m, s) for m in p.models for s in p.styles], pairs)
    log.info("%d reasoning pairs, %d comparisons (%s level)", len(pairs), len(cmps), p.level)
    options = {
        "confidence": p.confidence,
        "flavour": p.flavour,
        "granularity": p.granularity,
        "n_resamples": p.n_resamples,
        "alpha": p.alpha,
    }
    if p.level == "sample":
        table = reasoning_tradeoff_from_unit_files(list(snakemake.input.units), cmps, seed=p.seed, **options)
    else:
        table = reasoning_tradeoff(metrics, cmps, seed=p.seed, **options)
    write_rule_tables(snakemake, table, TABLES["reasoning_tradeoff"], pairs=[p_.__dict__ for p_ in pairs])


main(snakemake)  # noqa: F821
