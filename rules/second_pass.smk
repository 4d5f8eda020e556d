"""The second pass (docs/confidence.md §8): each model asked about the units of its own greedy answers
(verbalized confidence, P(True)) when inference.second_pass.kinds is set; rule score_units then joins the
confidences into the units tables."""


rule second_pass:
    """Every style and task of one model from one model load: data/second_pass/{model}/{style}/{task}.parquet."""
    wildcard_constraints:
        model=GENERATED_MODEL_REGEX,
    input:
        generations=[f"data/generations/{{model}}/{style}/{task}.parquet" for style, task in STYLE_TASKS],
        datasets=expand("data/datasets/{task}.parquet", task=TASKS),
        model=model_files,
        server=managed_server,
    output:
        [f"data/second_pass/{{model}}/{style}/{task}.parquet" for style, task in STYLE_TASKS],
    params:
        plugins=task_plugins,
        spec=lambda wildcards: spec_of(wildcards.model),
        simulation=simulation,
        model_path=model_path,
        backend=backend_of,
        inference={**GREEDY_INFERENCE, "second_pass": config["inference"]["second_pass"]},
        scoring=config["scoring"],
        n_shots=config["datasets"]["n_shots"],
        tasks=TASKS,
        outputs=STYLE_TASKS,
        # completed API requests (backends openai, vllm_server), kept until the job ends: a rerun sends only the rest
        request_cache="data/second_pass/{model}/.requests",
    log:
        "logs/second_pass/{model}.log",
    benchmark:
        "benchmarks/second_pass/{model}.tsv"
    threads: model_resource("cpus")
    # after the model's generations, before the units that join it
    priority: 45
    resources:
        gpu=model_resource("gpu"),
        gpu_model=model_resource("gpu_model"),
        mem_mb=model_resource("mem_mb"),
        runtime=model_resource("runtime"),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/second_pass.py"
