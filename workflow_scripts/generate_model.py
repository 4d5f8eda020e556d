"""Rules generate_model and generate_draws_model: every style, task and shard of one model from one model load
(per_model jobs); the greedy generations, or with params.draws the draws (docs/generation.md §7)."""

import torch

from saltbench.config import InferenceConfig, resolve_block
from saltbench.io import config_hash, inputs_key, model_files_key, provenance, read_table, write_table
from saltbench.stages.generation import (
    DrawRequest,
    ShardDirectory,
    ShardJob,
    answered_rows,
    generate_model,
    n_shards,
    shard_rows,
)
from saltbench.workflow.kept import keep_output, restore_output
from saltbench.workflow.rule_support import job_model, job_threads, setup_logging


def write_generations(frames, outputs, todo, *, meta, keys, shard_size, log, artifact) -> None:
    """Each finished (style, task) table with its provenance, kept apart as well: a copy survives Snakemake
    deleting the output when its group job fails (docs/reliability.md §2.3)."""
    for style, task in todo:
        frame, output = frames[(style, task)], outputs[(style, task)]
        record = provenance(
            **meta,
            style=style,
            task=task,
            shards=n_shards(frame.height, shard_size),
            inputs_key=keys[(style, task)],
        )
        write_table(frame, output, record, artifact)
        keep_output(output)
        counts = frame["finish_reason"].value_counts().to_dicts() if frame.height else []
        log.info("wrote %d %s (%s) to %s", frame.height, artifact, counts, output)


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    threads = job_threads(snakemake)
    torch.set_num_threads(threads)
    model_name, params = snakemake.wildcards.model, snakemake.params
    inference, spec = params.inference, params.spec
    settings = resolve_block("inference", inference, InferenceConfig)
    size = settings.shard_size
    datasets = {
        task: answered_rows(read_table(path, "dataset"), params.max_samples)
        for task, path in zip(params.tasks, snakemake.input.datasets, strict=True)
    }
    draws = DrawRequest.from_config(settings, params.seed) if params.get("draws") else None
    artifact = "generations" if draws is None else "draws"
    meta = {
        "stage": artifact,
        "model": model_name,
        "model_source": repr(spec.source),
        "backend": params.backend,
        "config_hash": config_hash(dict(inference)),
    }
    if draws is not None:
        meta["draws_seed"] = draws.seed
    key = config_hash(
        {
            **meta,
            "spec": repr(spec),
            "n_shots": params.n_shots,
            "model_path": params.model_path,
            "model_files": model_files_key(params.model_path),
        }
    )
    outputs = dict(zip(params.outputs, snakemake.output, strict=True))
    keys = {
        (style, task): inputs_key({"key": key, "style": style, "task": task}, datasets[task])
        for style, task in params.outputs
    }
    todo = [
        (style, task)
        for (style, task), output in outputs.items()
        if not restore_output(output, artifact=artifact, inputs_key=keys[(style, task)])
    ]
    store = ShardDirectory(params.shard_dir, key, meta, artifact)
    if not todo:
        store.clear()
        return
    jobs = [  # every shard, also of the restored outputs: the engine calls are a fixed partition of them all
        ShardJob(
            style, task, k, shard_rows(datasets[task], k, size), settings.max_new_tokens_for(task, style)
        )
        for style, task in params.outputs
        for k in range(n_shards(datasets[task].height, size))
    ]
    log.info(
        "model %s (%s): %d shards of %d (style, task) sets", model_name, params.backend, len(jobs), len(todo)
    )
    model = job_model(snakemake, spec, settings, threads)
    frames = generate_model(
        model,
        jobs,
        model_name=model_name,
        n_shots=params.n_shots,
        store=store,
        group_prompts=settings.group_prompts,
        wanted=todo,
        max_error_share=settings.max_error_share,
        draws=draws,
    )
    write_generations(
        frames, outputs, todo, meta=meta, keys=keys, shard_size=size, log=log, artifact=artifact
    )
    store.clear()


if __name__ == "__main__":  # vLLM spawns its engine process, which re-imports this file
    main(snakemake)  # noqa: F821
