"""Rule table_label_noise: results/tables/label_noise.{parquet,csv,tex} (label-noise sensitivity)."""

from saltbench.analysis import label_noise_sensitivity
from saltbench.core.contracts import TABLES, confidence_column
from saltbench.workflow.analysis_rules import iter_units, write_rule_tables
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    p = snakemake.params
    columns = [
        "model",
        "style",
        "task",
        "granularity",
        "sample_id",
        "status",
        "is_correct",
        confidence_column(p.flavour, p.confidence),
    ]
    table = label_noise_sensitivity(
        iter_units(list(snakemake.input), columns),
        confidence=p.confidence,
        flavour=p.flavour,
        granularities=p.granularities,
        epsilons=p.epsilons,
        n_replicates=p.n_replicates,
        n_bins=p.n_bins,
        alpha=p.alpha,
        seed=p.seed,
    )
    write_rule_tables(snakemake, table, TABLES["label_noise"])


main(snakemake)  # noqa: F821
