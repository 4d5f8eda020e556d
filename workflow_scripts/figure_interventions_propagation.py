"""Rule figure_interventions_propagation: figures/interventions_propagation.{pdf,png} from its table."""

from saltbench.io import read_table
from saltbench.plotting import render, save_figure
from saltbench.rule_support import setup_logging


def main(snakemake) -> None:  # noqa: ANN001 - the object Snakemake injects
    log = setup_logging(snakemake)
    table = read_table(snakemake.input[0])
    figure = render("interventions_propagation", table, **snakemake.params.options)
    save_figure(figure, [snakemake.output.pdf, snakemake.output.png])
    log.info("drew interventions_propagation from %d rows", table.height)


main(snakemake)  # noqa: F821
