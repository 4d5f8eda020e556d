"""Rule second_pass: one model asked about the units of its own greedy answers (verbalized confidence,
P(True)), every style and task from one model load; each task's table written (and kept) as soon as it is
done, so a rerun after a kill asks only the rest (docs/confidence.md §8)."""

import shutil

import torch

from saltbench.config import InferenceConfig, resolve_block
from saltbench.io import config_hash, model_files_key, read_provenance
from saltbench.stages.second_pass import SecondPassFile, SecondPassPlan, UnitSettings, second_pass_model
from saltbench.workflow.kept import keep_output, restore_output
from saltbench.workflow.rule_support import job_model, job_threads, setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    threads = job_threads(snakemake)
    torch.set_num_threads(threads)
    model_name, params = snakemake.wildcards.model, snakemake.params
    settings = resolve_block("inference", params.inference, InferenceConfig)
    plan = SecondPassPlan.from_config(settings.second_pass)
    scoring, spec = params.scoring, params.spec
    units = UnitSettings(
        scoring["alignment"], scoring["keyword_filter"], scoring["fence_rule"], spec.reasoning_format
    )
    meta = {"stage": "second_pass", "model": model_name, "backend": params.backend, "plan": repr(plan)}
    key = config_hash(
        {**meta, "spec": repr(spec), "units": repr(units), "n_shots": params.n_shots,
         "model_files": model_files_key(params.model_path)}
    )  # fmt: skip
    datasets = dict(zip(params.tasks, snakemake.input.datasets, strict=True))
    files = []
    for (style, task), generations, output in zip(
        params.outputs, snakemake.input.generations, snakemake.output, strict=True
    ):
        source = read_provenance(generations)  # the generations' own key, or their whole record
        inputs = {"key": key, "style": style, "task": task, "generations": source.get("inputs_key", source)}
        files.append(SecondPassFile(style, task, generations, datasets[task], output, config_hash(inputs)))

    second_pass_model(
        files,
        lambda: job_model(snakemake, spec, settings, threads),
        plan=plan,
        units=units,
        n_shots=params.n_shots,
        meta=meta,
        restore=lambda output, key: restore_output(output, artifact="second_pass", inputs_key=key),
        keep=keep_output,
    )
    shutil.rmtree(params.request_cache, ignore_errors=True)


if __name__ == "__main__":  # vLLM spawns its engine process, which re-imports this file
    main(snakemake)  # noqa: F821
