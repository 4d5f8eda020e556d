"""The README's first command (the default run) side by side: a base revision against the working tree.

Each round runs ``snakemake --cores 2 --profile profiles/local`` from scratch — in a fresh copy of the base
revision (``git worktree``) and in a fresh copy of the working tree (its tracked and untracked, not ignored
files), alternating base / new — and records the wall time, the job count and how many lines of
``results/findings.md`` say "not enough data". Both copies import their own ``src/`` (``PYTHONPATH``) and run
under this interpreter, so the packages are the same; the base's SmolLM2 conversion, like the new one's,
runs from scratch (a fresh clone). Prints every run and the minimum per tree with the ratio. Run, on an
otherwise idle machine::

    python bench/compare_default_run.py --base 3e18556 --rounds 2

The two runs do different work (another configuration): this measures time to the same kind of result, the
study's tables, figures and findings page, not the same numbers.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _compare import REPO, worktree


def _copy_tree(src: Path, dest: Path) -> Path:
    """The files git tracks in ``src`` (and, for the working tree, the untracked ones it does not ignore)."""
    listed = (
        subprocess.run(
            ["git", "-C", str(src), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        if (src / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / name, dest / name)
    shared = src.parent / "shared"  # config.yaml's paper_path points beside the checkout
    if shared.is_dir() and not (dest.parent / "shared").exists():
        (dest.parent / "shared").symlink_to(shared)
    return dest


def run_once(tree: Path, cores: int) -> dict[str, object]:
    """One default run in a fresh copy of ``tree``: wall seconds, jobs, 'not enough data' lines."""
    with tempfile.TemporaryDirectory(prefix="saltbench-run-") as tmp:
        work = _copy_tree(tree, Path(tmp) / "main")
        env = {**os.environ, "PYTHONPATH": str(work / "src")}
        cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--profile", "profiles/local"]
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"default run failed in {work}:\n{proc.stderr[-3000:]}")
        done = re.findall(r"(\d+) of (\d+) steps \(100%\) done", proc.stdout + proc.stderr)
        findings = (work / "results" / "findings.md").read_text(encoding="utf-8")
        return {
            "wall_s": wall,
            "jobs": int(done[-1][1]) if done else -1,
            "not_enough": findings.count("not enough data"),
        }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", default="HEAD", help="base revision (before); the working tree is after")
    parser.add_argument("--rounds", type=int, default=2, help="alternating base/new rounds")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, object]]] = {"base": [], "new": []}
    with worktree(args.base) as base:
        for rnd in range(1, args.rounds + 1):
            for side, tree in (("base", base), ("new", REPO)):
                result = run_once(tree, args.cores)
                runs[side].append(result)
                print(
                    f"round {rnd} {side}: {result['wall_s']:.0f} s, {result['jobs']} jobs, "
                    f"{result['not_enough']} 'not enough data' lines",
                    flush=True,
                )
    best = {side: min(float(r["wall_s"]) for r in rs) for side, rs in runs.items()}  # type: ignore[arg-type]
    ratio = best["new"] / best["base"]
    print(
        f"\nbase {args.base}: {best['base']:.0f} s; working tree: {best['new']:.0f} s; new / base = "
        f"{ratio:.2f} (minimum of {args.rounds} alternating rounds)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
