"""Stage 8: the explorer, results/explorer/index.html (saltbench.explorer; docs/explorer.md).

A static page that works offline from the results folder: every response of the run, each unit coloured by
its status and shaded by its confidence, with its tokens on hover, the run's "confident and wrong" and
"unsure and right" units, and the intervention runs. Needs from the Snakefile: TASKS, STYLES, MODELS, and
rules/analysis.smk included first (ANALYSIS options, ANALYSIS_UNITS, ANALYSIS_INTERVENTIONS).
"""


rule explorer:
    """Every response of the run, unit by unit, in one static page (data in one file per model, style, task)."""
    localrule: True
    input:
        units=ANALYSIS_UNITS,
        generations=expand(
            "data/generations/{model}/{style}/{task}.parquet", model=MODELS, style=STYLES, task=TASKS
        ),
        datasets=expand("data/datasets/{task}.parquet", task=TASKS),
        interventions=ANALYSIS_INTERVENTIONS,
    output:
        # not report(): Snakemake's self-contained HTML report cannot hold a folder; its front page links
        # explorer/index.html instead (report/workflow.rst; the report is written to results/report.html)
        directory("results/explorer"),
    params:
        models=MODELS,
        styles=STYLES,
        tasks=TASKS,
        confidence=config["metrics"]["default_confidence"],
        flavour=ANALYSIS["flavour"],
        alternatives=ANALYSIS["explorer_alternatives"],
        list_size=ANALYSIS["explorer_list_size"],
        min_units=ANALYSIS["min_units"],
    log:
        "logs/explorer.log",
    benchmark:
        "benchmarks/explorer.tsv"
    resources:
        mem_mb=4000,
        runtime=15,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/explorer.py"
