"""The paper plan's dry run against Snakemake's own floor, side by side (docs/performance.md §2.1).

The floor is a trivial Snakefile with as many jobs as the paper plan and the same fan-in: one dataset job
per task, generation shards per (condition, task) merged into one file per condition, then per condition a
scoring and a metrics job, interventions sharded and merged, tables over every condition's metrics, one
figure per table, an explorer and a findings job over everything, and ``all``. It has no config, no
imports, no input functions, no params nor resources: what Snakemake costs for this many jobs anyway.

Each round runs ``snakemake -n`` of the floor and of ``config/paper.yaml`` in fresh interpreters,
alternating; each side's time is the minimum over rounds. Both plans' job counts are printed and must be
equal. The SLURM executor plugin asks ``scontrol show config`` when Snakemake starts (10 s timeout); on a
machine with a SLURM client but no reachable controller that wait (9 s here) lands on both sides alike, so
by default a failing ``scontrol`` stub comes first on ``PATH`` (as on a machine without SLURM;
``--keep-scontrol`` keeps the real one). Run::

    python bench/bench_plan.py --rounds 5
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

logger = logging.getLogger("bench_plan")

REPO = Path(__file__).resolve().parents[1]
FLOOR = """
TASKS = [f"t{{i}}" for i in range({tasks})]
CONDITIONS = [f"c{{i}}" for i in range({conditions})]
SHARDS = range({shards})
IMODELS = [f"i{{i}}" for i in range({intervention_merges})]
ISHARDS = range({intervention_shards})
TABLES = [f"tab{{i}}" for i in range({tables})]


rule all:
    input:
        expand("figures/{{table}}.txt", table=TABLES),
        "results/findings.txt",
        "results/explorer.txt",


rule dataset:
    output:
        "data/{{task}}.txt",
    shell:
        "touch {{output}}"


rule shard:
    input:
        "data/{{task}}.txt",
    output:
        "gen/{{cond}}/{{task}}/{{shard}}.txt",
    shell:
        "touch {{output}}"


rule merge:
    input:
        expand("gen/{{{{cond}}}}/{{task}}/{{shard}}.txt", task=TASKS, shard=SHARDS),
    output:
        "merged/{{cond}}.txt",
    shell:
        "touch {{output}}"


rule ishard:
    input:
        expand("data/{{task}}.txt", task=TASKS),
    output:
        "int/{{imodel}}/{{ishard}}.txt",
    shell:
        "touch {{output}}"


rule imerge:
    input:
        expand("int/{{{{imodel}}}}/{{ishard}}.txt", ishard=ISHARDS),
    output:
        "intmerged/{{imodel}}.txt",
    shell:
        "touch {{output}}"


rule score:
    input:
        "merged/{{cond}}.txt",
    output:
        "units/{{cond}}.txt",
    shell:
        "touch {{output}}"


rule metrics:
    input:
        "units/{{cond}}.txt",
    output:
        "metrics/{{cond}}.txt",
    shell:
        "touch {{output}}"


rule table:
    input:
        expand("metrics/{{cond}}.txt", cond=CONDITIONS),
        expand("intmerged/{{imodel}}.txt", imodel=IMODELS),
    output:
        "tables/{{table}}.txt",
    shell:
        "touch {{output}}"


rule figure:
    input:
        "tables/{{table}}.txt",
    output:
        "figures/{{table}}.txt",
    shell:
        "touch {{output}}"


rule findings:
    input:
        expand("tables/{{table}}.txt", table=TABLES),
    output:
        "results/findings.txt",
    shell:
        "touch {{output}}"


rule explorer:
    input:
        expand("units/{{cond}}.txt", cond=CONDITIONS),
    output:
        "results/explorer.txt",
    shell:
        "touch {{output}}"
"""
"""The floor's Snakefile (a ``str.format`` template of the counts)."""
DIRECTIVES = (
    r'    output:\n        "\1",\n    log:\n        "logs/\1.log",\n'
    r'    benchmark:\n        "benchmarks/\1.tsv"\n'
    r'    conda:\n        "environment.yml"\n    script:\n        "job.py"\n'
)
"""What every job of the workflow has besides its files, in place of the floor's ``shell:`` (a substitution
of :data:`OUTPUT_SHELL`): a log, a benchmark file, a conda environment and a Python script."""
OUTPUT_SHELL = re.compile(r'    output:\n        "([^"]+)",\n    shell:\n        "touch \{output\}"\n')
FREEZE = "\n\nimport gc\n\ngc.freeze()\n"
"""The end of the workflow's Snakefile: what was built so far is left out of garbage collection."""
SHAPE = {
    "tasks": 6,
    "conditions": 118,
    "shards": 3,
    "intervention_merges": 48,
    "intervention_shards": 2,
    "tables": 10,
}
"""The paper plan's shape: 6 tasks, 118 (model, style) conditions of 3 shards per task (2,124 generation
shards), 48 intervention merges of 2 shards, 10 tables and 10 figures: 2,651 jobs with ``all``."""


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def dry_run(cwd: Path, args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall and CPU seconds and the planned job count of ``snakemake -n *args`` in ``cwd``."""
    cmd = [sys.executable, "-m", "snakemake", "-n", *args]
    start, start_cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=True)
    seconds, cpu = time.perf_counter() - start, _children_cpu() - start_cpu
    totals = re.findall(r"^total\s+(\d+)$", done.stdout, re.M)
    return seconds, cpu, int(totals[-1]) if totals else -1


def environment(stub_dir: Path, tree: Path | None, keep_scontrol: bool) -> dict[str, str]:
    """This process's environment with ``tree``'s sources first on ``PYTHONPATH`` and, unless
    ``keep_scontrol``, a ``scontrol`` that fails at once first on ``PATH`` (module docstring)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), os.environ.get("PYTHONPATH", "")])
    if not keep_scontrol:
        stub = stub_dir / "scontrol"
        stub.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
        stub.chmod(0o755)
        env["PATH"] = f"{stub_dir}{os.pathsep}{env['PATH']}"
    return env


