"""Rule merge_interventions: concatenate the intervention shards of one (model, task)."""

from saltbench.io import provenance, read_provenance, read_table, write_table
from saltbench.stages.interventions import merge_intervention_shards
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    frame = merge_intervention_shards([read_table(path, "interventions") for path in snakemake.input])
    first = read_provenance(snakemake.input[0])
    kept = {k: v for k, v in first.items() if k not in ("shard", "version", "git_commit", "package")}
    meta = provenance(**kept, shards=len(snakemake.input))
    write_table(frame, snakemake.output[0], meta, "interventions")
    log.info(
        "merged %d shards, %d interventions -> %s", len(snakemake.input), frame.height, snakemake.output[0]
    )


main(snakemake)  # noqa: F821
