"""Planted truth (docs/simulation.md): in a run with simulated models, every planted value beside the run's
estimate of it. Needs from the Snakefile and rules/analysis.smk: SIMULATED_MODELS, ANALYSIS_METRICS,
ANALYSIS_INTERVENTIONS and the lists of rules/analysis.smk.
"""


rule table_recovery:
    """Runs with simulated models: every planted value beside the run's estimate of it and its interval."""
    localrule: True
    input:
        metrics=ANALYSIS_METRICS,
        health="results/tables/generation_health.parquet",
        # the response columns of the simulated models' units: their reasoning traces (docs/simulation.md §4)
        units=expand(
            "data/units/{model}/{style}/{task}.parquet", model=SIMULATED_MODELS, style=STYLES, task=TASKS
        ),
        tradeoff="results/tables/reasoning_tradeoff.parquet",
        interventions=("results/tables/interventions.parquet" if INTERVENTION_MODELS else []),
        intervention_rows=ANALYSIS_INTERVENTIONS,
        datasets=expand("data/datasets/{task}.parquet", task=TASKS),
        registry=config["model_registry"],
    output:
        **table_outputs("recovery", report),
    params:
        models=MODELS,
        styles=STYLES,
        tasks=TASKS,
        simulation=[simulation_parameters(spec_of(m)) for m in SIMULATED_MODELS],
        intervention_models=INTERVENTION_MODELS,
        intervention_tasks=INTERVENTION_TASKS,
        intervention_style=config["interventions"]["style"],
        seed=config["seed"],
    log:
        "logs/tables/recovery.log",
    benchmark:
        "benchmarks/tables/recovery.tsv"
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/table_recovery.py"
