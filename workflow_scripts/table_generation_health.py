"""Rule table_generation_health: results/tables/generation_health.{parquet,csv,tex} (answer statuses, tokens,
budgets per model, style and task)."""

import polars as pl

from saltbench.analysis import RESPONSE_COLUMNS, generation_health
from saltbench.core.contracts import TABLES
from saltbench.workflow.analysis_rules import iter_units, write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    # one row per response (its units repeat its columns), file by file: bounded memory at paper size
    files = iter_units(list(snakemake.input), RESPONSE_COLUMNS)
    responses = pl.concat(units.unique("sample_id", maintain_order=True) for units in files)
    write_rule_tables(snakemake, generation_health(responses), TABLES["generation_health"])


main(snakemake)  # noqa: F821
