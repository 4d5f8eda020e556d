"""Rule merge_generations: concatenate the shards of each task of one (model, style)."""

from saltbench.io import provenance, read_provenance, read_table, write_table
from saltbench.stages.generation import merge_shards
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    for task, output in zip(snakemake.params.tasks, snakemake.output, strict=True):
        shards = snakemake.input[task]
        frame = merge_shards([read_table(path, "generations") for path in shards])
        first = read_provenance(shards[0])
        meta = provenance(
            **{k: v for k, v in first.items() if k not in ("shard", "version", "git_commit", "package")},
            shards=len(shards),
        )
        write_table(frame, output, meta, "generations")
        log.info("merged %d shards, %d generations -> %s", len(shards), frame.height, output)


main(snakemake)  # noqa: F821
