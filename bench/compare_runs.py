"""Compare the outputs of two workflow runs (e.g. the previous main and this tree on the default config).

For every Parquet artifact present in both run folders (datasets, generations, units, metrics,
interventions, tables) the frames are read with their contracts (``saltbench.io.read_table``) and compared
column by column: non-float columns (token ids, texts, statuses, ...) must be equal; float columns (and
lists of floats) must agree within ``--atol`` (NaN equal to NaN). Files only in one run are listed.
Tables are read as plain Parquet (the two runs' code may record different table kinds). Provenance
(commit, timestamps) is not compared. Exit status 1 when anything differs. Run::

    python bench/compare_runs.py /path/to/old/run /path/to/new/run --atol 1e-4
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl

from saltbench.io import read_table

logger = logging.getLogger("compare_runs")

FOLDERS = {
    "data/datasets": "dataset",
    "data/generations": "generations",
    "data/units": "units",
    "results/metrics": "metrics",
    "data/interventions": "interventions",
}


def artifact_files(run: Path) -> dict[str, str | None]:
    """Relative path -> artifact kind (None: a table, whose kind the file records) of every merged output."""
    found: dict[str, str | None] = {}
    for folder, kind in FOLDERS.items():
        for path in sorted((run / folder).rglob("*.parquet")):
            if "shard-" not in path.name:
                found[str(path.relative_to(run))] = kind
    for path in sorted((run / "results/tables").glob("*.parquet")):
        found[str(path.relative_to(run))] = None
    return found


def _float_diff(a: pl.Series, b: pl.Series) -> float:
    """Largest absolute difference of two float (or list-of-float) columns; inf where NaN patterns differ."""
    while a.dtype.is_nested():  # lists (of lists) of floats: same lengths, then element by element
        if not (a.list.len() == b.list.len()).all():
            return float("inf")
        a, b = a.explode(), b.explode()
    x, y = a.cast(pl.Float64).to_numpy(), b.cast(pl.Float64).to_numpy()
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    if not np.array_equal(nan_x, nan_y) or not np.array_equal(np.isinf(x) & (x > 0), np.isinf(y) & (y > 0)):
        return float("inf")
    finite = np.isfinite(x) & np.isfinite(y)
    return float(np.max(np.abs(x[finite] - y[finite]), initial=0.0))


def _is_float(dtype: pl.DataType) -> bool:
    while isinstance(dtype, pl.List):
        dtype = dtype.inner  # type: ignore[assignment]
    return dtype.is_float()


def _read(path: Path, kind: str | None) -> pl.DataFrame:
    return read_table(path, kind) if kind else pl.read_parquet(path)


def compare_frames(old: pl.DataFrame, new: pl.DataFrame, atol: float) -> tuple[list[str], float]:
    """What differs between two frames of one artifact (empty: equal within ``atol``), and the largest
    difference of their float columns."""
    if old.columns != new.columns:
        return [f"columns differ: {old.columns} vs {new.columns}"], float("inf")
    if old.height != new.height:
        return [f"{old.height} rows vs {new.height}"], float("inf")
    problems, largest = [], 0.0
    for name in old.columns:
        a, b = old[name], new[name]
        if _is_float(a.dtype) and _is_float(b.dtype):
            diff = _float_diff(a, b)
            largest = max(largest, diff)
            if diff > atol:
                problems.append(f"{name}: max |diff| {diff:.3g}")
        elif not a.equals(b):
            problems.append(f"{name}: {int((a != b).sum())} of {a.len()} values differ")
    return problems, largest


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__)
    cli.add_argument("old", type=Path)
    cli.add_argument("new", type=Path)
    cli.add_argument("--atol", type=float, default=1e-4, help="tolerance of float columns")
    args = cli.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    old, new = artifact_files(args.old), artifact_files(args.new)
    for only, run in ((old.keys() - new.keys(), args.old), (new.keys() - old.keys(), args.new)):
        for rel in sorted(only):
            logger.warning("only in %s: %s", run, rel)
    summary: Counter[str] = Counter()
    largest: dict[str, float] = {}
    for rel in sorted(old.keys() & new.keys()):
        kind = old[rel]
        problems, diff = compare_frames(_read(args.old / rel, kind), _read(args.new / rel, kind), args.atol)
        stage = rel.split("/")[1]
        summary[f"{stage} {'differ' if problems else 'equal'}"] += 1
        largest[stage] = max(largest.get(stage, 0.0), diff)
        for problem in problems:
            logger.warning("%s: %s", rel, problem)
    for key, count in sorted(summary.items()):
        logger.info("%-24s %d files", key, count)
    for stage, diff in sorted(largest.items()):
        logger.info("largest float difference in %-12s %.3g", stage, diff)
    return 1 if old.keys() ^ new.keys() or any("differ" in k for k in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
