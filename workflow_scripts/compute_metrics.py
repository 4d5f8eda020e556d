"""Rule compute_metrics: units -> one row per (granularity, confidence, flavour, calibration, metric)."""

import polars as pl

from saltbench.config import MetricsConfig, resolve_block
from saltbench.core.seeds import derive_seed
from saltbench.io import provenance, read_table, write_table
from saltbench.stages.metrics import compute_metrics
from saltbench.workflow.rule_support import per_task_files, setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    wc, cfg = snakemake.wildcards, snakemake.params.metrics
    settings = resolve_block("metrics", cfg, MetricsConfig)
    for (task, units_path), output in zip(
        per_task_files(snakemake.params.tasks, snakemake.input), snakemake.output, strict=True
    ):
        seed = derive_seed("metrics", snakemake.params.seed, wc.model, wc.style, task) % (2**32)
        metrics = compute_metrics(
            read_table(units_path, "units"), flavours=snakemake.params.flavours, settings=settings, seed=seed
        )
        metrics = metrics.select(
            pl.lit(wc.model).alias("model"),
            pl.lit(wc.style).alias("style"),
            pl.lit(task).alias("task"),
            pl.all(),
        )
        meta = provenance(stage="metrics", model=wc.model, style=wc.style, task=task, seed=seed, metrics=cfg)
        write_table(metrics, output, meta, "metrics")
        log.info("%d metric rows -> %s", metrics.height, output)


main(snakemake)  # noqa: F821
