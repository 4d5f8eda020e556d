"""Stage 3: units with status, correctness and every confidence value; stage 4: metrics with CIs."""


rule score_units:
    """Evaluate every generation and score every unit: data/units/{model}/{style}/{task}.parquet."""
    input:
        generations="data/generations/{model}/{style}/{task}.parquet",
        dataset="data/datasets/{task}.parquet",
    output:
        "data/units/{model}/{style}/{task}.parquet",
    params:
        scoring=config["scoring"],
        top_k=config["inference"]["top_k"],
    log:
        "logs/units/{model}/{style}/{task}.log",
    benchmark:
        "benchmarks/units/{model}/{style}/{task}.tsv"
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/score_units.py"


rule compute_metrics:
    """Calibration, ranking and rejection metrics with bootstrap CIs: results/metrics/{model}/{style}/{task}.parquet."""
    input:
        "data/units/{model}/{style}/{task}.parquet",
    output:
        "results/metrics/{model}/{style}/{task}.parquet",
    params:
        metrics=config["metrics"],
        flavours=config["scoring"]["flavours"],
        seed=config["seed"],
    log:
        "logs/metrics/{model}/{style}/{task}.log",
    benchmark:
        "benchmarks/metrics/{model}/{style}/{task}.tsv"
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/compute_metrics.py"
