"""Rule table_granularity: results/tables/granularity.{parquet,csv,tex} (AUROC by unit granularity)."""

from saltbench.analysis import METRICS_SCHEMA, granularity_table, read_tables
from saltbench.core.contracts import TABLES
from saltbench.workflow.rule_io import write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:  # noqa: ANN001 - the object Snakemake injects
    setup_logging(snakemake)
    p = snakemake.params
    metrics = read_tables(list(snakemake.input), METRICS_SCHEMA, "metrics")
    table = granularity_table(metrics, confidence=p.confidence, flavour=p.flavour)
    write_rule_tables(snakemake, table, TABLES["granularity"])


main(snakemake)  # noqa: F821
