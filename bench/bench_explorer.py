"""Build time and size of the explorer (docs/explorer.md §4).

Two modes:

* ``--samples``: a run of the simulated backend (tests/helpers/simulated_run.py: two models, both prompt
  styles, the given tasks) at each sample count, then ``build_explorer`` timed on it. One JSON line per
  size; growth is linear when bytes and seconds per unit stay flat.
* ``--run DIR``: the explorer of a finished run (its ``config/config.yaml`` roster, ``data/`` and
  ``results/metrics``): the one-process build, and, where the package has them, the workflow's jobs — one
  per model (``build_model_part``) and the index (``build_index``) — each timed, so the longest job is
  known. Run it with an older checkout's ``src`` first on ``PYTHONPATH`` to compare with a former build.

    .venv/bin/python bench/bench_explorer.py --samples 30 60 120 --tasks dna code logic matmul kronecker words
    .venv/bin/python bench/bench_explorer.py --run /path/to/a/run --repeats 3
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import logging
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _common import timed  # noqa: E402
from helpers.simulated_run import simulated_run  # noqa: E402  (the tests' tiny run, at any size)

import saltbench.explorer as explorer  # noqa: E402


def simulated(args: argparse.Namespace) -> None:
    """One line per sample count: a simulated run's explorer."""
    for n in args.samples:
        with tempfile.TemporaryDirectory() as folder:
            run = simulated_run(Path(folder), tasks=args.tasks, n_samples=n, intervention_task=args.tasks[0])
            builds = [
                explorer.build_explorer(
                    Path(folder) / f"explorer-{k}", run.cells, run.datasets, run.interventions
                )
                for k in range(args.repeats)
            ]
            best = min(builds, key=lambda s: s.seconds)
            line = {
                "samples_per_task": n,
                "responses": best.n_responses,
                "units": best.n_units,
                "files": best.n_files,
                "megabytes": round(best.n_bytes / 1e6, 2),
                "seconds": round(best.seconds, 2),
                "bytes_per_unit": round(best.n_bytes / max(best.n_units, 1), 1),
                "ms_per_1000_units": round(1000 * best.seconds / max(best.n_units, 1) * 1000, 2),
            }
            print(json.dumps(line), flush=True)


def run_cells(root: Path) -> tuple[list, dict[str, Path], list[Path]]:
    """The cells (in the roster's order), datasets and interventions files of the run in ``root``."""
    config = yaml.safe_load((root / "config" / "config.yaml").read_text(encoding="utf-8"))
    fields = {f.name for f in dataclasses.fields(explorer.CellFiles)}
    cells = []
    for model in config["models"]:
        for style in config["prompt_styles"]:
            for task in config["tasks"]:
                tail = Path(model) / style / f"{task}.parquet"
                extra = {"metrics": root / "results" / "metrics" / tail} if "metrics" in fields else {}
                cells.append(
                    explorer.CellFiles(
                        model,
                        style,
                        task,
                        root / "data" / "units" / tail,
                        root / "data" / "generations" / tail,
                        **extra,
                    )
                )
    datasets = {t: root / "data" / "datasets" / f"{t}.parquet" for t in config["tasks"]}
    interventions = sorted((root / "data" / "interventions").glob("*/*.parquet"))
    return cells, datasets, interventions


def finished_run(args: argparse.Namespace) -> None:
    """One line: the one-process build of a run's explorer and, where the package splits it, each job."""
    cells, datasets, interventions = run_cells(args.run)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        cost, summary = timed(
            lambda: explorer.build_explorer(out / "single", cells, datasets, interventions), args.repeats
        )
        line: dict = {
            "run": str(args.run),
            "package": explorer.__file__,
            "responses": summary.n_responses,
            "units": summary.n_units,
            "megabytes": round(summary.n_bytes / 1e6, 2),
            "one_process_s": round(cost["seconds"], 2),
        }
        if hasattr(explorer, "build_model_part"):
            parts, jobs = [], {}
            for model, model_cells, first in explorer.model_groups(cells):
                part = out / "parts" / model
                cost, _ = timed(
                    functools.partial(explorer.build_model_part, part, model_cells, datasets, first_id=first),
                    args.repeats,
                )
                parts.append(part)
                jobs[model] = round(cost["seconds"], 2)
            cost, _ = timed(
                lambda: explorer.build_index(out / "split", parts, datasets, interventions), args.repeats
            )
            line |= {
                "model_jobs_s": jobs,
                "longest_model_job_s": max(jobs.values()),
                "index_s": round(cost["seconds"], 2),
            }
        print(json.dumps(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[30, 60, 120])
    parser.add_argument(
        "--tasks", nargs="+", default=["dna", "code", "logic", "matmul", "kronecker", "words"]
    )
    parser.add_argument("--run", type=Path, help="a finished run's folder (its explorer is timed instead)")
    parser.add_argument("--repeats", type=int, default=2, help="builds per size (the fastest is reported)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.run:
        finished_run(args)
    else:
        simulated(args)


if __name__ == "__main__":
    main()
