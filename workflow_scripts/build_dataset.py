"""Rule build_dataset: write data/datasets/{task}.parquet."""

from saltbench.config import DatasetsConfig, resolve_block
from saltbench.data import build_dataset
from saltbench.io import config_hash, provenance, write_table
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    task = snakemake.wildcards.task
    cfg = {"seed": snakemake.params.seed, "datasets": snakemake.params.datasets}
    frame = build_dataset(resolve_block("datasets", cfg["datasets"], DatasetsConfig), cfg["seed"], task)
    meta = provenance(stage="datasets", task=task, seed=cfg["seed"], config_hash=config_hash(cfg))
    write_table(frame, snakemake.output[0], meta, "dataset")
    log.info("wrote %d %s samples to %s", frame.height, task, snakemake.output[0])


main(snakemake)  # noqa: F821
