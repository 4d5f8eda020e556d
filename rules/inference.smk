"""Stage 2: generations with per-token log-probabilities, sharded and resumable; with inference.samples.n > 0
also the draws (sampled answers, data/draws/{model}/{style}/{task}.parquet: the same jobs on another artifact,
docs/generation.md §7).

``inference.jobs: per_shard`` (the cluster layout): one ``generate_shard`` job per shard and one
``merge_generations`` job per (model, style). ``per_model`` (CPU runs, where a job's start-up and model load
dominate): one ``generate_model`` job per model for every style, task and shard, keeping finished shards
for a rerun after a kill. A model of source kind ``generations`` is imported instead (``import_generations``:
one job per model, every style and task, the file validated before anything is written; with draws asked, also
the draws the file carries).
"""


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


rule serve_model:
    """vLLM's OpenAI-compatible server for one vllm_server model, kept up while that model's inference and
    intervention jobs (its clients, run beside it as one group job) use it: a Snakemake service job."""
    input:
        model=model_files,
    output:
        service("data/servers/{model}.json"),
    params:
        python=sys.executable,
        registry=config["model_registry"],
        model_path=model_path,
    log:
        "logs/servers/{model}.log",
    # no benchmark: Snakemake writes a service job's benchmark only after the job has stopped, which it
    # does after its consumers are done; the group job's outputs are checked before that (docs/reliability.md §2.3)
    threads: model_resource("cpus", server=True)
    resources:
        gpu=model_resource("gpu", server=True),
        gpu_model=model_resource("gpu_model", server=True),
        mem_mb=model_resource("mem_mb", server=True),
        runtime=model_resource("runtime", server=True),
    conda:
        "../environment.yml"
    shell:
        # the endpoint file at once (a consumer's inputs must exist when it starts), then the server, exec-ed
        # so that Snakemake's signals reach it (saltbench.inference.server.serving.Endpoint)
        """echo '{{"model": "{wildcards.model}", "pid": '$$'}}' > {output} && """
        "exec {params.python} -m saltbench.stages.serve {params.registry} {wildcards.model} "
        "{params.model_path} {output} --log {log} --threads {threads} 2>> {log}"


if INFERENCE_JOBS == "per_model":

    rule generate_model:
        """Greedy generations of every style, task and shard of one model from one model load (per_model jobs)."""
        wildcard_constraints:
            model=GENERATED_MODEL_REGEX,
        input:
            datasets=expand("data/datasets/{task}.parquet", task=TASKS),
            model=model_files,
            server=managed_server,
        output:
            [f"data/generations/{{model}}/{style}/{task}.parquet" for style, task in STYLE_TASKS],
        params:
            plugins=task_plugins,
            spec=lambda wildcards: spec_of(wildcards.model),
            simulation=simulation,
            model_path=model_path,
            backend=backend_of,
            inference=GREEDY_INFERENCE,
            n_shots=config["datasets"]["n_shots"],
            max_samples=max_samples,
            tasks=TASKS,
            outputs=STYLE_TASKS,
            shard_dir="data/generations/{model}/.shards",
            # completed API requests (backends openai, vllm_server), kept until the job ends: a rerun sends only the rest
            request_cache="data/generations/{model}/.shards/requests",
        log:
            "logs/generations/{model}/generate.log",
        benchmark:
            "benchmarks/generations/{model}/generate.tsv"
        threads: model_resource("cpus")
        # every model's generations before the stages that read them: no model's tail starts last
        priority: 50
        resources:
            gpu=model_resource("gpu"),
            gpu_model=model_resource("gpu_model"),
            mem_mb=model_resource("mem_mb"),
            runtime=model_resource("runtime"),
        conda:
            "../environment.yml"
        script:
            "../workflow_scripts/generate_model.py"

    use rule generate_model as generate_draws_model with:
        output:
            [f"data/draws/{{model}}/{style}/{task}.parquet" for style, task in STYLE_TASKS],
        params:
            inference=DRAWS_INFERENCE,
            draws=True,
            seed=config["seed"],
            shard_dir="data/draws/{model}/.shards",
            request_cache="data/draws/{model}/.shards/requests",
        log:
            "logs/draws/{model}/generate.log",
        benchmark:
            "benchmarks/draws/{model}/generate.tsv"

