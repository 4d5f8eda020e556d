"""Rule compute_metrics: units -> one row per (granularity, confidence, flavour, calibration, metric)."""

import polars as pl

from saltbench.io import provenance, read_table, write_table
from saltbench.metrics_stage import MetricSettings, compute_metrics
from saltbench.rule_support import per_task_files, setup_logging
from saltbench.seeds import derive_seed


def main(snakemake) -> None:  # noqa: ANN001 - the object Snakemake injects
    log = setup_logging(snakemake)
    wc, cfg = snakemake.wildcards, snakemake.params.metrics
    for (task, units_path), output in zip(
        per_task_files(snakemake.params.tasks, snakemake.input), snakemake.output, strict=True
    ):
        seed = derive_seed("metrics", snakemake.params.seed, wc.model, wc.style, task) % (2**32)
        settings = MetricSettings(
            calibration_methods=tuple(cfg["calibration_methods"]),
            calibration_fraction=cfg["calibration_fraction"],
            n_bins=cfg["n_bins"],
            ece_binning=cfg["ece_binning"],
            prr_ties=cfg["prr_ties"],
            n_bootstrap=cfg["n_bootstrap"],
            ci_level=cfg["ci_level"],
            seed=seed,
        )
        metrics = compute_metrics(
            read_table(units_path, "units"), flavours=snakemake.params.flavours, settings=settings
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
