"""Stage 2: generations with per-token log-probabilities, sharded (one job per shard) and resumable."""


rule convert_gguf_model:
    """Convert a GGUF model shipped inside a Python package to a safetensors directory (once)."""
    output:
        directory(f"{CONVERTED_MODELS}/{{model}}"),
    params:
        spec=lambda wildcards: spec_of(wildcards.model),
    log:
        "logs/models/convert_{model}.log",
    benchmark:
        "benchmarks/models/convert_{model}.tsv"
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/convert_gguf_model.py"


rule generate_shard:
    """Greedy generations of one shard of a task's prompts for one model and prompt style."""
    input:
        dataset="data/datasets/{task}.parquet",
        model=model_files,
    output:
        "data/generations/{model}/{style}/{task}/shard-{shard}.parquet",
    params:
        spec=lambda wildcards: spec_of(wildcards.model),
        model_path=model_path,
        backend=backend_of,
        inference=config["inference"],
        n_shots=config["datasets"]["n_shots"],
    log:
        "logs/generations/{model}/{style}/{task}/shard-{shard}.log",
    benchmark:
        "benchmarks/generations/{model}/{style}/{task}/shard-{shard}.tsv"
    threads: model_resource("cpus")
    resources:
        gpu=model_resource("gpu"),
        gpu_model=model_resource("gpu_model"),
        mem_mb=model_resource("mem_mb"),
        runtime=model_resource("runtime"),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/generate_shard.py"


rule merge_generations:
    """Concatenate the shards of each task of one (model, style) into data/generations/{model}/{style}/{task}.parquet."""
    localrule: True
    input:
        unpack(generation_shards),
    output:
        per_task("data/generations/{model}/{style}/{task}.parquet"),
    params:
        tasks=TASKS,
    log:
        "logs/generations/{model}/{style}/merge.log",
    benchmark:
        "benchmarks/generations/{model}/{style}/merge.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/merge_generations.py"
