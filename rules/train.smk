"""Stage 0 (default CPU config): train the tiny model family whose checkpoints are evaluated like any model."""

import os

from saltbench.training.recipe import TrainConfig


# The recipe resolved (TrainConfig's defaults filled in; torch-free); None when training is off, where the
# keys may be incomplete and the rule never runs.
TRAIN_RECIPE = TrainConfig.from_dict(TRAINING_CONFIG) if TRAINING.enabled else None


rule train_tiny_models:
    """Train a small Llama from scratch on SALT pairs; save the configured checkpoints and the loss log."""
    input:
        # the evaluation datasets: training data is checked to contain none of their inputs
        expand("data/datasets/{task}.parquet", task=TASKS),
    output:
        checkpoints=[directory(f"data/models/{TRAINING_NAME}/{c}") for c in TRAINING_CHECKPOINTS],
        log=f"data/models/{TRAINING_NAME}/train_log.parquet",
        summary=f"data/models/{TRAINING_NAME}/summary.json",
    params:
        training=TRAINING_CONFIG,
        out_dir=lambda wildcards, output: os.path.dirname(output.log),
    log:
        f"logs/models/train_{TRAINING_NAME}.log",
    benchmark:
        f"benchmarks/models/train_{TRAINING_NAME}.tsv"
    # the recipe's torch thread count (TrainConfig's default 1 when not written) fixes the reduction order
    # (determinism); free cores run other jobs. num_threads null leaves torch's default (the job's grant):
    # ask for 4 (capped at --cores locally).
    threads: (TRAIN_RECIPE.num_threads if TRAIN_RECIPE else None) or 4
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=1 if TRAINING_CONFIG.get("device") == "cuda" else 0,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/train_tiny_models.py"
