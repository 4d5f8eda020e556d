"""Stage 6: analysis tables results/tables/{name}.{parquet,csv,tex} (saltbench.analysis).

Needs from the Snakefile: TASKS, STYLES, MODELS, INTERVENTION_MODELS, INTERVENTION_TASKS (empty lists
when config `interventions` is disabled) and SIMULATED_MODELS (the run's simulated models: the findings then
read rules/simulation.smk's recovery table). Options: config `analysis` (keys and defaults:
saltbench.workflow.analysis_rules.ANALYSIS_DEFAULTS) and config `metrics` (default_confidence, n_bins,
calibration_fraction, n_bootstrap, ci_level). Each table's CSV goes into the HTML report with its caption.
"""

from saltbench.workflow.analysis_rules import analysis_options, figure_outputs, table_outputs

ANALYSIS = analysis_options(config)
ANALYSIS_METRICS = expand(
    "results/metrics/{model}/{style}/{task}.parquet", model=MODELS, style=STYLES, task=TASKS
)
ANALYSIS_UNITS = expand("data/units/{model}/{style}/{task}.parquet", model=MODELS, style=STYLES, task=TASKS)
ANALYSIS_INTERVENTIONS = expand(
    "data/interventions/{model}/{task}.parquet", model=INTERVENTION_MODELS, task=INTERVENTION_TASKS
)


rule table_leaderboard:
    """Per model x style: precision at three granularities, ECE, AUROC, AURC of the default confidence."""
    localrule: True
    input:
        ANALYSIS_METRICS,
    output:
        **table_outputs("leaderboard", report),
    params:
        confidence=config["metrics"]["default_confidence"],
        flavour=ANALYSIS["flavour"],
        calibration=ANALYSIS["ece_calibration"],
        granularity=ANALYSIS["granularity"],
    log:
        "logs/tables/leaderboard.log",
    benchmark:
        "benchmarks/tables/leaderboard.tsv"
    resources:
        mem_mb=4000,
        runtime=15,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_leaderboard.py"


rule table_accuracy_by_task:
    """Per-task precision of every model, style and granularity (tidy; behind figure accuracy_by_task)."""
    localrule: True
    input:
        ANALYSIS_METRICS,
    output:
        **table_outputs("accuracy_by_task", report),
    log:
        "logs/tables/accuracy_by_task.log",
    benchmark:
        "benchmarks/tables/accuracy_by_task.tsv"
    resources:
        mem_mb=4000,
        runtime=15,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_accuracy_by_task.py"


rule table_generation_health:
    """What each model's responses hold (answered, truncated, no fence, error), its tokens and its budget."""
    localrule: True
    input:
        ANALYSIS_UNITS,
    output:
        **table_outputs("generation_health", report),
    log:
        "logs/tables/generation_health.log",
    benchmark:
        "benchmarks/tables/generation_health.tsv"
    resources:
        mem_mb=4000,
        runtime=15,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_generation_health.py"


rule table_dominance:
    """Which confidence function wins each aspect (ECE, AUROC, AURC) per granularity, and by how much."""
    localrule: True
    input:
        ANALYSIS_METRICS,
    output:
        **table_outputs("dominance", report),
        cells="results/tables/dominance_cells.parquet",
    params:
        calibration=ANALYSIS["ece_calibration"],
    log:
        "logs/tables/dominance.log",
    benchmark:
        "benchmarks/tables/dominance.tsv"
    resources:
        mem_mb=4000,
        runtime=15,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_dominance.py"


rule table_granularity:
    """AUROC (pooled and per response) at atom, line and generation level, per task and style, with the
    correct and incorrect units each rests on."""
    localrule: True
    input:
        metrics=ANALYSIS_METRICS,
        units=ANALYSIS_UNITS,
    output:
        **table_outputs("granularity", report),
    params:
        confidence=config["metrics"]["default_confidence"],
        flavour=ANALYSIS["flavour"],
    log:
        "logs/tables/granularity.log",
    benchmark:
        "benchmarks/tables/granularity.tsv"
    resources:
        mem_mb=4000,
        runtime=15,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_granularity.py"


