"""The analysis half of the paper study at a fraction of its size, from simulated generations.

For each fraction (``--fractions 64 16 8``: 1/64, 1/16, 1/8), in a copy of the workflow under ``--workdir``:

1. the paper configuration (``config/paper.yaml``) with its sample counts scaled and every model replaced by
   a simulated stand-in of the same name (:mod:`saltbench.inference.simulated.stand_in`; reasoning models
   write a ``--reasoning-tokens``-token trace before every answer);
2. **inputs**: datasets, generations and intervention runs (``snakemake --until merge_interventions
   generate_model``), their disk measured;
3. **analysis**: the rest of the default target (units, metrics, tables, figures, findings) on 2 cores, then
   ``snakemake --report``.

Per stage it reports jobs, summed wall and CPU seconds, the longest job and the peak RSS of any job (from the
rules' benchmark files; the report's from its process), and over the fractions the growth exponent of each
stage's CPU time in the number of generations, and the full-size prediction scaled from the largest run
(:func:`predict`; one run is enough, ``--report`` reads the runs of any earlier ``--out`` files, a stage
that some of them lack included). Predicted wall time on ``c`` cores: the sum over stages of
``max(cpu/c, longest job)``.
Writes ``--out`` (JSON) and prints a Markdown table (docs/performance.md §5).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import yaml
from _common import REPO, copy_workflow

from saltbench.inference.simulated.stand_in import scaled_config, stand_in_registry

STAGES = {"units": "score_units", "metrics": "compute_metrics", "tables": "tables", "figures": "figures"}
"""Benchmark folders of the analysis half and the stage each is reported as."""
MODEL_SETS = {
    2: ["qwen2.5-7b-instruct", "deepseek-r1-distill-qwen-7b"],
    4: ["qwen2.5-7b-instruct", "deepseek-r1-distill-qwen-7b", "phi-4", "phi-4-reasoning"],
    8: [
        "qwen2.5-7b-instruct",
        "deepseek-r1-distill-qwen-7b",
        "phi-4",
        "phi-4-reasoning",
        "llama-3.1-8b-instruct",
        "deepseek-r1-distill-llama-8b",
        "qwen3-8b",
        "gemma-3-12b-it",
    ],
}
"""Subsets of the paper roster run at the full sample counts: half of each is reasoning models with their
pairs (the roster has 17 of 59), intervention models of the paper configuration among them."""
log = logging.getLogger("bench_paper_size")


def prepare(root: Path, fraction: float, models: list[str] | None, reasoning_tokens: int) -> dict:
    """A copy of the workflow in ``root`` with the scaled configuration; the configuration."""
    copy_workflow(root)
    paper = yaml.safe_load((REPO / "config/paper.yaml").read_text(encoding="utf-8"))
    registry = yaml.safe_load((REPO / paper["model_registry"]).read_text(encoding="utf-8"))["models"]
    stand_ins = stand_in_registry(registry, paper["models"], reasoning_tokens=reasoning_tokens)
    (root / "config/stand-ins.yaml").write_text(yaml.safe_dump(stand_ins, sort_keys=False), encoding="utf-8")
    config = scaled_config(paper, fraction, "config/stand-ins.yaml", models)
    (root / "config/scaled.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return config


RUSAGE_WRAPPER = (
    "import json, resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps([use.ru_utime + use.ru_stime, use.ru_maxrss / 1024]), file=sys.stderr)\n"
    "sys.exit(code)\n"
)
"""Runs a command and prints its process tree's CPU seconds and the peak RSS (MiB) of its largest process:
a fresh parent per command, so no earlier command's peak counts."""


