"""Rules table_{name}_part: one model's part of a table whose declaration in saltbench.workflow.tables has
per-model parts, written with the table's part contract (results/tables/parts/{name}/{model}.parquet)."""

import polars  # noqa: F401 - every table job computes with polars: its pool is set up, then logged

from saltbench.workflow.rule_support import setup_logging
from saltbench.workflow.table_rules import run_table_part_job
from saltbench.workflow.tables import TABLE_RULES


def main(snakemake) -> None:
    setup_logging(snakemake)
    run_table_part_job(snakemake, TABLE_RULES)


main(snakemake)  # noqa: F821