def parser() -> argparse.ArgumentParser:
    """The command line."""
    out = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    out.add_argument("--rounds", type=int, default=5, help="alternating rounds; the minimum is reported")
    out.add_argument("--configfile", default="config/paper.yaml", help="the plan measured against the floor")
    out.add_argument(
        "--tree",
        type=Path,
        action="append",
        help="a source tree of this repository to plan in (repeatable, e.g. a git worktree of a base "
        "revision); default: this one",
    )
    out.add_argument("--quiet", action="store_true", help="--quiet rules: the job table only, no job list")
    out.add_argument("--keep-scontrol", action="store_true", help="keep the real scontrol on PATH")
    out.add_argument(
        "--directives-floor",
        action="store_true",
        help="also a floor whose jobs have a log, a benchmark, a conda environment and a script",
    )
    out.add_argument(
        "--frozen-floor",
        action="store_true",
        help="also a floor whose Snakefile ends with gc.freeze(), as the workflow's does",
    )
    return out


def directives_floor(root: Path) -> Path:
    """The floor with :data:`DIRECTIVES` in ``root/directives``, with its script and environment file."""
    folder = root / "directives"
    folder.mkdir()
    text, count = OUTPUT_SHELL.subn(DIRECTIVES, FLOOR.format(**SHAPE))
    assert count == len(re.findall(r"^rule ", text, re.M)) - 1, "every rule but all has one output"
    (folder / "Snakefile").write_text(text, encoding="utf-8")
    (folder / "job.py").write_text("", encoding="utf-8")
    (folder / "environment.yml").write_text("dependencies: [python]\n", encoding="utf-8")
    return folder


def measure(sides: dict[str, tuple[Path, list[str], dict[str, str]]], rounds: int) -> dict[str, list[float]]:
    """``{side: [least wall s, least CPU s, jobs]}`` over ``rounds`` alternating rounds of every side."""
    best = {side: [float("inf"), float("inf"), 0.0] for side in sides}
    for round_ in range(rounds):
        for side, (cwd, args, env) in sides.items():
            seconds, cpu, jobs = dry_run(cwd, args, env)
            best[side] = [min(best[side][0], seconds), min(best[side][1], cpu), jobs]
            logger.info(
                "round %d %-24s %6.2f s wall %6.2f s CPU (%d jobs)", round_ + 1, side, seconds, cpu, jobs
            )
    return best


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and log each side's minimum, its job count and its ratio to the floor."""
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    extra = ["--quiet", "rules"] if args.quiet else []
    with tempfile.TemporaryDirectory(prefix="saltbench-floor-") as tmp:
        root = Path(tmp)
        (root / "Snakefile").write_text(FLOOR.format(**SHAPE), encoding="utf-8")
        sides = {"floor": (root, extra, environment(root, None, args.keep_scontrol))}
        if args.frozen_floor:
            (root / "frozen").mkdir()
            (root / "frozen" / "Snakefile").write_text(FLOOR.format(**SHAPE) + FREEZE, encoding="utf-8")
            sides["floor, gc frozen"] = (root / "frozen", extra, sides["floor"][2])
        if args.directives_floor:
            sides["floor, our directives"] = (directives_floor(root), extra, sides["floor"][2])
        for tree in args.tree or [REPO]:
            plan = ["--configfile", args.configfile, *extra]
            sides[str(tree.resolve())] = (tree, plan, environment(root, tree.resolve(), args.keep_scontrol))
        best = measure(sides, args.rounds)
    floor = best.pop("floor")
    logger.info("minimum of %d rounds: floor %.2f s wall, %.2f s CPU (%d jobs)", args.rounds, *floor)
    for side, (seconds, cpu, jobs) in best.items():
        if jobs != floor[2]:
            logger.warning("%s plans %d jobs, the floor %d", side, jobs, floor[2])
        logger.info(
            "%s: %.2f s wall (%.2fx the floor), %.2f s CPU (%.2fx) (%d jobs)",
            side,
            seconds,
            seconds / floor[0],
            cpu,
            cpu / floor[1],
            jobs,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
