"""Stage 3: units with status, correctness and every confidence value; stage 4: metrics with CIs.

One job per (model, style) covers every task: both stages take seconds per task, so per-task jobs would
spend most of their time starting Python (docs/architecture.md, "Jobs").
"""


rule score_units:
    """Evaluate every generation and score every unit: data/units/{model}/{style}/{task}.parquet per task."""
    input:
        generations=per_task("data/generations/{model}/{style}/{task}.parquet"),
        datasets=expand("data/datasets/{task}.parquet", task=TASKS),
        # the model's replies to the second pass (docs/confidence.md §8), when inference.second_pass asks
        second_pass=lambda wildcards: (
            expand("data/second_pass/{model}/{style}/{task}.parquet", task=TASKS, **wildcards)
            if wildcards.model in SECOND_PASS_MODELS
            else []
        ),
        # the draws, when the run asks for them: the consistency columns (docs/confidence.md §7)
        draws=lambda wildcards: (
            expand("data/draws/{model}/{style}/{task}.parquet", task=TASKS, **wildcards)
            if wildcards.model in DRAW_MODELS
            else []
        ),
    output:
        per_task("data/units/{model}/{style}/{task}.parquet"),
    params:
        plugins=scoring_plugins,
        tasks=TASKS,
        scoring=config["scoring"],
        top_k=config["inference"]["top_k"],
        second_pass=config["inference"]["second_pass"]["kinds"],
        # where the model's reasoning ends and its answer starts (docs/reasoning.md)
        reasoning=lambda wildcards: spec_of(wildcards.model).reasoning_format,
        budgets=lambda wildcards: {
            task: spec_of(wildcards.model).generation_budget(
                SETTINGS.inference.max_new_tokens_for(task, wildcards.style)
            )
            for task in TASKS
        },
    log:
        "logs/units/{model}/{style}.log",
    benchmark:
        "benchmarks/units/{model}/{style}.tsv"
    # then its units and metrics, which every table waits for
    priority: 40
    resources:
        mem_mb=4000,
        runtime=20 * len(TASKS),  # minutes: generous for paper-size tasks
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/score_units.py"


rule compute_metrics:
    """Calibration, ranking and rejection metrics with bootstrap CIs: results/metrics/{model}/{style}/{task}.parquet per task."""
    input:
        per_task("data/units/{model}/{style}/{task}.parquet"),
    output:
        per_task("results/metrics/{model}/{style}/{task}.parquet"),
    params:
        plugins=metrics_plugins,
        tasks=TASKS,
        metrics=config["metrics"],
        flavours=config["scoring"]["flavours"],
        seed=config["seed"],
    log:
        "logs/metrics/{model}/{style}.log",
    benchmark:
        "benchmarks/metrics/{model}/{style}.tsv"
    # then its units and metrics, which every table waits for
    priority: 40
    resources:
        mem_mb=4000,
        runtime=40 * len(TASKS),  # minutes: bootstrap CIs dominate
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/compute_metrics.py"
