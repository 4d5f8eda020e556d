"""Rule table_reliability: results/tables/reliability.{parquet,csv} (reliability-diagram bins)."""

from saltbench.analysis import reliability_table
from saltbench.confidence import scored_columns
from saltbench.core.contracts import TABLES
from saltbench.core.vocabulary import GRANULARITIES
from saltbench.workflow.analysis_rules import iter_units, write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    p = snakemake.params
    functions = [name for _, name in scored_columns(p.functions, [p.flavour])]
    columns = [
        "model",
        "style",
        "task",
        "granularity",
        "sample_id",
        "status",
        "is_correct",
        *(f"{p.flavour}.{fn}" for fn in functions),
    ]
    table = reliability_table(
        iter_units(list(snakemake.input), columns),
        confidences=functions,
        flavour=p.flavour,
        granularities=GRANULARITIES,
        method=p.method,
        calibration_fraction=p.calibration_fraction,
        seed=p.seed,
        n_bins=p.n_bins,
    )
    write_rule_tables(snakemake, table, TABLES["reliability"])


main(snakemake)  # noqa: F821
