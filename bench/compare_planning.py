"""Planning cost before/after: Snakemake dry runs of the paper-scale and the default plan.

Each case runs ``snakemake -n --quiet rules`` in the source tree under test (its Snakefile, rules,
profiles and package), as a cluster user does before every submission, resume or single-figure rebuild.
The compared result is the number of inference and intervention jobs planned (the same in both trees:
the cheap per-task stages may be grouped differently). Run::

    python bench/compare_planning.py --base 98dd4b4 --rounds 3 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import _compare

import saltbench

TREE = Path(saltbench.__file__).resolve().parents[2]  # the source tree this worker imports
KEPT = ("generate_shard", "intervention_shard", "build_dataset")


def _plan(args: list[str]) -> dict[str, int]:
    env = {**os.environ, "PYTHONPATH": str(TREE / "src")}
    cmd = [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", *args]
    out = subprocess.run(cmd, cwd=TREE, env=env, capture_output=True, text=True, check=True).stdout
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", out, re.M)}
    return {rule: counts.get(rule, 0) for rule in KEPT}


def parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(description=__doc__)


def cases(args: argparse.Namespace) -> dict[str, Callable[[], object]]:
    paper = ["--configfile", "config/paper.yaml", "--profile", "profiles/slurm"]
    return {
        "paper plan, SLURM profile": lambda: _plan(paper),
        "default plan, local profile": lambda: _plan(["--profile", "profiles/local"]),
    }


if __name__ == "__main__":
    sys.exit(_compare.main("compare_planning", parser()))
