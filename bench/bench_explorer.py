"""Build time and size of the explorer (docs/explorer.md §4) as the run grows: a run of the simulated backend
(tests/helpers/simulated_run.py: two models, both prompt styles, the given tasks) at each sample count, then
``build_explorer`` timed on it. Prints one JSON line per size; growth is linear when bytes and seconds per
unit stay flat.

    .venv/bin/python bench/bench_explorer.py --samples 30 60 120 --tasks dna code logic matmul kronecker words
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.simulated_run import simulated_run  # noqa: E402  (the tests' tiny run, at any size)

from saltbench.explorer import build_explorer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[30, 60, 120])
    parser.add_argument(
        "--tasks", nargs="+", default=["dna", "code", "logic", "matmul", "kronecker", "words"]
    )
    parser.add_argument("--repeats", type=int, default=2, help="builds per size (the fastest is reported)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for n in args.samples:
        with tempfile.TemporaryDirectory() as folder:
            run = simulated_run(Path(folder), tasks=args.tasks, n_samples=n, intervention_task=args.tasks[0])
            builds = [
                build_explorer(Path(folder) / f"explorer-{k}", run.cells, run.datasets, run.interventions)
                for k in range(args.repeats)
            ]
            best = min(builds, key=lambda s: s.seconds)
            print(
                json.dumps(
                    {
                        "samples_per_task": n,
                        "responses": best.n_responses,
                        "units": best.n_units,
                        "files": best.n_files,
                        "megabytes": round(best.n_bytes / 1e6, 2),
                        "seconds": round(best.seconds, 2),
                        "bytes_per_unit": round(best.n_bytes / max(best.n_units, 1), 1),
                        "ms_per_1000_units": round(1000 * best.seconds / max(best.n_units, 1) * 1000, 2),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
