"""The analysis half of the paper study at a fraction of its size, from simulated generations.

For each fraction (``--fractions 128 64 16``: 1/128, 1/64, 1/16) and model set (``--model-sets 2 4``), in
a copy of the workflow under ``--workdir``:

1. the paper configuration (``config/paper.yaml``) with its sample counts scaled and every model replaced by
   a simulated stand-in of the same name (:mod:`saltbench.inference.simulated.stand_in`: reasoning models
   write a ``--reasoning-tokens``-token trace before every answer; every stand-in repeats, drops or swaps
   atoms and lines in a planted share of its answers, so the scoring stage aligns answers of other shapes);
2. **inputs**: datasets, generations and intervention runs (``snakemake --until merge_interventions
   generate_model``), their disk measured;
3. **analysis**: the rest of the default target (units, metrics, tables, figures, findings, explorer) on 2
   cores, then ``snakemake --report``.

Per stage it reports jobs, summed wall and CPU seconds, the longest job (and which), the peak RSS of any job
(from the rules' benchmark files; the report's from its process) and the start-up every job pays (the
stage's fastest job); a table's per-model parts (``table_{name}_part``) are the stage ``table_parts``. Over
the runs: the growth exponent of each stage's CPU time in the number of generations, and the full-size
prediction scaled from the largest run (:func:`predict`): CPU time, the longest job, the wall time on 2, 16
and 64 cores (the sum over stages of ``max(cpu/c, longest job)``). The largest run with the most models also
gives each aggregate job (a table over the whole roster, the findings page, the explorer) with its time and
peak RSS (:func:`aggregate_markdown`). One run is enough; ``--report FILE…`` prints the tables again from
earlier ``--out`` files (runs of several files mix, a stage that some lack included).
Writes ``--out`` (JSON) and prints the Markdown tables of docs/performance.md §5.
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

STAGES = {
    "units": "score_units",
    "metrics": "compute_metrics",
    "tables": "tables",
    "figures": "figures",
    "explorer_model": "explorer_model",
}
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


def _costs(files: list[Path], root: Path) -> dict[str, float | str]:
    """Jobs, summed wall and CPU seconds, the longest job by wall and by CPU seconds (with its name: its
    benchmark file under ``root``), peak RSS (MiB), and the start-up every job pays (``floor_s``,
    ``floor_cpu_s``: the fastest job's, 0 for a stage of one job)."""
    rows = pl.concat(
        pl.read_csv(f, separator="\t").select("s", "max_rss", "cpu_time").head(1) for f in files
    ).with_columns(pl.Series("job", [str(f.relative_to(root).with_suffix("")) for f in files]))
    wall, cpu, longest, longest_cpu, peak, floor, floor_cpu = rows.select(
        pl.col("s").sum().alias("wall"),
        pl.col("cpu_time").sum(),
        pl.col("s").max().alias("longest"),
        pl.col("cpu_time").max().alias("longest_cpu"),
        pl.col("max_rss").max(),
        pl.col("s").min().alias("floor"),
        pl.col("cpu_time").min().alias("floor_cpu"),
    ).row(0)
    single = len(files) == 1
    return {
        "jobs": len(files),
        "wall_s": float(wall),
        "cpu_s": float(cpu),
        "longest_s": float(longest),
        "longest_job": str(rows.sort("s", descending=True)["job"][0]),
        "longest_cpu_s": float(longest_cpu),
        "longest_cpu_job": str(rows.sort("cpu_time", descending=True)["job"][0]),
        "peak_rss_mib": float(peak),
        "floor_s": 0.0 if single else float(floor),
        "floor_cpu_s": 0.0 if single else float(floor_cpu),
    }


def stage_costs(root: Path) -> dict[str, dict[str, float | str]]:
    """Per analysis stage: :func:`_costs` of its jobs; a table's per-model parts (``benchmarks/tables/
    {name}_part/``) as the stage ``table_parts``, the findings page and the explorer on their own."""
    benchmarks = root / "benchmarks"
    findings = benchmarks / "tables/findings.tsv"
    out = {}
    for folder, stage in STAGES.items():
        files = [f for f in sorted((benchmarks / folder).rglob("*.tsv")) if f != findings]
        if folder == "tables":
            parts = [f for f in files if f.parent.name.endswith("_part")]
            files = [f for f in files if f not in parts]
            if parts:
                out["table_parts"] = _costs(parts, benchmarks)
        if files:
            out[stage] = _costs(files, benchmarks)
    for stage, path in (("findings", findings), ("explorer", benchmarks / "explorer.tsv")):
        if path.is_file():
            out[stage] = _costs([path], benchmarks)
    return out


def aggregate_jobs(root: Path) -> dict[str, dict[str, float]]:
    """Every aggregate job of the analysis half (a table that reads the whole roster, the findings page, the
    explorer): its wall and CPU seconds and peak RSS (MiB), by benchmark name."""
    benchmarks = root / "benchmarks"
    files = [f for f in sorted((benchmarks / "tables").glob("*.tsv"))] + [benchmarks / "explorer.tsv"]
    out = {}
    for f in files:
        if f.is_file():
            s, rss, cpu = pl.read_csv(f, separator="\t").select("s", "max_rss", "cpu_time").row(0)
            out[str(f.relative_to(benchmarks).with_suffix(""))] = {
                "wall_s": float(s),
                "cpu_s": float(cpu),
                "peak_rss_mib": float(rss),
            }
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
    stages: dict = stage_costs(root)
    stages["report"] = {
        "jobs": 1,
        "wall_s": report["wall_s"],
        "cpu_s": report["cpu_s"],
        "longest_s": report["wall_s"],
        "longest_job": "report",
        "longest_cpu_s": report["cpu_s"],
        "longest_cpu_job": "report",
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
        "aggregate_jobs": aggregate_jobs(root),
        "disk_mib": {
            name: disk_mib(root / name)
            for name in ("data/generations", "data/interventions", "data/units", "results")
        },
    }


SCALED = ("score_units", "compute_metrics", "table_parts", "explorer_model", "tables", "explorer")
"""Stages whose cost follows the generations (units and their tables); figures, the findings page and the
report read tables whose rows follow the models and cells, which a 1/N-of-the-samples run already has."""


PER_MODEL = ("score_units", "compute_metrics", "table_parts", "explorer_model")
"""Stages of one job per (model, style): a job's input follows its model's samples, not the roster."""


def _longest(cost: dict) -> tuple[float, float, str]:
    """The longest job of a stage, its start-up and its name: by CPU seconds where the run recorded them (a
    job with a core of its own takes about its CPU time; on a shared machine its wall time is mostly the
    wait), else by wall seconds."""
    if "longest_cpu_s" in cost:
        return cost["longest_cpu_s"], cost.get("floor_cpu_s", 0.0), cost["longest_cpu_job"]
    return cost["longest_s"], cost.get("floor_s", 0.0), cost.get("longest_job", "")


def _scaled_stage(cost: dict, scale: float, job_scale: float, jobs_scale: float) -> dict:
    """A stage of :data:`SCALED` at full size: each job a start-up (the stage's fastest job's CPU seconds)
    plus a part that grows with its input — the longest job's (:func:`_longest`) by ``job_scale``, the CPU
    time's by ``scale`` — over ``jobs × jobs_scale`` jobs."""
    longest, floor, name = _longest(cost)
    startup = cost["jobs"] * cost.get("floor_cpu_s", 0.0)
    return {
        "cpu_s": startup * jobs_scale + (cost["cpu_s"] - startup) * scale,
        "longest_s": floor + (longest - floor) * job_scale,
        "longest_job": name,
    }


def predict(runs: list[dict], full: int, full_models: int, cores: tuple[int, ...] = (2, 16, 64)) -> dict:
    """The full-size prediction from one run or more (sorted by generations; the largest is scaled).

    A stage of :data:`SCALED` (:func:`_scaled_stage`): the start-up of each job stays, the rest grows — the
    CPU time by ``full / generations``; the longest job by the growth of one job's input: the samples per
    model (``full / full_models`` over the run's ``generations / models``) for a stage of :data:`PER_MODEL`
    (1 for a model-subset run, which answers every sample), ``full / generations`` for an aggregate one;
    a per-model stage has ``full_models / models`` times the run's jobs. Any other stage: the most any run
    measured. Peak RSS: the most any run measured. The growth exponent of a stage's CPU time in the
    generations: between the largest run and the largest smaller one that measured the stage (none with one
    run). Wall time on ``c`` cores: the sum over stages of ``max(cpu / c, longest job)``."""
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
            own = stage in PER_MODEL
            jobs_scale = full_models / large["models"] if own else 1.0
            row = _scaled_stage(cost, scale, per_model if own else scale, jobs_scale)
        else:
            longest, _, name = max(_longest(m) for m in measured)
            row = {"cpu_s": max(m["cpu_s"] for m in measured), "longest_s": longest, "longest_job": name}
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
    """The table of docs/performance.md §5: per stage, each run's CPU seconds (peak RSS), the growth
    exponent, the full-size CPU seconds, the longest job and the stage's wall time on 16 and 64 cores."""
    stages = list(runs[-1]["stages"])
    head = " | ".join(f"{r['label']} ({r['generations']:,} gen.)" for r in runs)
    lines = [
        f"| stage: CPU s (peak RSS MiB) | {head} | exponent | full size ({full:,}) "
        "| longest job at full size, s | 16 cores, s | 64 cores, s |",
        "|---" * (len(runs) + 6) + "|",
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
        walls = " | ".join(f"{max(p['cpu_s'] / c, p['longest_s']):.0f}" for c in (16, 64))
        lines.append(
            f"| {stage} | {' | '.join(cells)} | {exponent:.2f} | {p['cpu_s']:.0f} ({p['peak_rss_mib']:.0f}) "
            f"| {p['longest_s']:.0f} (`{p['longest_job'] or stage}`) | {walls} |"
        )
    walls = " | ".join(f"{r['analysis']['wall_s'] + r['stages']['report']['wall_s']:.0f}" for r in runs)
    blank = " |" * 3
    lines.append(f"| analysis wall s, 2 cores | {walls} | | {prediction['wall_s_2_cores']:.0f} |{blank}")
    cores = " | ".join(f"{prediction[f'wall_s_{c}_cores']:.0f}" for c in (16, 64))
    lines.append(f"| predicted wall s, 16 and 64 cores |{' |' * len(runs)} | | | {cores} |")
    return "\n".join(lines)


def aggregate_markdown(run: dict, full: int, top: int = 8) -> str:
    """The ``top`` longest aggregate jobs of ``run`` (:func:`aggregate_jobs`) by CPU seconds: wall and CPU
    seconds, peak RSS, and the time at full size as :func:`predict` scales its stage's longest job (the
    part above the stage's start-up times ``full / generations``; the findings page as measured)."""
    jobs = run.get("aggregate_jobs", {})
    if not jobs:
        return ""
    scale = full / run["generations"]
    lines = [
        f"| aggregate job ({run['label']}, {run['models']} models) | wall s | CPU s | peak RSS MiB "
        f"| full size, s |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, j in sorted(jobs.items(), key=lambda kv: -kv[1]["cpu_s"])[:top]:
        stage = "explorer" if name == "explorer" else "tables"
        floor = run["stages"].get(stage, {}).get("floor_cpu_s", 0.0)
        at_full = j["cpu_s"] if name == "tables/findings" else floor + (j["cpu_s"] - floor) * scale
        lines.append(
            f"| `{name}` | {j['wall_s']:.1f} | {j['cpu_s']:.1f} | {j['peak_rss_mib']:.0f} | {at_full:.0f} |"
        )
    return "\n".join(lines)


def reread(out: Path, folders: list[Path]) -> None:
    """Read the benchmark files of kept runs (``--keep``) again into ``out``'s runs, in the order of its
    runs: the stages and aggregate jobs as this version of the script reads them (the report's, measured
    from its process, kept)."""
    data = json.loads(out.read_text(encoding="utf-8"))
    if len(folders) != len(data["runs"]):
        raise SystemExit(f"--reread: {len(folders)} folders for the {len(data['runs'])} runs of {out}")
    for run, folder in zip(data["runs"], folders, strict=True):
        report = run["stages"]["report"]
        run["stages"] = {**stage_costs(folder), "report": {**report, "longest_cpu_s": report["cpu_s"]}}
        run["stages"]["report"].setdefault("longest_cpu_job", "report")
        run["aggregate_jobs"] = aggregate_jobs(folder)
    out.write_text(json.dumps(data, indent=1), encoding="utf-8")


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
    parser.add_argument(
        "--reread", type=Path, nargs="*", help="kept run folders: read their benchmarks into --out again"
    )
    args = parser.parse_args()
    if args.reread:
        reread(args.out, args.reread)
        args.report = [args.out]
    paper = yaml.safe_load((REPO / "config/paper.yaml").read_text(encoding="utf-8"))
    roster = len(paper["models"])
    full = roster * len(paper["prompt_styles"]) * sum(paper["datasets"]["n_samples"].values())
    if args.report:
        runs = [run for path in args.report for run in json.loads(path.read_text())["runs"]]
        runs.sort(key=lambda run: run["generations"])
        print(markdown(runs, predict(runs, full, roster), full))
        print("\n" + aggregate_markdown(max(runs, key=lambda r: (r["models"], r["generations"])), full))
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
    print("\n" + aggregate_markdown(max(runs, key=lambda r: (r["models"], r["generations"])), full))


if __name__ == "__main__":
    main()
