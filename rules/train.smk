"""Stage 0 (default CPU config): train the tiny model families whose checkpoints are evaluated like any model.

One job per family: ``training`` itself and each of ``training.variants`` (the same recipe with a few keys
changed, e.g. a sibling that always writes its worked solution); the jobs are independent, so the families
train side by side on separate cores.
"""

import os

from saltbench.training.recipe import TrainConfig

# Family -> its recipe resolved (TrainConfig's defaults filled in; torch-free); empty when training is off,
# where the keys may be incomplete and the rule never runs.
TRAIN_RECIPES = (
    {name: TrainConfig.from_dict(keys) for name, keys in TRAINING_FAMILIES.items()}
    if TRAINING.enabled
    else {}
)


rule train_tiny_models:
    """Train a small Llama from scratch on SALT pairs; save the configured checkpoints and the loss log."""
    input:
        # the evaluation datasets: training data is checked to contain none of their inputs
        expand("data/datasets/{task}.parquet", task=TASKS),
    output:
        checkpoints=[directory(f"data/models/{{family}}/{c}") for c in TRAINING_CHECKPOINTS],
        log="data/models/{family}/train_log.parquet",
        summary="data/models/{family}/summary.json",
    wildcard_constraints:
        family="|".join(TRAINED_MODELS) or "(?!)",
    params:
        training=lambda wildcards: TRAINING_FAMILIES[wildcards.family],
        out_dir=lambda wildcards, output: os.path.dirname(output.log),
    log:
        "logs/models/train_{family}.log",
    benchmark:
        "benchmarks/models/train_{family}.tsv"
    # the recipe's torch thread count (TrainConfig's default 1 when not written) fixes the reduction order
    # (determinism); free cores run other jobs. num_threads null leaves torch's default (the job's grant):
    # ask for 4 (capped at --cores locally).
    threads: lambda wildcards: TRAIN_RECIPES[wildcards.family].num_threads or 4
    # the longest jobs of a CPU run, and most of the DAG waits on them: start them first
    priority: 100
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=lambda wildcards: int(TRAIN_RECIPES[wildcards.family].device == "cuda"),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/train_tiny_models.py"
