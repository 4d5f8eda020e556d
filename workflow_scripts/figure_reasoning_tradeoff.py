"""Rule figure_reasoning_tradeoff: figures/reasoning_tradeoff.{pdf,png} from its analysis table."""

from saltbench.io import read_table
from saltbench.plotting import render, save_figure
from saltbench.rule_support import setup_logging


def main(snakemake) -> None:  # noqa: ANN001 - the object Snakemake injects
    log = setup_logging(snakemake)
    table = read_table(snakemake.input[0])
    figure = render("reasoning_tradeoff", table, **snakemake.params.options)
    save_figure(figure, [snakemake.output.pdf, snakemake.output.png])
    log.info("drew reasoning_tradeoff from %d rows", table.height)


main(snakemake)  # noqa: F821
