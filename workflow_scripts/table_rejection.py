"""Rule table_rejection: results/tables/rejection.{parquet,csv} (risk-coverage curves)."""

from saltbench.analysis import rejection_table
from saltbench.confidence import scored_columns
from saltbench.core.contracts import TABLES
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
    units = iter_units(list(snakemake.input), columns)
    table = rejection_table(units, confidences=functions, flavour=p.flavour, n_points=p.n_points)
    write_rule_tables(snakemake, table, TABLES["rejection"])


main(snakemake)  # noqa: F821
