"""Bring your own generations (docs/backends.md §9), end to end: a simulated model's generations, exported as
JSONL and imported as a second model (source kind generations), give the same units tables — the imported
model goes through the same scoring as the native one on the same prompts."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest
import yaml

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

TASKS = ["dna", "matmul"]


def snakemake(root, configfile, *targets):
    command = [
        sys.executable,
        "-m",
        "snakemake",
        *targets,
        "--cores",
        "2",
        "--profile",
        "profiles/local",
        "--configfile",
        configfile,
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]


def test_an_imported_model_scores_like_the_native_one(tmp_path, copy_workflow):
    root = copy_workflow(tmp_path)
    config = yaml.safe_load((root / "config/simulated.yaml").read_text(encoding="utf-8"))
    config.update(tasks=TASKS, prompt_styles=["direct"], models=["sim-planted"])
    config["datasets"]["n_samples"] = 6
    config["inference"]["shard_size"] = 6
    config["interventions"]["enabled"] = False
    (root / "config/native.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    units = [f"data/units/{{}}/direct/{task}.parquet" for task in TASKS]
    snakemake(root, "config/native.yaml", *(u.format("sim-planted") for u in units))

    export = [
        sys.executable,
        "-m",
        "saltbench.stages.export",
        "data/sim.jsonl",
        "data/generations/sim-planted",
    ]
    subprocess.run(export, cwd=root, check=True, capture_output=True, timeout=120)
    registry = yaml.safe_load((root / "config/models.yaml").read_text(encoding="utf-8"))
    registry["models"]["sim-imported"] = {
        "source": {"kind": "generations", "format": "jsonl", "path": "data/sim.jsonl"}
    }
    (root / "config/models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config["models"] = ["sim-planted", "sim-imported"]
    (root / "config/both.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    snakemake(root, "config/both.yaml", *(u.format("sim-imported") for u in units))

    for unit in units:
        native = pl.read_parquet(root / unit.format("sim-planted")).drop("model")
        imported = pl.read_parquet(root / unit.format("sim-imported")).drop("model")
        assert native.height > 0
        assert imported.equals(native), unit
    record = json.loads((root / "data/generations/sim-imported/import.json").read_text(encoding="utf-8"))
    assert record["imported"] == record["responses"] == 6 * len(TASKS)
    assert record["without_logprobs"] == 0 and len(record["sha256"]) == 64
