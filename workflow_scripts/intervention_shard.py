"""Rule intervention_shard: atom-level interventions of one shard of a task's samples for one model."""

import shutil

from saltbench.interventions import InterventionOptions
from saltbench.io import config_hash, inputs_key, model_files_key, provenance, read_table, write_table
from saltbench.stages.interventions import intervention_shard, select_shard
from saltbench.workflow.kept import keep_output, restore_output
from saltbench.workflow.rule_support import job_threads, server_endpoint, setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    wc, params = snakemake.wildcards, snakemake.params
    options = InterventionOptions.from_dict(params.options)
    rows = select_shard(read_table(snakemake.input.dataset, "dataset"), options, int(wc.shard))
    log.info("model %s, %s shard %s: %d samples", wc.model, wc.task, wc.shard, rows.height)
    output = snakemake.output[0]
    key = inputs_key(
        {
            "model": wc.model,
            "spec": repr(params.spec),
            "model_path": str(params.model_path),
            "model_files": model_files_key(params.model_path),
            "backend": params.backend,
            "options": options.as_dict(),
            "n_shots": params.n_shots,
            "top_k": params.top_k,
            "task": wc.task,
        },
        rows,
    )
    if restore_output(output, artifact="interventions", inputs_key=key):
        shutil.rmtree(params.request_cache, ignore_errors=True)
        return
    import torch

    threads = job_threads(snakemake)
    torch.set_num_threads(threads)
    frame = intervention_shard(
        rows,
        options,
        model_name=wc.model,
        model_path=params.model_path,
        spec=params.spec,
        n_shots=params.n_shots,
        top_k=params.top_k,
        backend=params.backend,
        num_threads=threads,
        request_cache=params.request_cache,
        server=server_endpoint(snakemake),
    )
    meta = provenance(
        stage="interventions",
        model=wc.model,
        model_source=repr(params.spec.source),
        task=wc.task,
        backend=params.backend,
        shard=int(wc.shard),
        seed=options.seed,
        config_hash=config_hash(options.as_dict()),
        inputs_key=key,
    )
    write_table(frame, output, meta, "interventions")
    # a copy survives Snakemake deleting the shard when its group job fails (docs/reliability.md §2.3)
    keep_output(output)
    shutil.rmtree(params.request_cache, ignore_errors=True)  # the shard is written: its requests are done
    accuracy = frame["next_correct"].mean() if frame.height else float("nan")
    log.info("wrote %d interventions (next-atom accuracy %.3f) to %s", frame.height, accuracy, output)


if __name__ == "__main__":  # vLLM spawns its engine process, which re-imports this file
    main(snakemake)  # noqa: F821
