"""Draws through the workflow (docs/generation.md §7): a per_model run of the simulated model writes the
draws tables beside the greedy generations, and asking for other draws reruns the draws jobs only, never a
greedy generation (a killed draws job resuming to identical files:
tests/stages/test_generate_whole_model.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from saltbench.io import read_table

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

MODEL = "sim-planted"
DRAWS = [f"data/draws/{MODEL}/direct/{task}.parquet" for task in ("dna", "logic")]
GREEDY = [f"data/generations/{MODEL}/direct/{task}.parquet" for task in ("dna", "logic")]


def _workflow(root: Path, copy_workflow, **samples: object) -> Path:
    root.mkdir()
    workdir = copy_workflow(root)
    config = yaml.safe_load((workdir / "config/simulated.yaml").read_text(encoding="utf-8"))
    config.update(tasks=["dna", "logic"], prompt_styles=["direct"], models=[MODEL])
    config["datasets"]["n_samples"] = 6
    config["inference"].update(shard_size=3, samples={"n": 3, "temperature": 0.9, **samples})
    config["interventions"]["enabled"] = False
    (workdir / "config/draws.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return workdir


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    options = ["--cores", "1", "--profile", "profiles/local", "--configfile", "config/draws.yaml"]
    command = [sys.executable, "-m", "snakemake", *args, *options]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_draws_are_written_apart_from_greedy(tmp_path, copy_workflow):
    reference = _workflow(tmp_path / "reference", copy_workflow)
    _snakemake(reference, *GREEDY, *DRAWS)
    frames = [read_table(reference / path, "draws") for path in DRAWS]
    for frame in frames:
        assert frame.height == 6 * 3 and frame["draw"].to_list()[:4] == [0, 1, 2, 0]
        assert frame["sample_id"].n_unique() == 6 and frame["text"].n_unique() > 6

    rerun = _snakemake(reference, *GREEDY, *DRAWS, "-n").stdout
    assert "Nothing to be done" in rerun, rerun[-2000:]

    # other draws: the draws jobs run again, the greedy generations do not
    config = yaml.safe_load((reference / "config/draws.yaml").read_text(encoding="utf-8"))
    config["inference"]["samples"]["n"] = 2
    (reference / "config/draws.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    plan = _snakemake(reference, *GREEDY, *DRAWS, "-n").stdout
    assert "generate_draws_model" in plan and "rule generate_model:" not in plan
