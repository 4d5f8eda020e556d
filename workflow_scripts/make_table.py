"""Rules table_*: the tables of the rule's declaration in saltbench.workflow.tables, computed by its function
and written with their contracts (results/tables/{name}.{parquet,csv,tex})."""

import polars  # noqa: F401 - every table job computes with polars: its pool is set up, then logged

from saltbench.workflow.rule_support import setup_logging
from saltbench.workflow.table_rules import run_table_job
from saltbench.workflow.tables import TABLE_RULES


def main(snakemake) -> None:
    setup_logging(snakemake)
    run_table_job(snakemake, TABLE_RULES)


main(snakemake)  # noqa: F821
