"""Before/after: a workload on a base revision and on the working tree, alternating (docs/performance.md §2).

The workload (``_workloads.py``: ``evaluation``, ``confidence``, ``metrics``, ``planning``) runs against two
source trees of this repository — a base revision checked out as a temporary ``git worktree`` ("before") and
the working tree ("after") — in fresh worker processes, alternating before/after for ``--rounds`` rounds.
Each case's time is the minimum over rounds (and over the ``--repeats`` inside a round): on a shared, noisy
machine the minimum of alternating runs is the steadiest ratio. Every case's results are compared between
the two trees (floats within 1e-12, NaN equal to NaN), so a speed-up that changes a result is reported as
such instead of as a speed-up; the exit status is 1 when any case's results differ. Run, e.g.::

    OMP_NUM_THREADS=1 python bench/compare.py evaluation --base 98dd4b4 --rounds 3
    python bench/compare.py metrics --help
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import REPO
from _workloads import WORKLOADS

logger = logging.getLogger("bench.compare")
HARNESS_OPTIONS = ("workload", "base", "rounds", "repeats")


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A detached ``git worktree`` of ``rev`` in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="saltbench-base-") as tmp:
        path = Path(tmp) / "tree"
        git = ["git", "-C", str(REPO), "worktree"]
        subprocess.run([*git, "add", "--detach", "-q", str(path), rev], check=True)
        try:
            yield path
        finally:
            subprocess.run([*git, "remove", "--force", str(path)], check=False)


def same(a: object, b: object, tol: float = 1e-12) -> bool:
    """Equal results: containers element-wise, floats (and float arrays) within ``tol``, NaN equal to NaN."""
    if isinstance(a, float | np.floating) and isinstance(b, float | np.floating):
        return (math.isnan(a) and math.isnan(b)) or abs(float(a) - float(b)) <= tol
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape:
            return False
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            return bool(np.allclose(x, y, rtol=0.0, atol=tol, equal_nan=True))
        return bool(np.array_equal(x, y))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b, strict=True))
    if hasattr(a, "equals") and type(a) is type(b):  # polars frames and series
        return bool(a.equals(b))
    if hasattr(a, "__dict__") and type(a).__name__ == type(b).__name__:  # dataclasses of either tree
        return same(vars(a), vars(b), tol)
    return a == b


def plain(value: object) -> object:
    """Results in a form the other tree can unpickle (no classes of either tree's package)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {"__type__": type(value).__name__, **{k: plain(v) for k, v in vars(value).items()}}
    return value


def run_cases(workload: str, options: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Every case of ``workload`` in this process, each the least of ``repeats``: times and plain results."""
    cases = WORKLOADS[workload].cases(argparse.Namespace(**options))
    times: dict[str, float] = {}
    results: dict[str, object] = {}
    for name, fn in cases.items():
        best = math.inf
        for _ in range(repeats):
            started = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - started)
        times[name], results[name] = best, result
    return {"times": times, "results": plain(results)}


def _run_side(src: Path, workload: str, options: dict[str, Any], repeats: int) -> dict[str, Any]:
    """One round of one tree: a worker process importing ``src``'s package."""
    with tempfile.NamedTemporaryFile(suffix=".pkl") as out:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src / "src"), str(REPO / "bench")])}
        worker = ["--worker", workload, str(repeats), out.name, json.dumps(options)]
        subprocess.run([sys.executable, "-m", "compare", *worker], check=True, env=env, cwd=REPO / "bench")
        result: dict[str, Any] = pickle.loads(Path(out.name).read_bytes())
        return result


def parser() -> argparse.ArgumentParser:
    """The harness's options and, per workload, the workload's own."""
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness = argparse.ArgumentParser(add_help=False)
    harness.add_argument("--base", default="HEAD", help="base revision (before); the working tree is after")
    harness.add_argument("--rounds", type=int, default=3, help="alternating before/after rounds")
    harness.add_argument("--repeats", type=int, default=3, help="repeats of each case inside a round")
    commands = cli.add_subparsers(dest="workload", required=True, metavar="WORKLOAD")
    for name, workload in WORKLOADS.items():
        sub = commands.add_parser(
            name,
            parents=[harness],
            help=workload.summary,
            description=workload.summary + "\n\n" + workload.details,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        workload.arguments(sub)
    return cli


def report(args: argparse.Namespace, best: dict[str, dict[str, float]], differ: Sequence[str]) -> None:
    """The ratio table: per case, the minimum before and after, the ratio and whether the results agree."""
    print(f"\nbase {args.base} vs working tree, minimum of {args.rounds} alternating rounds x {args.repeats}")
    print(f"{'case':<44} {'before s':>10} {'after s':>10} {'ratio':>8}  results")
    for name in best["after"]:
        before, after = best["before"].get(name, math.nan), best["after"][name]
        flag = "DIFFER" if name in differ else "same"
        print(f"{name:<44} {before:>10.4f} {after:>10.4f} {before / after:>7.2f}x  {flag}")


def main(argv: list[str]) -> int:
    """Compare one workload before and after; exit status 1 when any case's results differ."""
    if argv[:1] == ["--worker"]:  # one side of one round, started by _run_side
        workload, repeats, out, given = argv[1:]
        Path(out).write_bytes(pickle.dumps(run_cases(workload, json.loads(given), int(repeats))))
        return 0
    args = parser().parse_args(argv)
    options = {k: v for k, v in vars(args).items() if k not in HARNESS_OPTIONS}
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    best: dict[str, dict[str, float]] = {"before": {}, "after": {}}
    results: dict[str, dict[str, object]] = {}
    with worktree(args.base) as base:
        for rnd in range(args.rounds):
            for side, src in (("before", base), ("after", REPO)):
                run = _run_side(src, args.workload, options, args.repeats)
                results[side] = run["results"]
                for name, t in run["times"].items():
                    best[side][name] = min(best[side].get(name, math.inf), t)
                logger.info("round %d %s done", rnd + 1, side)
    differ = [n for n in best["after"] if not same(results["before"].get(n), results["after"][n])]
    report(args, best, differ)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
