"""A small planted-truth run (docs/simulation.md): three simulated models through the whole workflow, up to
the recovery table; every planted value has an estimate, and for this seed 90 % of those compared lie inside
their 95 % intervals (docs/simulation.md §5; the coverage over seeds is `bench/bench_simulated.py
coverage`'s); then the same at `analysis.granularity: line`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from saltbench.analysis import MIN_CLASS_UNITS, RANKED_COLUMNS, ranked_classes

pytestmark = [pytest.mark.workflow, pytest.mark.slow]
CELL = ["model", "style", "task", "quantity"]


def test_a_small_recovery_run_finds_every_planted_value(tmp_path, copy_workflow):
    root = copy_workflow(tmp_path)
    config = yaml.safe_load((root / "config/simulated.yaml").read_text(encoding="utf-8"))
    config["tasks"] = ["dna", "logic", "matmul", "kronecker"]
    config["datasets"]["n_samples"] = 30
    config["inference"]["shard_size"] = 30
    config["interventions"].update(tasks=["dna", "matmul"], samples_per_task=30, shard_size=30)
    config["metrics"]["n_bootstrap"] = 100
    (root / "config/small-simulated.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "results/tables/recovery.parquet",
        "--cores",
        "2",
        "--profile",
        "profiles/local",
        "--configfile",
        "config/small-simulated.yaml",
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-4000:]

    table = pl.read_parquet(root / "results/tables/recovery.parquet")
    quantities = set(table["quantity"])
    assert {
        *(f"{g}_{q}" for g in ("atom", "line") for q in ("precision", "auroc", "brier", "ece")),
        "truncated_share",
        "reasoning_truncated_share",
        "reasoning_tokens",
        "delta_precision",
        "rel_delta_auroc",
    } <= quantities
    assert {f"intervention_{t}" for t in ("intercept", "corrupted_fraction", "placement_local")} <= quantities
    planted = table.filter(pl.col("planted").is_not_nan())
    # a verdict for every planted value but the draws' and second pass's AUROC of a cell that ranks too
    # few correct or wrong units (docs/simulation.md §10.2): those are exactly the cells the units say
    units = pl.concat(
        ranked_classes(pl.read_parquet(f, columns=list(RANKED_COLUMNS)))
        for f in sorted((root / "data/units").glob("*/*/*.parquet"))
    )
    few = units.filter(pl.min_horizontal("n_correct", "n_wrong") < MIN_CLASS_UNITS).select(CELL)
    held = planted.filter(pl.col("inside").is_null())
    assert held.select(CELL).sort(CELL).equals(few.join(planted, on=CELL).select(CELL).sort(CELL))
    assert held.height and held["quantity"].str.contains("_auroc_").all()  # whole answers; DNA's one line
    assert planted.filter(quantity="generation_auroc_p_true")["inside"].is_not_null().any()
    assert table.filter(pl.col("planted").is_nan())["inside"].is_null().all()  # not planted: no verdict
    # precision planted for the model whose answers are cut, and the line latent's lines
    assert planted.filter(quantity="atom_precision", model="sim-planted-reason").height == 2 * 4
    assert planted.filter(quantity="line_auroc", model="sim-planted-lines").height == 2 * 4
    # the ECE estimate is biased upward in cells this small (docs/simulation.md §5): not counted here
    unbiased = planted.filter(~pl.col("quantity").str.ends_with("_ece"), pl.col("inside").is_not_null())
    outside = unbiased.filter(~pl.col("inside")).select(
        "model", "style", "task", "quantity", "planted", "estimate"
    )
    assert outside.height <= 0.1 * unbiased.height, outside.to_dicts()
    health = pl.read_parquet(root / "results/tables/generation_health.parquet")
    reason = health.filter(pl.col("model") == "sim-planted-reason")
    assert (reason["mean_reasoning_tokens"] > 0).all() and reason["truncated"].sum() > 0
    # responses cut inside their thinking: truncated, every token reasoning, no answer unit
    units = pl.read_parquet(sorted((root / "data/units/sim-planted-reason").glob("*/*.parquet")))
    cut = units.filter(pl.col("num_reasoning_tokens") == pl.col("num_generated_tokens"))
    assert cut.height and set(cut["answer_status"].cast(pl.String)) == {"truncated"}
    assert (cut["num_generated_tokens"] == 2048).all() and set(cut["status"].cast(pl.String)) == {"missing"}
    thinking = table.filter(pl.col("quantity").str.starts_with("reasoning_"))
    assert set(thinking["model"]) == {"sim-planted-reason"} and thinking.height == 2 * 2 * 4
    assert Path(root / "results/tables/recovery.csv").is_file()
    # the table's job run by hand (saltbench.workflow.debug): Snakemake resolves its named inputs and params
    # from the same config file, and the script writes the bytes the run wrote
    debug = [sys.executable, "-m", "saltbench.workflow.debug", "table_recovery", "--into", "debug"]
    done = subprocess.run(
        [*debug, "--configfile", "config/small-simulated.yaml"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for suffix in ("parquet", "csv"):
        ours = (root / f"debug/results/tables/recovery.{suffix}").read_bytes()
        assert ours == (root / f"results/tables/recovery.{suffix}").read_bytes(), suffix

    # at analysis.granularity: line the trade-off compares lines, and so does its planted value: planted
    # where the lines' AUROC is (the line latent), not planted where a line mixes atoms' latents
    config.setdefault("analysis", {})["granularity"] = "line"
    (root / "config/small-line.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    command[-1] = "config/small-line.yaml"
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = pl.read_parquet(root / "results/tables/recovery.parquet")
    trade = lines.filter(pl.col("quantity") == "rel_delta_auroc")
    tasks = config["tasks"]
    auroc = lines.filter(quantity="line_auroc", model="sim-planted-lines")
    mean = {s: auroc.filter(style=s)["planted"].mean() for s in ("direct", "cot")}
    ours = trade.filter(pl.col("model") == "sim-planted-lines:direct→sim-planted-lines:cot")
    assert auroc.height == 2 * len(tasks) and ours["inside"].is_not_null().all()
    assert ours["planted"][0] == pytest.approx(mean["cot"] / mean["direct"] - 1)  # type: ignore[operator]
    mixed = trade.filter(pl.col("model") == "sim-planted:direct→sim-planted:cot")
    assert mixed["planted"].is_nan().all() and mixed["inside"].is_null().all()
