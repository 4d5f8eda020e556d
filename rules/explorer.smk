"""Stage 8: the explorer, results/explorer/index.html (saltbench.explorer; docs/explorer.md).

A static page that works offline from the results folder: every response of the run, each unit coloured by
its status and shaded by its confidence, with its tokens on hover, a summary of each cell, the "confident
and wrong" and "unsure and right" units of a cell or of every model on a task, and the intervention runs.
One job per model writes that model's data files (rule explorer_model, data/explorer/{model}); a cheap
index job gathers them into results/explorer (rule explorer). Needs from the Snakefile: TASKS, STYLES,
MODELS, and rules/analysis.smk included first (ANALYSIS options, ANALYSIS_INTERVENTIONS).
"""

# a model's cells in the order of the page's chunks (styles, then tasks), for rule explorer_model
EXPLORER_CELL = "{kind}/{{model}}/{style}/{task}.parquet"


rule explorer_model:
    """One model's cells in the explorer's data files: data/explorer/{model}, gathered by rule explorer."""
    input:
        units=expand(EXPLORER_CELL, kind="data/units", style=STYLES, task=TASKS),
        generations=expand(EXPLORER_CELL, kind="data/generations", style=STYLES, task=TASKS),
        metrics=expand(EXPLORER_CELL, kind="results/metrics", style=STYLES, task=TASKS),
        datasets=expand("data/datasets/{task}.parquet", task=TASKS),
    output:
        directory("data/explorer/{model}"),
    params:
        styles=STYLES,
        tasks=TASKS,
        # chunks are numbered over the run's cells in the order models, styles, tasks
        first_id=lambda wc: MODELS.index(wc.model) * len(STYLES) * len(TASKS),
        alternatives=ANALYSIS["explorer_alternatives"],
        list_size=ANALYSIS["explorer_list_size"],
    log:
        "logs/explorer/{model}.log",
    benchmark:
        "benchmarks/explorer_model/{model}.tsv"
    resources:
        mem_mb=4000,
        runtime=15,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/explorer.py"


rule explorer:
    """Every response of the run, unit by unit, in one static page (data in one file per model, style, task)."""
    localrule: True
    input:
        parts=expand("data/explorer/{model}", model=MODELS),
        datasets=expand("data/datasets/{task}.parquet", task=TASKS),
        interventions=ANALYSIS_INTERVENTIONS,
    output:
        # not report(): Snakemake's self-contained HTML report cannot hold a folder; its front page links
        # explorer/index.html instead (report/workflow.rst; the report is written to results/report.html)
        directory("results/explorer"),
    params:
        tasks=TASKS,
        confidence=config["metrics"]["default_confidence"],
        flavour=ANALYSIS["flavour"],
        alternatives=ANALYSIS["explorer_alternatives"],
        list_size=ANALYSIS["explorer_list_size"],
        min_units=ANALYSIS["min_units"],
        min_model_units=ANALYSIS["min_model_units"],
        eligible_answered_share=ANALYSIS["eligible_answered_share"],
        alignment=config["scoring"]["alignment"],
    log:
        "logs/explorer.log",
    benchmark:
        "benchmarks/explorer.tsv"
    resources:
        mem_mb=2000,
        runtime=15,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/explorer.py"
