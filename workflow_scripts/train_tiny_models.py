"""Rule train_tiny_models: train the tiny model family and save its checkpoints."""

from saltbench.training import TrainConfig, load_eval_inputs, train
from saltbench.workflow.rule_support import job_threads, setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    training = dict(snakemake.params.training)
    if training.get("num_threads") is not None:  # fixed for reproducibility, but never above the grant
        training["num_threads"] = job_threads(snakemake, training["num_threads"])
    config = TrainConfig.from_dict(training)
    eval_inputs = load_eval_inputs(snakemake.input)
    result = train(config, snakemake.params.out_dir, eval_inputs)
    log.info(
        "trained %s: %d steps, %.1f s, final loss %.4f, checkpoints %s",
        snakemake.params.out_dir,
        result.steps,
        result.wall_s,
        result.final_loss,
        [c.name for c in result.checkpoints],
    )


main(snakemake)  # noqa: F821
