"""Draws through the workflow (docs/generation.md §7): a per_model run of the simulated model writes the
draws tables beside the greedy generations, its units gain the consistency columns (docs/confidence.md §7),
generation health counts the draws, and asking for other draws reruns the draws jobs only, never a greedy
generation (a killed draws job resuming to identical files: tests/stages/test_generate_whole_model.py); the
same generations and draws imported from a JSONL file give the same units."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from saltbench.inference.imports import DRAW_KEYS, write_jsonl
from saltbench.io import read_table

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

MODEL = "sim-planted"
DRAWS = [f"data/draws/{MODEL}/direct/{task}.parquet" for task in ("dna", "logic")]
GREEDY = [f"data/generations/{MODEL}/direct/{task}.parquet" for task in ("dna", "logic")]
UNITS = [f"data/units/{MODEL}/direct/{task}.parquet" for task in ("dna", "logic")]
HEALTH = "results/tables/generation_health.parquet"


def _workflow(root: Path, copy_workflow, **samples: object) -> Path:
    root.mkdir()
    workdir = copy_workflow(root)
    config = yaml.safe_load((workdir / "config/simulated.yaml").read_text(encoding="utf-8"))
    config.update(tasks=["dna", "logic"], prompt_styles=["direct"], models=[MODEL])
    config["datasets"]["n_samples"] = 6
    config["inference"].update(shard_size=3, samples={"n": 3, "temperature": 0.9, **samples})
    config["inference"].pop("second_pass", None)  # an imported model is not asked: the units compare alike
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
    _snakemake(reference, *UNITS, HEALTH)
    frames = [read_table(reference / path, "draws") for path in DRAWS]
    for frame in frames:
        assert frame.height == 6 * 3 and frame["draw"].to_list()[:4] == [0, 1, 2, 0]
        assert frame["sample_id"].n_unique() == 6 and frame["text"].n_unique() > 6
    # the units gain the consistency columns (docs/confidence.md §7): defined on every answered unit
    for path in UNITS:
        units = read_table(reference / path, "units")
        answered = units.filter(pl.col("status") != "missing")
        assert answered.height and answered["draws.agreement"].is_between(0, 1).all()
        assert answered["draws.distinct"].is_between(1, 3).all()
        assert units.filter(pl.col("status") == "missing")["draws.entropy"].is_nan().all()
    # generation health counts them: 3 draws of each of the 6 prompts per task
    health = read_table(reference / HEALTH, "table.generation_health")
    assert health["draws_expected"].to_list() == [18, 18] and health["draws"].to_list() == [18, 18]
    assert health["draw_errors"].to_list() == [0, 0] and health["draws_answered"].is_between(0, 1).all()

    rerun = _snakemake(reference, *UNITS, "-n").stdout
    assert "Nothing to be done" in rerun, rerun[-2000:]

    # other draws: the draws jobs run again, the greedy generations do not
    config = yaml.safe_load((reference / "config/draws.yaml").read_text(encoding="utf-8"))
    config["inference"]["samples"]["n"] = 2
    (reference / "config/draws.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    plan = _snakemake(reference, *UNITS, "-n").stdout
    assert "generate_draws_model" in plan and "rule generate_model:" not in plan
    assert "rule score_units:" in plan

    # the same draws imported (a JSONL file whose lines carry them, docs/backends.md §9.7) give the same units
    config["inference"]["samples"]["n"] = 3
    config["models"] = [MODEL, "sim-imported"]
    (reference / "config/draws.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    _write_import(reference, "data/sim.jsonl")
    imported = [path.replace(MODEL, "sim-imported") for path in UNITS]
    _snakemake(reference, *imported)
    for native, path in zip(UNITS, imported, strict=True):
        want = read_table(reference / native, "units").drop("model")
        assert read_table(reference / path, "units").drop("model").equals(want), path


def _write_import(workdir: Path, path: str) -> None:
    """sim-planted's generations and draws as one JSONL file (each line's draws under ``draws``), registered
    as the model sim-imported."""
    lines: list[dict] = []
    for task in ("dna", "logic"):
        greedy = workdir / "greedy.jsonl"
        write_jsonl(
            read_table(workdir / f"data/generations/{MODEL}/direct/{task}.parquet", "generations"), greedy
        )
        drawn = workdir / "drawn.jsonl"
        write_jsonl(read_table(workdir / f"data/draws/{MODEL}/direct/{task}.parquet", "draws"), drawn)
        draws: dict[str, list[dict]] = {}
        for line in drawn.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            sample_id = entry["sample_id"]
            draws.setdefault(sample_id, []).append({k: v for k, v in entry.items() if k in DRAW_KEYS})
        for line in greedy.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            lines.append({**entry, "draws": draws[entry["sample_id"]]})
    (workdir / path).write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    registry = yaml.safe_load((workdir / "config/models.yaml").read_text(encoding="utf-8"))
    registry["models"]["sim-imported"] = {"source": {"kind": "generations", "format": "jsonl", "path": path}}
    (workdir / "config/models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
