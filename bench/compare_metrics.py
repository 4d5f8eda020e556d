"""Before/after timing of the metrics stage (``compute_metrics``; harness: ``bench/_compare.py``).

Workload: ``compute_metrics`` with both flavours, every confidence function and calibration method and
``--n-bootstrap`` resamples (the default run's 100), on

* ``synthetic[N]`` — one task's units table of ``tests/helpers/synthetic_tables.synthetic_units`` with ``N``
  responses for each ``--samples`` (default 8, the default run's size, and 300, the paper's), ``--atoms``
  atoms per response (default 10–40; the default run's SmolLM2 tables have 20–100), their lines (4 atoms
  each) and the generation;
* ``real[K files]`` — the units files matching ``--units`` (a glob, e.g. a finished run's
  ``data/units/smollm2-135m/*/*.parquet``), one ``compute_metrics`` call each, as the workflow rule
  ``compute_metrics`` runs them for one (model, style).

Results are compared between the trees column by column (floats within 1e-12, NaN equal to NaN).

Run::

    OMP_NUM_THREADS=1 python bench/compare_metrics.py --base 3e18556 --rounds 3 \
        --units '/path/to/run/data/units/smollm2-135m/*/*.parquet'
"""

from __future__ import annotations

import argparse
import glob
import sys
from collections.abc import Callable
from pathlib import Path

import _compare
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.synthetic_tables import synthetic_units  # noqa: E402  (the tests' builder, same in both trees)

from saltbench.config import MetricsConfig  # noqa: E402
from saltbench.io import read_table  # noqa: E402
from saltbench.stages.metrics import compute_metrics  # noqa: E402


def parser() -> argparse.ArgumentParser:
    """The workload's options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--samples", type=int, nargs="*", default=[8, 300], help="responses of the synthetic tables"
    )
    p.add_argument("--atoms", type=int, nargs=2, default=[10, 40], help="range of atoms per response")
    p.add_argument("--units", default="", help="glob of real units files (one case for all of them)")
    p.add_argument("--n-bootstrap", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    return p


def _plain(frame: pl.DataFrame) -> dict[str, object]:
    """A metrics frame as columns: float columns as arrays (compared within 1e-12), others as lists."""
    return {
        c: frame[c].to_numpy() if frame[c].dtype.is_float() else frame[c].to_list() for c in frame.columns
    }


def cases(args: argparse.Namespace) -> dict[str, Callable[[], object]]:
    """The workload, built before timing."""
    settings = MetricsConfig(n_bootstrap=args.n_bootstrap)
    tables: dict[str, list[pl.DataFrame]] = {}
    for n in args.samples:
        atoms = (args.atoms[0], args.atoms[1])
        units = synthetic_units(
            models=("m",),
            styles=("direct",),
            tasks=("dna",),
            n_samples=n,
            atoms_per_sample=atoms,
            seed=args.seed,
        )
        tables[f"synthetic[{n} responses, {units.height} units]"] = [units]
    files = sorted(glob.glob(args.units)) if args.units else []
    if files:
        real = [read_table(f, "units") for f in files]
        tables[f"real[{len(files)} files, {sum(u.height for u in real)} units]"] = real

    # warm-up outside the timing: one-time imports on the first call (scikit-learn for isotonic calibration)
    compute_metrics(next(iter(tables.values()))[0].head(200), settings=MetricsConfig(n_bootstrap=2))

    def run(frames: list[pl.DataFrame]) -> Callable[[], object]:
        return lambda: [
            _plain(compute_metrics(u, flavours=("topk", "full"), settings=settings, seed=args.seed))
            for u in frames
        ]

    return {name: run(frames) for name, frames in tables.items()}


if __name__ == "__main__":
    sys.exit(_compare.main("compare_metrics", parser()))
