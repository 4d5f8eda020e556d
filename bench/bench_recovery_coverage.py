"""Empirical coverage of the study's 95 % intervals on planted truth (docs/simulation.md §5).

Runs the workflow on ``config/simulated.yaml`` (its models' seeds and the dataset seed moved together, its
sample counts optionally scaled down) once per seed, each in a fresh copy of the workflow, up to
``results/tables/recovery.parquet``; then reports, per quantity, how often the interval held the planted
value, the mean error and the mean interval width. Usage::

    .venv/bin/python bench/bench_recovery_coverage.py --seeds 20 --samples 60 --out coverage.parquet
"""

from __future__ import annotations

import argparse
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "rules", "workflow_scripts", "config", "profiles", "report", "environment.yml")
log = logging.getLogger("recovery_coverage")


def prepare(root: Path, seed: int, samples: int | None) -> None:
    """A copy of the workflow whose simulated models and datasets use ``seed``."""
    for name in WORKFLOW_FILES:
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, root / name)
    config = yaml.safe_load((root / "config/simulated.yaml").read_text(encoding="utf-8"))
    config["seed"] = seed
    if samples:
        config["datasets"]["n_samples"] = samples
        config["interventions"]["samples_per_task"] = samples
    (root / "config/simulated.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    registry = yaml.safe_load((root / "config/models.yaml").read_text(encoding="utf-8"))
    for entry in registry["models"].values():
        if entry["source"]["kind"] == "simulated":
            entry["source"].setdefault("parameters", {})["seed"] = 1000 * seed + entry["source"][
                "parameters"
            ].get("seed", 0)
    (root / "config/models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")


def run_seed(seed: int, samples: int | None, cores: int) -> pl.DataFrame:
    with tempfile.TemporaryDirectory(prefix=f"recovery-{seed}-") as folder:
        root = Path(folder)
        prepare(root, seed, samples)
        target = "results/tables/recovery.parquet"
        command = [
            sys.executable,
            "-m",
            "snakemake",
            target,
            "--cores",
            str(cores),
            "--profile",
            "profiles/local",
            "--configfile",
            "config/simulated.yaml",
        ]
        done = subprocess.run(command, cwd=root, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"seed {seed}: the workflow failed:\n{done.stderr[-3000:]}")
        return pl.read_parquet(root / "results/tables/recovery.parquet").with_columns(seed=pl.lit(seed))


def coverage(rows: pl.DataFrame) -> pl.DataFrame:
    """Per quantity: planted values, share inside their intervals, mean error, mean width."""
    return (
        rows.filter(pl.col("inside").is_not_null())
        .group_by("quantity")
        .agg(
            values=pl.len(),
            coverage=pl.col("inside").mean(),
            mean_error=pl.col("error").mean(),
            mean_abs_error=pl.col("error").abs().mean(),
            mean_width=(pl.col("ci_high") - pl.col("ci_low")).mean(),
        )
        .sort("quantity")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--samples", type=int, default=None, help="samples per task (default: the config's)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("recovery_coverage.parquet"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    frames = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        started = time.perf_counter()
        frames.append(run_seed(seed, args.samples, args.cores))
        log.info("seed %d: %.0f s", seed, time.perf_counter() - started)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        pl.concat(frames).write_parquet(args.out)  # every finished seed is kept
    with pl.Config(
        tbl_formatting="MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        float_precision=3,
        tbl_rows=50,
    ):
        print(coverage(pl.concat(frames)))


if __name__ == "__main__":
    main()
