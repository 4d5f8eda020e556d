"""Rule import_generations: a generations source's file -> every style and task's generations table of the
model, and the import record (saltbench.stages.imports; docs/backends.md §9)."""

import json

from saltbench.io import config_hash, provenance, read_table, write_atomic, write_table
from saltbench.stages.imports import import_generations
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    params, model_name = snakemake.params, snakemake.wildcards.model
    spec = params.spec
    datasets = {
        task: read_table(path, "dataset")
        for task, path in zip(params.tasks, snakemake.input.datasets, strict=True)
    }
    result = import_generations(  # refuses the file before anything is written
        snakemake.input.file,
        spec.source.format,
        datasets,
        model_name=model_name,
        styles=params.styles,
        n_shots=params.n_shots,
        max_samples=params.max_samples,
        reasoning=spec.reasoning_format,
        top_k=params.top_k,
        n_draws=params.n_draws,
    )
    imported = {f"import_{key}": value for key, value in result.record.items()}
    settings = config_hash({"n_shots": params.n_shots, "max_samples": params.max_samples})
    tables = [("generations", snakemake.output.generations, result.frames, {})]
    if snakemake.output.draws:  # the draws the file carries, when the run asks for them
        tables.append(("draws", snakemake.output.draws, result.draws, {"n_draws": params.n_draws}))
    for artifact, outputs, frames, extra in tables:
        for (style, task), output in zip(params.outputs, outputs, strict=True):
            frame = frames[(style, task)]
            meta = provenance(
                stage=artifact,
                model=model_name,
                model_source=repr(spec.source),
                backend="import",
                style=style,
                task=task,
                config_hash=settings,
                **extra,
                **imported,
            )
            write_table(frame, output, meta, artifact)
            log.info("wrote %d imported %s to %s", frame.height, artifact, output)
    write_atomic(snakemake.output.record, json.dumps({"model": model_name, **result.record}, indent=2) + "\n")


main(snakemake)  # noqa: F821
