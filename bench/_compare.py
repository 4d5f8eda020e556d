"""Before/after comparison shared by the ``bench/compare_*.py`` scripts.

One workload runs against two source trees of this repository — a base revision checked out as a
temporary ``git worktree`` ("before") and the working tree ("after") — in fresh worker processes,
alternating before/after for ``--rounds`` rounds. Each case's time is the minimum over rounds (and over
the repeats inside a round): on a shared, noisy machine the minimum of alternating runs is the steadiest
ratio. Every case's results are compared between the two trees, so a speed-up that changes a result is
reported as such instead of as a speed-up.

A compare script defines ``cases(args) -> dict[str, Callable[[], object]]`` (the workload, built before
timing, using only API present in both trees) and calls :func:`main`. Run, e.g.::

    python bench/compare_evaluation.py --base 98dd4b4 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import math
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger("bench.compare")

REPO = Path(__file__).resolve().parent.parent
Cases = Callable[[argparse.Namespace], dict[str, Callable[[], object]]]


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


def _worker(module: str, argv: list[str], repeats: int, out: Path) -> None:
    """Time every case of ``module`` in this process (minimum of ``repeats``) and pickle times and results."""
    mod = importlib.import_module(module)
    args = mod.parser().parse_args(argv)
    cases = mod.cases(args)
    times: dict[str, float] = {}
    results: dict[str, object] = {}
    for name, fn in cases.items():
        best = math.inf
        for _ in range(repeats):
            started = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - started)
        times[name], results[name] = best, result
    out.write_bytes(pickle.dumps({"times": times, "results": _plain(results)}))


def _plain(value: object) -> object:
    """Results in a form the other tree can unpickle (no classes of either tree's package)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {"__type__": type(value).__name__, **{k: _plain(v) for k, v in vars(value).items()}}
    return value


def _run_side(src: Path, module: str, argv: list[str], repeats: int) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".pkl") as out:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src / "src"), str(REPO / "bench")])}
        cmd = [sys.executable, "-m", "_compare", "--worker", module, "--repeats", str(repeats)]
        subprocess.run([*cmd, "--out", out.name, "--", *argv], check=True, env=env, cwd=REPO / "bench")
        return pickle.loads(Path(out.name).read_bytes())


def main(module: str, parser: argparse.ArgumentParser) -> int:
    """Parse ``--base/--rounds/--repeats`` plus the workload's own options, compare, print a ratio table.

    Exit status 1 when any case's results differ between the trees.
    """
    parser.add_argument("--base", default="HEAD", help="base revision (before); the working tree is after")
    parser.add_argument("--rounds", type=int, default=3, help="alternating before/after rounds")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of each case inside a round")
    args, _ = parser.parse_known_args()
    own = {"--base", "--rounds", "--repeats"}
    argv, skip = [], False
    for token in sys.argv[1:]:  # forward the workload's options only
        if skip:
            skip = False
            continue
        if token.split("=")[0] in own:
            skip = "=" not in token
            continue
        argv.append(token)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    best: dict[str, dict[str, float]] = {"before": {}, "after": {}}
    results: dict[str, dict[str, object]] = {}
    with worktree(args.base) as base:
        for rnd in range(args.rounds):
            for side, src in (("before", base), ("after", REPO)):
                run = _run_side(src, module, argv, args.repeats)
                results[side] = run["results"]
                for name, t in run["times"].items():
                    best[side][name] = min(best[side].get(name, math.inf), t)
                logger.info("round %d %s done", rnd + 1, side)
    differ = [n for n in best["after"] if not same(results["before"].get(n), results["after"][n])]
    print(f"\nbase {args.base} vs working tree, minimum of {args.rounds} alternating rounds x {args.repeats}")
    print(f"{'case':<44} {'before s':>10} {'after s':>10} {'ratio':>8}  results")
    for name in best["after"]:
        before, after = best["before"].get(name, math.nan), best["after"][name]
        flag = "DIFFER" if name in differ else "same"
        print(f"{name:<44} {before:>10.4f} {after:>10.4f} {before / after:>7.2f}x  {flag}")
    return 1 if differ else 0


if __name__ == "__main__":
    cli = argparse.ArgumentParser()
    cli.add_argument("--worker", required=True)
    cli.add_argument("--repeats", type=int, default=1)
    cli.add_argument("--out", type=Path, required=True)
    cli.add_argument("rest", nargs=argparse.REMAINDER)
    ns = cli.parse_args()
    _worker(ns.worker, [a for a in ns.rest if a != "--"], ns.repeats, ns.out)
