"""Rule table_granularity: results/tables/granularity.{parquet,csv,tex} (AUROC by unit granularity, with the
correct and incorrect units each AUROC rests on)."""

from saltbench.analysis import METRICS_SCHEMA, auroc_unit_counts, granularity_table, read_tables
from saltbench.core.contracts import TABLES, confidence_column
from saltbench.workflow.analysis_rules import iter_units, write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    p = snakemake.params
    metrics = read_tables(list(snakemake.input.metrics), METRICS_SCHEMA, "metrics")
    columns = ["model", "style", "task", "granularity", "status", confidence_column(p.flavour, p.confidence)]
    counts = auroc_unit_counts(
        iter_units(list(snakemake.input.units), columns), confidence=p.confidence, flavour=p.flavour
    )
    table = granularity_table(metrics, confidence=p.confidence, flavour=p.flavour, counts=counts)
    write_rule_tables(snakemake, table, TABLES["granularity"])


main(snakemake)  # noqa: F821
