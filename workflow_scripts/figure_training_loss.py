"""Rule figure_training_loss: figures/training_loss.{pdf,png} from the training logs."""

from saltbench.analysis import read_train_logs
from saltbench.plotting import render, save_figure
from saltbench.rule_support import setup_logging


def main(snakemake) -> None:  # noqa: ANN001 - the object Snakemake injects
    log = setup_logging(snakemake)
    logs = read_train_logs(list(snakemake.input))
    figure = render("training_loss", logs, **snakemake.params.options)
    save_figure(figure, [snakemake.output.pdf, snakemake.output.png])
    log.info("drew training_loss from %d logged steps of %d models", logs.height, logs["model"].n_unique())


main(snakemake)  # noqa: F821
