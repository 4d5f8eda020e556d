"""Rules figure_*: figures/{params.figure}.{pdf,png} from the figure's input (saltbench.plotting); a figure
drawn from the eligible models only names what the eligibility table left out (docs/metrics.md §10)."""

from saltbench.analysis import exclusion_lines
from saltbench.io import read_table
from saltbench.plotting import note_exclusions, read_figure_input, render, save_figure
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    name = snakemake.params.figure
    frame = read_figure_input(name, list(snakemake.input.table))
    figure = render(name, frame, **snakemake.params.options)
    for path in snakemake.input.eligibility:
        note_exclusions(figure, exclusion_lines(read_table(path, "table.eligibility")))
    save_figure(figure, [snakemake.output.pdf, snakemake.output.png])
    log.info("drew %s from %d rows of %s", name, frame.height, ", ".join(map(str, snakemake.input.table)))


main(snakemake)  # noqa: F821
