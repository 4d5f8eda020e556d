"""Stage 5: atom-level interventions, data/interventions/{model}/{task}.parquet (saltbench.interventions).

Config: the `interventions` block (keys and defaults: saltbench.config.InterventionsConfig), read
here as INTERVENTION_OPTIONS (saltbench.interventions.InterventionOptions). One job per shard of `shard_size`
samples among the first `samples_per_task` dataset rows (GPU resources from the model registry, as for
inference), merged per (model, task). Which (model, task) files are wanted is the Snakefile's business
(INTERVENTION_MODELS, INTERVENTION_TASKS). Uses rules/common.smk: REGISTRY, spec_of, model_files,
model_path, backend_of, model_resource, samples_of.
"""

INTERVENTION_OPTIONS = INTERVENTIONS  # resolved once, in the Snakefile (models checked against the registry)


rule intervention_shard:
    """Prefix interventions (clean and corrupted) of one shard of a task's samples for one model."""
    input:
        dataset="data/datasets/{task}.parquet",
        model=model_files,
        server=managed_server,
    output:
        "data/interventions/{model}/{task}/shard-{shard}.parquet",
    params:
        plugins=task_plugins,
        spec=lambda wildcards: spec_of(wildcards.model),
        simulation=simulation,
        model_path=model_path,
        backend=backend_of,
        options=INTERVENTION_OPTIONS.as_dict(),
        n_shots=config["datasets"]["n_shots"],
        top_k=config["inference"]["top_k"],
        # completed requests of a served or vllm_server model, kept until the shard is written
        request_cache="data/interventions/{model}/.requests/{task}/shard-{shard}",
    log:
        "logs/interventions/{model}/{task}/shard-{shard}.log",
    benchmark:
        "benchmarks/interventions/{model}/{task}/shard-{shard}.tsv"
    threads: model_resource("cpus")
    resources:
        gpu=model_resource("gpu"),
        gpu_model=model_resource("gpu_model"),
        mem_mb=model_resource("mem_mb"),
        runtime=model_resource("runtime"),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/intervention_shard.py"


rule merge_interventions:
    """Concatenate the shards of one (model, task) into data/interventions/{model}/{task}.parquet."""
    localrule: True
    input:
        intervention_shards,
    output:
        "data/interventions/{model}/{task}.parquet",
    log:
        "logs/interventions/{model}/{task}/merge.log",
    benchmark:
        "benchmarks/interventions/{model}/{task}/merge.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/merge_interventions.py"
