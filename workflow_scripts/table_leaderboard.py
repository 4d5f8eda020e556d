"""Rule table_leaderboard: results/tables/leaderboard.{parquet,csv,tex} from every metrics table."""

from saltbench.analysis import METRICS_SCHEMA, leaderboard, read_tables
from saltbench.core.contracts import TABLES
from saltbench.workflow.analysis_rules import write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    p = snakemake.params
    metrics = read_tables(list(snakemake.input), METRICS_SCHEMA, "metrics")
    table = leaderboard(
        metrics,
        confidence=p.confidence,
        flavour=p.flavour,
        calibration=p.calibration,
        granularity=p.granularity,
    )
    write_rule_tables(snakemake, table, TABLES["leaderboard"])


main(snakemake)  # noqa: F821
