"""Rule merge_generations: concatenate the shards of one (model, style, task)."""

from saltbench.io import provenance, read_provenance, read_table, write_table
from saltbench.rule_support import setup_logging
from saltbench.stages import merge_shards


def main(snakemake) -> None:  # noqa: ANN001 - the object Snakemake injects
    log = setup_logging(snakemake)
    frame = merge_shards([read_table(path, "generations") for path in snakemake.input])
    first = read_provenance(snakemake.input[0])
    meta = provenance(
        **{k: v for k, v in first.items() if k not in ("shard", "version", "git_commit", "package")},
        shards=len(snakemake.input),
    )
    write_table(frame, snakemake.output[0], meta, "generations")
    log.info(
        "merged %d shards, %d generations -> %s", len(snakemake.input), frame.height, snakemake.output[0]
    )


main(snakemake)  # noqa: F821
