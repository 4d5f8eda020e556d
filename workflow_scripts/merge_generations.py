"""Rules merge_generations and merge_draws: concatenate the shards of each task of one (model, style)."""

from saltbench.io import provenance, read_provenance, read_table, write_table
from saltbench.stages.generation import merge_shards
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    artifact = "draws" if snakemake.params.get("draws") else "generations"
    for task, output in zip(snakemake.params.tasks, snakemake.output, strict=True):
        shards = snakemake.input[task]
        frame = merge_shards([read_table(path, artifact) for path in shards])
        first = read_provenance(shards[0])
        meta = provenance(
            **{k: v for k, v in first.items() if k not in ("shard", "version", "git_commit", "package")},
            shards=len(shards),
        )
        write_table(frame, output, meta, artifact)
        log.info("merged %d shards, %d %s rows -> %s", len(shards), frame.height, artifact, output)


main(snakemake)  # noqa: F821
