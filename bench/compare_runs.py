"""Compare two workflow runs: their outputs artifact by artifact, or the default run of a base revision and
of the working tree side by side, timed, then their outputs.

Outputs (``OLD NEW``): for every Parquet artifact present in both run folders (datasets, generations, units,
metrics, interventions, tables) the frames are read with their contracts (``saltbench.io.read_table``) and
compared column by column: non-float columns (token ids, texts, statuses, ...) must be equal; float columns
(and lists of floats) must agree within ``--atol`` (NaN equal to NaN). Files only in one run are listed.
Tables are read as plain Parquet (the two runs' code may record different table kinds). Provenance
(commit, timestamps) is not compared.

Default run (``--base REV``): each round runs the README's first command, ``snakemake --cores 2 --profile
profiles/local``, from scratch — in a fresh copy of the base revision (``git worktree``) and in a fresh copy
of the working tree (its tracked and untracked, not ignored files), alternating base / new — and records
the wall time, the job count and how many lines of ``results/findings.md`` say "not enough data". Both copies
import their own ``src/`` and run under this interpreter, so the packages are the same; the base's SmolLM2
conversion, like the new one's, runs from scratch. Prints every run and the minimum per tree with the
ratio, then compares the last round's outputs as above (a base with another configuration does other work:
then the timing is of the same kind of result, not of the same numbers).

Exit status 1 when any output differs. Run::

    python bench/compare_runs.py /path/to/old/run /path/to/new/run --atol 1e-4
    python bench/compare_runs.py --base 3e18556 --rounds 2 --atol 0     # on an otherwise idle machine
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
from _common import REPO, snakemake
from compare import worktree

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
    from saltbench.io import read_table

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


def compare_outputs(old_run: Path, new_run: Path, atol: float) -> int:
    """Log what differs between two run folders and a summary per stage; 1 when anything differs."""
    old, new = artifact_files(old_run), artifact_files(new_run)
    for only, run in ((old.keys() - new.keys(), old_run), (new.keys() - old.keys(), new_run)):
        for rel in sorted(only):
            logger.warning("only in %s: %s", run, rel)
    summary: Counter[str] = Counter()
    largest: dict[str, float] = {}
    for rel in sorted(old.keys() & new.keys()):
        kind = old[rel]
        problems, diff = compare_frames(_read(old_run / rel, kind), _read(new_run / rel, kind), atol)
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


def copy_tree(src: Path, dest: Path) -> Path:
    """The files git tracks in ``src`` (and, for the working tree, the untracked ones it does not ignore)."""
    listed = subprocess.run(
        ["git", "-C", str(src), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (src / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / name, dest / name)
    shared = src.parent / "shared"  # config.yaml's paper_path points beside the checkout
    if shared.is_dir() and not (dest.parent / "shared").exists():
        (dest.parent / "shared").symlink_to(shared)
    return dest


def default_run(tree: Path, work: Path, cores: int) -> dict[str, float]:
    """The default run in ``work``, a fresh copy of ``tree``: wall seconds, jobs, 'not enough data' lines."""
    copy_tree(tree, work)
    env = {**os.environ, "PYTHONPATH": str(work / "src")}
    started = time.perf_counter()
    proc = snakemake(work, "--cores", str(cores), "--profile", "profiles/local", env=env)
    wall = time.perf_counter() - started
    done = re.findall(r"(\d+) of (\d+) steps \(100%\) done", proc.stdout + proc.stderr)
    findings = (work / "results" / "findings.md").read_text(encoding="utf-8")
    return {
        "wall_s": wall,
        "jobs": int(done[-1][1]) if done else -1,
        "not_enough": findings.count("not enough data"),
    }


def side_by_side(args: argparse.Namespace) -> int:
    """``--rounds`` alternating default runs of the base and the working tree; the last round's outputs."""
    runs: dict[str, list[dict[str, float]]] = {"base": [], "new": []}
    with worktree(args.base) as base, tempfile.TemporaryDirectory(prefix="saltbench-run-") as tmp:
        for rnd in range(1, args.rounds + 1):
            for side, tree in (("base", base), ("new", REPO)):
                work = Path(tmp) / side / "main"  # ../shared beside it, as beside the checkout
                shutil.rmtree(work.parent, ignore_errors=True)
                result = default_run(tree, work, args.cores)
                runs[side].append(result)
                print(
                    f"round {rnd} {side}: {result['wall_s']:.0f} s, {result['jobs']:.0f} jobs, "
                    f"{result['not_enough']:.0f} 'not enough data' lines",
                    flush=True,
                )
        best = {side: min(r["wall_s"] for r in rs) for side, rs in runs.items()}
        print(
            f"\nbase {args.base}: {best['base']:.0f} s; working tree: {best['new']:.0f} s; new / base = "
            f"{best['new'] / best['base']:.2f} (minimum of {args.rounds} alternating rounds)\n",
            flush=True,
        )
        return compare_outputs(Path(tmp) / "base" / "main", Path(tmp) / "new" / "main", args.atol)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("runs", type=Path, nargs="*", metavar="RUN", help="two run folders: OLD NEW")
    cli.add_argument("--atol", type=float, default=1e-4, help="tolerance of float columns")
    cli.add_argument("--base", help="run the default run of this revision and of the working tree instead")
    cli.add_argument("--rounds", type=int, default=2, help="alternating base/new rounds (with --base)")
    cli.add_argument("--cores", type=int, default=2, help="snakemake --cores (with --base)")
    args = cli.parse_args(argv)
    if (args.base and args.runs) or (not args.base and len(args.runs) != 2):
        cli.error("give two run folders (OLD NEW) or --base REV, not both")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    return side_by_side(args) if args.base else compare_outputs(args.runs[0], args.runs[1], args.atol)


if __name__ == "__main__":
    sys.exit(main())
