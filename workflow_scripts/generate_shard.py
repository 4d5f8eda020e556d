"""Rules generate_shard and generate_draws_shard: greedy generations with per-token log-probabilities for one
shard, or with params.draws its draws (docs/generation.md §7)."""

import shutil

import torch

from saltbench.config import InferenceConfig, resolve_block
from saltbench.io import config_hash, inputs_key, model_files_key, provenance, read_table, write_table
from saltbench.stages.generation import DrawRequest, answered_rows, generate_shard, shard_rows
from saltbench.workflow.kept import keep_output, restore_output
from saltbench.workflow.rule_support import job_threads, server_endpoint, setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    threads = job_threads(snakemake)
    torch.set_num_threads(threads)
    wc, params = snakemake.wildcards, snakemake.params
    inference = params.inference
    settings = resolve_block("inference", inference, InferenceConfig)
    dataset = answered_rows(read_table(snakemake.input.dataset, "dataset"), params.max_samples)
    rows = shard_rows(dataset, int(wc.shard), settings.shard_size)
    budget = settings.max_new_tokens_for(wc.task, wc.style)
    spec, output = params.spec, snakemake.output[0]
    draws = DrawRequest.from_config(settings, params.seed) if params.get("draws") else None
    artifact = "generations" if draws is None else "draws"
    seeded = {} if draws is None else {"draws_seed": draws.seed}
    key = inputs_key(
        {
            **seeded,
            "model": wc.model,
            "spec": repr(spec),
            "model_path": str(params.model_path),
            "model_files": model_files_key(params.model_path),
            "backend": params.backend,
            "inference": dict(inference),
            "n_shots": params.n_shots,
            "style": wc.style,
            "task": wc.task,
        },
        rows,
    )
    if restore_output(output, artifact=artifact, inputs_key=key):
        shutil.rmtree(params.request_cache, ignore_errors=True)
        return
    log.info(
        "model %s (%s), %s/%s shard %s: %d prompts, max_new_tokens %d",
        wc.model,
        params.backend,
        wc.style,
        wc.task,
        wc.shard,
        rows.height,
        budget,
    )
    frame = generate_shard(
        rows,
        settings,
        model_name=wc.model,
        model_path=params.model_path,
        spec=params.spec,
        style=wc.style,
        n_shots=params.n_shots,
        backend=params.backend,
        num_threads=threads,
        request_cache=params.request_cache,
        server=server_endpoint(snakemake),
        draws=draws,
    )
    meta = provenance(
        **seeded,
        stage=artifact,
        model=wc.model,
        model_source=repr(spec.source),
        style=wc.style,
        task=wc.task,
        shard=int(wc.shard),
        backend=params.backend,
        config_hash=config_hash(dict(inference)),
        inputs_key=key,
    )
    write_table(frame, output, meta, artifact)
    # a copy survives Snakemake deleting the shard when its group job fails (docs/reliability.md §2.3)
    keep_output(output)
    shutil.rmtree(params.request_cache, ignore_errors=True)  # the shard is written: its requests are done
    counts = frame["finish_reason"].value_counts().to_dicts() if frame.height else []
    log.info("wrote %d %s (%s) to %s", frame.height, artifact, counts, output)


if __name__ == "__main__":  # vLLM spawns its engine process, which re-imports this file
    main(snakemake)  # noqa: F821
