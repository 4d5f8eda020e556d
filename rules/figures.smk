"""Stage 7: figures figures/{name}.{pdf,png} (saltbench.plotting), each in the HTML report with its caption.

Needs from the Snakefile: TRAINED_MODELS (models whose data/models/{name}/train_log.parquet the training
stage writes; an empty list when none), and rules/analysis.smk included first (tables and ANALYSIS options).
"""


rule figure_accuracy_by_task:
    """Precision per task at atom, line and generation level, per prompt style."""
    localrule: True
    input:
        "results/tables/accuracy_by_task.parquet",
    output:
        **figure_outputs("accuracy_by_task", "Accuracy", report),
    params:
        figure="accuracy_by_task",
        options={},
    log:
        "logs/figures/accuracy_by_task.log",
    benchmark:
        "benchmarks/figures/accuracy_by_task.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"


rule figure_dominance:
    """Heatmap: share of cells each confidence function wins, per aspect and granularity."""
    localrule: True
    input:
        "results/tables/dominance.parquet",
    output:
        **figure_outputs("dominance", "Uncertainty", report),
    params:
        figure="dominance",
        options={"flavour": ANALYSIS["flavour"]},
    log:
        "logs/figures/dominance.log",
    benchmark:
        "benchmarks/figures/dominance.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"


rule figure_granularity_auroc:
    """AUROC per task at atom, line and generation level (pooled and per response)."""
    localrule: True
    input:
        "results/tables/granularity.parquet",
    output:
        **figure_outputs("granularity_auroc", "Uncertainty", report),
    params:
        figure="granularity_auroc",
        options={},
    log:
        "logs/figures/granularity_auroc.log",
    benchmark:
        "benchmarks/figures/granularity_auroc.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"


rule figure_reliability_diagrams:
    """Reliability diagrams of the best-calibrated confidence functions."""
    localrule: True
    input:
        "results/tables/reliability.parquet",
    output:
        **figure_outputs("reliability_diagrams", "Uncertainty", report),
    params:
        figure="reliability_diagrams",
        options={"granularity": ANALYSIS["reliability_granularity"], "top": ANALYSIS["reliability_top"]},
    log:
        "logs/figures/reliability_diagrams.log",
    benchmark:
        "benchmarks/figures/reliability_diagrams.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"


rule figure_rejection_curves:
    """Risk-coverage curves with oracle and random baselines, per granularity."""
    localrule: True
    input:
        "results/tables/rejection.parquet",
    output:
        **figure_outputs("rejection_curves", "Uncertainty", report),
    params:
        figure="rejection_curves",
        options={"top": ANALYSIS["rejection_top"]},
    log:
        "logs/figures/rejection_curves.log",
    benchmark:
        "benchmarks/figures/rejection_curves.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"


rule figure_interventions_propagation:
    """Next-atom accuracy vs corrupted fraction of the prefix, local vs distant vs random corruption."""
    localrule: True
    input:
        "results/tables/interventions_by_corruption.parquet",
    output:
        **figure_outputs("interventions_propagation", "Interventions", report),
    params:
        figure="interventions_propagation",
        options={},
    log:
        "logs/figures/interventions_propagation.log",
    benchmark:
        "benchmarks/figures/interventions_propagation.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"


rule figure_interventions_context_length:
    """Clean-prefix next-atom accuracy vs position in the answer."""
    localrule: True
    input:
        "results/tables/interventions_by_position.parquet",
    output:
        **figure_outputs("interventions_context_length", "Interventions", report),
    params:
        figure="interventions_context_length",
        options={},
    log:
        "logs/figures/interventions_context_length.log",
    benchmark:
        "benchmarks/figures/interventions_context_length.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"


rule figure_reasoning_tradeoff:
    """Delta precision vs relative delta AUROC of CoT and reasoning models against their baselines."""
    localrule: True
    input:
        "results/tables/reasoning_tradeoff.parquet",
    output:
        **figure_outputs("reasoning_tradeoff", "Reasoning", report),
    params:
        figure="reasoning_tradeoff",
        options={},
    log:
        "logs/figures/reasoning_tradeoff.log",
    benchmark:
        "benchmarks/figures/reasoning_tradeoff.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"


rule figure_training_loss:
    """Training loss curves of the tiny model family trained by the workflow."""
    localrule: True
    input:
        expand("data/models/{name}/train_log.parquet", name=TRAINED_MODELS),
    output:
        **figure_outputs("training_loss", "Training", report),
    params:
        figure="training_loss",
        options={"checkpoints": config["training"].get("checkpoints", {})},
    log:
        "logs/figures/training_loss.log",
    benchmark:
        "benchmarks/figures/training_loss.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"


rule figure_label_noise_sensitivity:
    """ECE, AUROC and PRR against the fraction of flipped correctness labels (uniform and confident noise)."""
    localrule: True
    input:
        "results/tables/label_noise.parquet",
    output:
        **figure_outputs("label_noise_sensitivity", "Uncertainty", report),
    params:
        figure="label_noise_sensitivity",
        options={},
    log:
        "logs/figures/label_noise_sensitivity.log",
    benchmark:
        "benchmarks/figures/label_noise_sensitivity.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/draw_figure.py"
