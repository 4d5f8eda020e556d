"""Stage 1: one dataset file per task (our generators, or the authors' reproduction data)."""


rule build_dataset:
    """Generate (or load) the samples of one task: data/datasets/{task}.parquet."""
    localrule: True
    output:
        "data/datasets/{task}.parquet",
    params:
        plugins=task_plugins,
        datasets=lambda wildcards: config["datasets"],
        seed=config["seed"],
    log:
        "logs/datasets/{task}.log",
    benchmark:
        "benchmarks/datasets/{task}.tsv"
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/build_dataset.py"
