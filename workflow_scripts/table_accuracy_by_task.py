"""Rule table_accuracy_by_task: results/tables/accuracy_by_task.{parquet,csv,tex} (per-task precision)."""

from saltbench.analysis import METRICS_SCHEMA, accuracy_by_task, read_tables
from saltbench.core.contracts import TABLES
from saltbench.workflow.analysis_rules import write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    metrics = read_tables(list(snakemake.input), METRICS_SCHEMA, "metrics")
    write_rule_tables(snakemake, accuracy_by_task(metrics), TABLES["accuracy_by_task"])


main(snakemake)  # noqa: F821
