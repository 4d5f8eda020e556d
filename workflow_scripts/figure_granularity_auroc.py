"""Rule figure_granularity_auroc: figures/granularity_auroc.{pdf,png} from its analysis table."""

from saltbench.io import read_table
from saltbench.plotting import render, save_figure
from saltbench.rule_support import setup_logging


def main(snakemake) -> None:  # noqa: ANN001 - the object Snakemake injects
    log = setup_logging(snakemake)
    table = read_table(snakemake.input[0])
    figure = render("granularity_auroc", table, **snakemake.params.options)
    save_figure(figure, [snakemake.output.pdf, snakemake.output.png])
    log.info("drew granularity_auroc from %d rows", table.height)


main(snakemake)  # noqa: F821
