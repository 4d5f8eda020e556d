"""Rule table_reasoning_tradeoff: results/tables/reasoning_tradeoff.{parquet,csv,tex}.

Comparisons: every model run with both styles (CoT vs direct) and every reasoning / non-reasoning pair of
the roster (saltbench.analysis.model_pairs: registry key ``pair_with`` or the base-model name rule).
"""

from pathlib import Path

import polars as pl

from saltbench.analysis import (
    METRICS_SCHEMA,
    comparisons,
    model_pairs,
    read_tables,
    reasoning_tradeoff,
    reasoning_tradeoff_units,
)
from saltbench.analysis.rule_io import read_units, registry_entries, write_rule_tables
from saltbench.rule_support import setup_logging


def _model_style(path: str) -> tuple[str, str]:
    """(model, style) of data/units/{model}/{style}/{task}.parquet."""
    return Path(path).parent.parent.name, Path(path).parent.name


def main(snakemake) -> None:  # noqa: ANN001 - the object Snakemake injects
    log = setup_logging(snakemake)
    p = snakemake.params
    metrics = read_tables(list(snakemake.input.metrics), METRICS_SCHEMA, "metrics")
    pairs = model_pairs(registry_entries(snakemake.input.registry), p.models)
    available = [(m, s) for m in p.models for s in p.styles]
    cmps = comparisons(available, pairs)
    log.info("%d reasoning pairs, %d comparisons (%s level)", len(pairs), len(cmps), p.level)
    options = {"confidence": p.confidence, "flavour": p.flavour, "granularity": p.granularity,
               "n_resamples": p.n_resamples, "alpha": p.alpha}  # fmt: skip
    if p.level == "task":
        table = reasoning_tradeoff(metrics, cmps, seed=p.seed, **options)
    else:
        columns = ["model", "style", "task", "sample_id", "granularity", "status", "is_correct",
                   f"{p.flavour}.{p.confidence}"]  # fmt: skip
        parts = []
        for k, cmp in enumerate(cmps):
            # only the two conditions' files data/units/{model}/{style}/{task}.parquet
            wanted = {(cmp.model_a, cmp.style_a), (cmp.model_b, cmp.style_b)}
            files = [f for f in snakemake.input.units if _model_style(f) in wanted]
            units = read_units(files, columns)
            parts.append(reasoning_tradeoff_units(units, [cmp], seed=p.seed + k, **options))
        table = pl.concat(parts) if parts else reasoning_tradeoff(metrics, [])
    write_rule_tables(snakemake, table, pairs=[p_.__dict__ for p_ in pairs])


main(snakemake)  # noqa: F821
