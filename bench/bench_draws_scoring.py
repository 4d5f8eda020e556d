"""Sampling consistency in the workflow at paper size: rule ``score_units`` with and without draws, on
simulated stand-ins.

In a copy of the workflow under ``--workdir``, ``config/paper.yaml``'s study at ``1/--fraction`` of its
samples (1: the paper's 1,748 prompts per style) for the stand-ins ``--models`` of its roster
(:mod:`saltbench.inference.simulated.stand_in`, as ``bench_paper_size.py`` makes them) in ``--styles``, with
``inference.samples.n = --n``:

1. **inputs**: datasets, greedy generations and draws (the simulated backend's draws: the planted process run
   again with each draw's seed), their disk per model;
2. **with draws**: every ``score_units`` job, reading the draws (the consistency columns);
3. **without**: the same jobs forced again with ``n: 0`` (no draws read), as a run without draws has them;
   2 and 3 alternate ``--rounds`` times, keeping each job's least wall and CPU time and its largest peak RSS.

Per job (``benchmarks/units/{model}/{style}.tsv``): wall and CPU seconds and peak RSS; the units it wrote;
the CPU seconds of its consistency step (the job's log line ``draw consistency: … in X CPU s``) and its
throughput, units per CPU second. Prints a Markdown table (docs/performance.md §3) and writes ``--out``
(JSON).

Run::

    python bench/bench_draws_scoring.py --models qwen2.5-7b-instruct --styles direct --n 5
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import polars as pl
import yaml
from _common import load_average, write_json
from bench_paper_size import disk_mib, prepare, snakemake


def _configs(root: Path, config: dict[str, Any], args: argparse.Namespace) -> None:
    """``config/on.yaml`` (``n`` draws) and ``config/off.yaml`` (none) from the scaled paper configuration."""
    config["prompt_styles"] = list(args.styles)
    config["interventions"]["enabled"] = False
    for name, n in (("on", args.n), ("off", 0)):
        config["inference"]["samples"] = {"n": n, "temperature": 1.0, "top_p": 0.95}
        (root / f"config/{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def _jobs(root: Path, models: list[str], styles: list[str]) -> dict[str, dict[str, float]]:
    """Each ``score_units`` job's wall, CPU seconds and peak RSS (MiB) and the units it wrote."""
    out = {}
    for model in models:
        for style in styles:
            s, rss, cpu = (
                pl.read_csv(root / f"benchmarks/units/{model}/{style}.tsv", separator="\t")
                .select("s", "max_rss", "cpu_time")
                .row(0)
            )
            units = sum(
                pl.scan_parquet(f).select(pl.len()).collect().item()
                for f in (root / f"data/units/{model}/{style}").glob("*.parquet")
            )
            log = (root / f"logs/units/{model}/{style}.log").read_text(encoding="utf-8")
            spent = sum(float(x) for x in re.findall(r"draw consistency: .* in ([0-9.]+) CPU s", log))
            out[f"{model}/{style}"] = {
                "wall_s": s,
                "cpu_s": cpu,
                "peak_rss_mib": rss,
                "units": units,
                "consistency_cpu_s": spent,
            }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The measurement (module docstring)."""
    root = args.workdir
    config = prepare(root, 1 / args.fraction, list(args.models), args.reasoning_tokens)
    _configs(root, config, args)
    tasks, models, styles = config["tasks"], list(args.models), list(args.styles)
    cells = [(m, s, t) for m in models for s in styles for t in tasks]
    inputs = [f"data/{kind}/{m}/{s}/{t}.parquet" for kind in ("generations", "draws") for m, s, t in cells]
    units = [f"data/units/{m}/{s}/{t}.parquet" for m, s, t in cells]
    cores = ["--cores", str(args.cores)]
    results: dict[str, Any] = {"n": args.n, "fraction": args.fraction, "load_average": load_average()}
    results["inputs"] = snakemake(root, *inputs, *cores, "--configfile", "config/on.yaml")
    results["disk_mib"] = {
        m: {kind: disk_mib(root / f"data/{kind}/{m}") for kind in ("generations", "draws")} for m in models
    }
    forced = ("--forcerun", "score_units")
    for _ in range(args.rounds):  # alternating; per job the least wall and CPU time, the largest peak RSS
        for name, configfile in (("with_draws", "config/on.yaml"), ("without_draws", "config/off.yaml")):
            snakemake(root, *units, *cores, "--configfile", configfile, *forced)
            for job, cost in _jobs(root, models, styles).items():
                kept = results.setdefault(name, {}).setdefault(job, cost)
                kept.update(
                    wall_s=min(kept["wall_s"], cost["wall_s"]),
                    cpu_s=min(kept["cpu_s"], cost["cpu_s"]),
                    peak_rss_mib=max(kept["peak_rss_mib"], cost["peak_rss_mib"]),
                    consistency_cpu_s=min(kept["consistency_cpu_s"], cost["consistency_cpu_s"]),
                )
    results["load_average_after"] = load_average()
    print(markdown(results))
    return results


def markdown(results: dict[str, Any]) -> str:
    """One row per ``score_units`` job: with and without draws side by side, and the consistency step's own
    CPU seconds (logged by the job) and throughput."""
    lines = [
        "| job | units | job CPU s with draws (without) | job wall s with (without) | peak RSS MiB with "
        "(without) | consistency CPU s | consistency units / CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for job, on in results["with_draws"].items():
        off = results["without_draws"][job]
        spent = on["consistency_cpu_s"]
        rate = f"{on['units'] / spent:,.0f}" if spent > 0 else "n/a"
        lines.append(
            f"| `{job}` | {on['units']:,} | {on['cpu_s']:.1f} ({off['cpu_s']:.1f}) | {on['wall_s']:.1f} "
            f"({off['wall_s']:.1f}) | {on['peak_rss_mib']:.0f} ({off['peak_rss_mib']:.0f}) | {spent:.2f} "
            f"| {rate} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--models", nargs="+", default=["qwen2.5-7b-instruct"], help="stand-ins of the roster")
    cli.add_argument("--styles", nargs="+", default=["direct"])
    cli.add_argument("--n", type=int, default=5, help="draws per prompt")
    cli.add_argument("--fraction", type=float, default=1, help="1/fraction of the paper's samples")
    cli.add_argument("--reasoning-tokens", type=int, default=2000)
    cli.add_argument("--cores", type=int, default=2)
    cli.add_argument("--rounds", type=int, default=3, help="alternating rounds with and without draws")
    cli.add_argument("--workdir", type=Path, default=Path("/tmp/saltbench-draws-scoring"))
    cli.add_argument("--out", type=Path, default=None)
    args = cli.parse_args(argv)
    if args.workdir.exists():
        sys.exit(f"{args.workdir} exists: give another --workdir")
    write_json(run(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
