"""Rules figure_*: figures/{params.figure}.{pdf,png} from the figure's input (saltbench.plotting)."""

from saltbench.plotting import read_figure_input, render, save_figure
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    name = snakemake.params.figure
    frame = read_figure_input(name, list(snakemake.input))
    figure = render(name, frame, **snakemake.params.options)
    save_figure(figure, [snakemake.output.pdf, snakemake.output.png])
    log.info("drew %s from %d rows of %s", name, frame.height, ", ".join(map(str, snakemake.input)))


main(snakemake)  # noqa: F821
