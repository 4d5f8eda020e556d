"""Rule table_interventions: fitted effects and accuracy tables of the atom-level interventions."""

from saltbench.analysis import (
    INTERVENTIONS_SCHEMA,
    accuracy_by_corruption,
    accuracy_by_placement,
    accuracy_by_position,
    fit_intervention_effects,
    read_tables,
)
from saltbench.core.contracts import TABLES
from saltbench.workflow.analysis_rules import write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    p = snakemake.params
    data = read_tables(list(snakemake.input), INTERVENTIONS_SCHEMA, "interventions")
    effects = fit_intervention_effects(
        data, method=p.method, n_resamples=p.n_resamples, alpha=p.alpha, seed=p.seed
    )
    write_rule_tables(snakemake, effects, TABLES["interventions"])
    by_position = accuracy_by_position(data, n_bins=p.position_bins)
    write_rule_tables(snakemake, by_position, TABLES["interventions_by_position"], prefix="position_")
    by_corruption = accuracy_by_corruption(data, n_bins=p.corruption_bins)
    write_rule_tables(snakemake, by_corruption, TABLES["interventions_by_corruption"], prefix="corruption_")
    by_placement = accuracy_by_placement(data)
    write_rule_tables(snakemake, by_placement, TABLES["interventions_by_placement"], prefix="placement_")


main(snakemake)  # noqa: F821