def snakemake(root: Path, *args: str) -> dict[str, float]:
    """Run Snakemake in ``root``; its wall seconds, and CPU seconds and peak RSS (MiB) of its process tree."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "snakemake", *args, "--profile", "profiles/local"]
    done = subprocess.run(
        [sys.executable, "-c", RUSAGE_WRAPPER, *command], cwd=root, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-4000:]}")
    cpu, peak = json.loads(done.stderr.strip().splitlines()[-1])
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": peak}


def _costs(files: list[Path]) -> dict[str, float]:
    rows = pl.concat([pl.read_csv(f, separator="\t").select("s", "max_rss", "cpu_time") for f in files])
    wall, cpu, longest, peak = rows.select(
        pl.col("s").sum().alias("wall"),
        pl.col("cpu_time").sum(),
        pl.col("s").max().alias("longest"),
        pl.col("max_rss").max(),
    ).row(0)
    return {
        "jobs": len(files),
        "wall_s": float(wall),
        "cpu_s": float(cpu),
        "longest_s": float(longest),
        "peak_rss_mib": float(peak),
    }


def stage_costs(root: Path) -> dict[str, dict[str, float]]:
    """Per analysis stage: jobs, summed wall and CPU seconds, the longest job, the peak RSS (MiB); the
    findings page (a table rule's benchmark) and the explorer on their own."""
    benchmarks = root / "benchmarks"
    findings = benchmarks / "tables/findings.tsv"
    out = {}
    for folder, stage in STAGES.items():
        files = [f for f in sorted((benchmarks / folder).rglob("*.tsv")) if f != findings]
        if files:
            out[stage] = _costs(files)
    for stage, path in (("findings", findings), ("explorer", benchmarks / "explorer.tsv")):
        if path.is_file():
            out[stage] = _costs([path])
    return out


def disk_mib(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20 if folder.is_dir() else 0.0


def measure(root: Path, label: str, fraction: float, models: list[str] | None, reasoning_tokens: int) -> dict:
    """Every measurement of one size: ``fraction`` of the samples of ``models`` (default: all)."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    config = prepare(root, fraction, models, reasoning_tokens)
    styles, roster = config["prompt_styles"], config["models"]
    generations = len(roster) * len(styles) * sum(config["datasets"]["n_samples"].values())
    log.info("%s: %d models, %d generations", label, len(roster), generations)
    inputs = snakemake(
        root, "--until", "generate_model", "merge_interventions", "--configfile", "config/scaled.yaml"
    )
    analysis = snakemake(root, "--configfile", "config/scaled.yaml")
    report = snakemake(root, "--report", "results/report.html", "--configfile", "config/scaled.yaml")
    stages = stage_costs(root)
    stages["report"] = {
        "jobs": 1,
        "wall_s": report["wall_s"],
        "cpu_s": report["cpu_s"],
        "longest_s": report["wall_s"],
        "peak_rss_mib": report["peak_rss_mib"],
    }
    tokens = pl.scan_parquet(str(root / "data/generations/**/*.parquet")).select(
        pl.col("num_generated_tokens").sum()
    )
    return {
        "label": label,
        "models": len(roster),
        "generations": generations,
        "generated_tokens": int(tokens.collect().item()),
        "inputs": inputs,
        "analysis": analysis,
        "stages": stages,
        "disk_mib": {
            name: disk_mib(root / name)
            for name in ("data/generations", "data/interventions", "data/units", "results")
        },
    }


SCALED = ("score_units", "compute_metrics", "tables", "explorer")
"""Stages whose cost follows the generations (units and their tables); figures, the findings page and the
report read tables whose rows follow the models and cells, which a 1/N-of-the-samples run already has."""


PER_MODEL = ("score_units", "compute_metrics")
"""Stages of one job per (model, style): a job's input follows its model's samples, not the roster."""


def predict(runs: list[dict], full: int, full_models: int, cores: tuple[int, ...] = (2, 16)) -> dict:
    """The full-size prediction from one run or more (sorted by generations; the largest is scaled).

    A stage of :data:`SCALED`: the largest run's CPU time times ``full / generations``; its longest job times
    the growth of one job's input — the samples per model (``full / full_models`` over the run's
    ``generations / models``) for a stage of :data:`PER_MODEL` (1 for a model-subset run, which answers every
    sample), ``full / generations`` for an aggregate one. Any other stage: the most any run measured. Peak
    RSS: the most any run measured. The growth exponent of a stage's CPU time in the generations: between the
    largest run and the largest smaller one that measured the stage (none with one run)."""
    large = runs[-1]
    scale = full / large["generations"]
    per_model = (full / full_models) / (large["generations"] / large["models"])
    out: dict = {"scale": scale, "stages": {}}
    for stage, cost in large["stages"].items():
        measured = [run["stages"][stage] for run in runs if stage in run["stages"]]
        peak = max(
            (m["peak_rss_mib"] for m in measured if not math.isnan(m["peak_rss_mib"])), default=math.nan
        )
        if stage in SCALED:
            job_scale = per_model if stage in PER_MODEL else scale
            row = {"cpu_s": cost["cpu_s"] * scale, "longest_s": cost["longest_s"] * job_scale}
        else:
            row = {key: max(m[key] for m in measured) for key in ("cpu_s", "longest_s")}
        row["peak_rss_mib"] = peak
        smaller = [r for r in runs if r["generations"] < large["generations"] and stage in r["stages"]]
        before = smaller[-1]["stages"][stage]["cpu_s"] if smaller else 0.0
        if before > 0 and cost["cpu_s"] > 0:
            ratio = large["generations"] / smaller[-1]["generations"]
            row["cpu_s_exponent"] = math.log(cost["cpu_s"] / before) / math.log(ratio)
        out["stages"][stage] = row
    out["disk_mib"] = {key: size * scale for key, size in large["disk_mib"].items()}
    for c in cores:
        out[f"wall_s_{c}_cores"] = sum(max(r["cpu_s"] / c, r["longest_s"]) for r in out["stages"].values())
    return out


def markdown(runs: list[dict], prediction: dict, full: int) -> str:
    """The table of docs/performance.md §5."""
    stages = list(runs[-1]["stages"])
    head = " | ".join(f"{r['label']} ({r['generations']:,} gen.)" for r in runs)
    lines = [
        f"| stage: CPU s (peak RSS MiB) | {head} | exponent | full size ({full:,}) |",
        "|---" * (len(runs) + 3) + "|",
    ]
    for stage in stages:
        cells = [
            f"{r['stages'][stage]['cpu_s']:.0f} ({r['stages'][stage]['peak_rss_mib']:.0f})"
            if stage in r["stages"]
            else "–"
            for r in runs
        ]
        p = prediction["stages"][stage]
        exponent = p.get("cpu_s_exponent", float("nan"))
        lines.append(
            f"| {stage} | {' | '.join(cells)} | {exponent:.2f} | {p['cpu_s']:.0f} ({p['peak_rss_mib']:.0f}) |"
        )
    walls = " | ".join(f"{r['analysis']['wall_s'] + r['stages']['report']['wall_s']:.0f}" for r in runs)
    lines.append(f"| analysis wall s, 2 cores | {walls} | | {prediction['wall_s_2_cores']:.0f} |")
    lines.append(f"| predicted wall s, 16 cores | | | | {prediction['wall_s_16_cores']:.0f} |")
    return "\n".join(lines)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--fractions", type=int, nargs="*", default=[], help="denominators: 1/N of the samples"
    )
    parser.add_argument(
        "--model-sets",
        type=int,
        nargs="*",
        default=[2, 4, 8],
        help=f"sizes of MODEL_SETS, every sample: {sorted(MODEL_SETS)}",
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/saltbench-paper-size"))
    parser.add_argument("--reasoning-tokens", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=Path("paper_size.json"))
    parser.add_argument("--keep", action="store_true", help="keep each fraction's folder")
    parser.add_argument("--report", type=Path, nargs="*", help="only print the table of earlier --out files")
    args = parser.parse_args()
    paper = yaml.safe_load((REPO / "config/paper.yaml").read_text(encoding="utf-8"))
    roster = len(paper["models"])
    full = roster * len(paper["prompt_styles"]) * sum(paper["datasets"]["n_samples"].values())
    if args.report:
        runs = [run for path in args.report for run in json.loads(path.read_text())["runs"]]
        runs.sort(key=lambda run: run["generations"])
        print(markdown(runs, predict(runs, full, roster), full))
        return
    sizes: list[tuple[str, float, list[str] | None]]
    sizes = [(f"1/{d} of the samples", 1 / d, None) for d in sorted(args.fractions, reverse=True)]
    sizes += [(f"{k} of {len(paper['models'])} models", 1.0, MODEL_SETS[k]) for k in sorted(args.model_sets)]
    runs = []
    for i, (label, fraction, models) in enumerate(sizes):
        root = args.workdir / f"size-{i}"
        runs.append(measure(root, label, fraction, models, args.reasoning_tokens))
        log.info(json.dumps(runs[-1], indent=1))
        args.out.write_text(json.dumps({"runs": runs}, indent=1), encoding="utf-8")
        if not args.keep:
            shutil.rmtree(root)
    runs.sort(key=lambda run: run["generations"])
    prediction = predict(runs, full, roster)
    args.out.write_text(json.dumps({"runs": runs, "full": full, "prediction": prediction}, indent=1))
    print(markdown(runs, prediction, full))


if __name__ == "__main__":
    main()