else:

    rule generate_shard:
        """Greedy generations of one shard of a task's prompts for one model and prompt style."""
        wildcard_constraints:
            model=GENERATED_MODEL_REGEX,
        input:
            dataset="data/datasets/{task}.parquet",
            model=model_files,
            server=managed_server,
        output:
            "data/generations/{model}/{style}/{task}/shard-{shard}.parquet",
        params:
            plugins=task_plugins,
            spec=lambda wildcards: spec_of(wildcards.model),
            simulation=simulation,
            model_path=model_path,
            backend=backend_of,
            inference=GREEDY_INFERENCE,
            n_shots=config["datasets"]["n_shots"],
            max_samples=max_samples,
            # completed API requests (backends openai, vllm_server), kept until the shard is written
            # (a string's wildcards are filled in by Snakemake: cheaper to plan than a function per job)
            request_cache="data/generations/{model}/.requests/{style}/{task}/shard-{shard}",
        log:
            "logs/generations/{model}/{style}/{task}/shard-{shard}.log",
        benchmark:
            "benchmarks/generations/{model}/{style}/{task}/shard-{shard}.tsv"
        threads: model_resource("cpus")
        # every model's generations before the stages that read them: no model's tail starts last
        priority: 50
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
        wildcard_constraints:
            model=GENERATED_MODEL_REGEX,
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

    use rule generate_shard as generate_draws_shard with:
        output:
            "data/draws/{model}/{style}/{task}/shard-{shard}.parquet",
        params:
            inference=DRAWS_INFERENCE,
            draws=True,
            seed=config["seed"],
            request_cache="data/draws/{model}/.requests/{style}/{task}/shard-{shard}",
        log:
            "logs/draws/{model}/{style}/{task}/shard-{shard}.log",
        benchmark:
            "benchmarks/draws/{model}/{style}/{task}/shard-{shard}.tsv"

    use rule merge_generations as merge_draws with:
        localrule: True
        input:
            unpack(draw_shards),
        output:
            per_task("data/draws/{model}/{style}/{task}.parquet"),
        params:
            draws=True,
        log:
            "logs/draws/{model}/{style}/merge.log",
        benchmark:
            "benchmarks/draws/{model}/{style}/merge.tsv"


rule import_generations:
    """Generations made elsewhere (source kind generations): the file validated against the datasets and
    converted into every style and task's generations table, with the import record (docs/backends.md §9)."""
    wildcard_constraints:
        model=IMPORTED_MODEL_REGEX,
    input:
        datasets=expand("data/datasets/{task}.parquet", task=TASKS),
        file=lambda wildcards: spec_of(wildcards.model).source.path,
    output:
        generations=[f"data/generations/{{model}}/{style}/{task}.parquet" for style, task in STYLE_TASKS],
        record="data/generations/{model}/import.json",
        # the draws the file carries, when the run asks for draws (docs/backends.md §9.7)
        draws=(
            [f"data/draws/{{model}}/{style}/{task}.parquet" for style, task in STYLE_TASKS]
            if DRAW_MODELS
            else []
        ),
    params:
        plugins=task_plugins,
        spec=lambda wildcards: spec_of(wildcards.model),
        n_shots=config["datasets"]["n_shots"],
        max_samples=max_samples,
        top_k=config["inference"]["top_k"],
        n_draws=config["inference"]["samples"]["n"],
        tasks=TASKS,
        styles=STYLES,
        outputs=STYLE_TASKS,
    log:
        "logs/generations/{model}/import.log",
    benchmark:
        "benchmarks/generations/{model}/import.tsv"
    priority: 50
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/import_generations.py"
