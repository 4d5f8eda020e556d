"""Rule table_dominance: results/tables/dominance.{parquet,csv,tex} and the per-cell winners."""

from saltbench.analysis import METRICS_SCHEMA, dominance, dominance_cells, read_tables
from saltbench.core.contracts import TABLES
from saltbench.io import write_table
from saltbench.workflow.analysis_rules import rule_meta, write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    metrics = read_tables(list(snakemake.input), METRICS_SCHEMA, "metrics")
    calibration = snakemake.params.calibration
    write_rule_tables(snakemake, dominance(metrics, calibration=calibration), TABLES["dominance"])
    cells = dominance_cells(metrics, calibration=calibration)
    write_table(cells, snakemake.output.cells, rule_meta(snakemake), TABLES["dominance_cells"])


main(snakemake)  # noqa: F821