rule table_reasoning_tradeoff:
    """Paired CoT-vs-direct and reasoning-vs-base comparisons: delta precision, relative delta AUROC."""
    input:
        metrics=ANALYSIS_METRICS,
        units=ANALYSIS_UNITS if ANALYSIS["reasoning_level"] == "sample" else [],
        registry=config["model_registry"],
    output:
        **table_outputs("reasoning_tradeoff", report),
    params:
        models=MODELS,
        styles=STYLES,
        level=ANALYSIS["reasoning_level"],
        confidence=config["metrics"]["default_confidence"],
        flavour=ANALYSIS["flavour"],
        granularity=ANALYSIS["granularity"],
        n_resamples=(
            ANALYSIS["paired_bootstrap"]
            if ANALYSIS["reasoning_level"] == "task"
            else max(config["metrics"]["n_bootstrap"], 1)
        ),
        alpha=1 - config["metrics"]["ci_level"],
        seed=config["seed"],
    log:
        "logs/tables/reasoning_tradeoff.log",
    benchmark:
        "benchmarks/tables/reasoning_tradeoff.tsv"
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_reasoning_tradeoff.py"


rule table_interventions:
    """Fitted intervention effects (with cluster-bootstrap CIs) and next-atom accuracy tables."""
    localrule: True
    input:
        ANALYSIS_INTERVENTIONS,
    output:
        **table_outputs("interventions", report),
        **table_outputs("interventions_by_position", report, prefix="position_"),
        **table_outputs("interventions_by_corruption", report, prefix="corruption_"),
        **table_outputs("interventions_by_placement", report, prefix="placement_"),
    params:
        method=ANALYSIS["intervention_fit"],
        n_resamples=ANALYSIS["intervention_bootstrap"],
        alpha=1 - config["metrics"]["ci_level"],
        position_bins=ANALYSIS["position_bins"],
        corruption_bins=ANALYSIS["corruption_bins"],
        seed=config["seed"],
    log:
        "logs/tables/interventions.log",
    benchmark:
        "benchmarks/tables/interventions.tsv"
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_interventions.py"


rule table_reliability:
    """Reliability-diagram bins of every confidence function (calibrated on a calibration split)."""
    input:
        ANALYSIS_UNITS,
    output:
        **table_outputs("reliability", report),
    params:
        flavour=ANALYSIS["flavour"],
        functions=config["scoring"]["confidence_functions"],
        method=ANALYSIS["ece_calibration"],
        calibration_fraction=config["metrics"]["calibration_fraction"],
        n_bins=config["metrics"]["n_bins"],
        seed=config["seed"],
    log:
        "logs/tables/reliability.log",
    benchmark:
        "benchmarks/tables/reliability.tsv"
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_reliability.py"


rule table_rejection:
    """Risk-coverage curves of every confidence function with oracle and random baselines."""
    input:
        ANALYSIS_UNITS,
    output:
        **table_outputs("rejection", report),
    params:
        flavour=ANALYSIS["flavour"],
        functions=config["scoring"]["confidence_functions"],
        n_points=ANALYSIS["rejection_points"],
    log:
        "logs/tables/rejection.log",
    benchmark:
        "benchmarks/tables/rejection.tsv"
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_rejection.py"


rule table_label_noise:
    """How ECE, AUROC and PRR move when a seeded fraction of the correctness labels is flipped."""
    input:
        ANALYSIS_UNITS,
    output:
        **table_outputs("label_noise", report),
    params:
        confidence=config["metrics"]["default_confidence"],
        flavour=ANALYSIS["flavour"],
        granularities=config["scoring"]["granularities"],
        epsilons=ANALYSIS["label_noise_epsilons"],
        n_replicates=ANALYSIS["label_noise_replicates"],
        n_bins=config["metrics"]["n_bins"],
        alpha=1 - config["metrics"]["ci_level"],
        seed=config["seed"],
    log:
        "logs/tables/label_noise.log",
    benchmark:
        "benchmarks/tables/label_noise.tsv"
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_label_noise.py"


rule findings:
    """results/findings.md: one short section per question of the study, every number from a table."""
    localrule: True
    input:
        generation_health="results/tables/generation_health.parquet",
        dominance="results/tables/dominance.parquet",
        granularity="results/tables/granularity.parquet",
        reasoning_tradeoff="results/tables/reasoning_tradeoff.parquet",
        label_noise="results/tables/label_noise.parquet",
        interventions=["results/tables/interventions.parquet"] if INTERVENTION_MODELS else [],
        recovery=["results/tables/recovery.parquet"] if SIMULATED_MODELS else [],
        # imported models: their import records say which were scored without log-probabilities
        imports=expand("data/generations/{model}/import.json", model=IMPORTED_MODELS),
    output:
        report("results/findings.md", caption="../report/findings.rst", category="Findings"),
    params:
        min_answered=ANALYSIS["min_answered_share"],
        min_units=ANALYSIS["min_units"],
    log:
        "logs/tables/findings.log",
    benchmark:
        "benchmarks/tables/findings.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/findings.py"
