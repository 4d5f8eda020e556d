"""The simulated backend: its speed, and how often the study's intervals hold its planted truth.

speed
    Throughput of the simulated backend (docs/simulation.md §6): atoms and responses per second for answers
    of a given length, one core, minimum of the repeats.
coverage
    Empirical coverage of the study's 95 % intervals on planted truth (docs/simulation.md §5.5). Runs the
    workflow on ``config/simulated.yaml`` (its models' seeds and the dataset seed moved together, its sample
    counts optionally scaled down) once per seed, each in a fresh copy of the workflow, up to
    ``results/tables/recovery.parquet``; then reports, per quantity, how often the interval held the planted
    value, the mean error and the mean interval width. Every finished seed is kept in ``--out``.
coverage-interventions
    The same for the intervention terms alone, at the function level: per seed, the config's intervention
    design on freshly generated datasets of ``--tasks``, answered through the interventions stage's own
    function by the simulated model, fitted as the interventions table fits them (seconds per seed, where a
    workflow run takes minutes).

Usage::

    .venv/bin/python bench/bench_simulated.py speed --codons 300 --samples 200 --repeats 3
    .venv/bin/python bench/bench_simulated.py coverage --seeds 20 --samples 60 --out coverage.parquet
    .venv/bin/python bench/bench_simulated.py coverage --seeds 40 --tasks matmul --models sim-planted
    .venv/bin/python bench/bench_simulated.py coverage-interventions --seeds 40 --tasks matmul
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import tempfile
import time
from pathlib import Path

import polars as pl
import yaml
from _common import copy_workflow, snakemake

log = logging.getLogger("bench_simulated")


def speed(args: argparse.Namespace) -> None:
    """The ``speed`` subcommand (module docstring)."""
    from saltbench.inference.backends import load_backend
    from saltbench.inference.registry import ModelSpec
    from saltbench.inference.simulated import SimulationParams
    from saltbench.inference.sources import SimulatedSource
    from saltbench.stages.generation import build_prompts
    from saltbench.tasks import get_task

    with tempfile.TemporaryDirectory() as folder:
        rows = get_task("dna").generate(args.samples, 0, min_codons=args.codons, max_codons=args.codons)
        rows.write_parquet(Path(folder) / "dna.parquet")
        spec = ModelSpec(
            name="sim",
            source=SimulatedSource(parameters=SimulationParams()),
            backend="simulated",
            chat_template="none",
        )
        model = load_backend(folder, spec)
        for style in ("direct", "cot"):
            prompts = build_prompts(rows, style, None)
            model.generate(prompts[:2], [10**6] * 2)  # compile the chain once
            best = float("inf")
            for _ in range(args.repeats):
                started = time.perf_counter()
                model.generate(prompts, [10**6] * len(prompts))
                best = min(best, time.perf_counter() - started)
            atoms = args.samples * args.codons
            rate = f"{atoms / best:,.0f} atoms/s, {args.samples / best:,.0f} responses/s"
            what = f"{args.samples} answers of {args.codons} atoms"
            print(f"{style}: {what} in {best:.3f} s (min of {args.repeats}): {rate}")


def prepare(
    root: Path,
    seed: int,
    samples: int | None,
    tasks: list[str] | None = None,
    models: list[str] | None = None,
) -> None:
    """A copy of the workflow whose simulated models and datasets use ``seed`` (and only ``tasks`` and
    ``models`` of ``config/simulated.yaml`` where given: the interventions keep the ones left)."""
    copy_workflow(root)
    config = yaml.safe_load((root / "config/simulated.yaml").read_text(encoding="utf-8"))
    config["seed"] = seed
    if samples:
        config["datasets"]["n_samples"] = samples
        config["interventions"]["samples_per_task"] = samples
    if tasks:
        config["tasks"] = tasks
        config["interventions"]["tasks"] = [t for t in config["interventions"]["tasks"] if t in tasks]
    if models:
        config["models"] = models
        config["interventions"]["models"] = [m for m in config["interventions"]["models"] if m in models]
    (root / "config/simulated.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    registry = yaml.safe_load((root / "config/models.yaml").read_text(encoding="utf-8"))
    for entry in registry["models"].values():
        if entry["source"]["kind"] == "simulated":
            parameters = entry["source"].setdefault("parameters", {})
            parameters["seed"] = 1000 * seed + parameters.get("seed", 0)
    (root / "config/models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")


def run_seed(seed: int, args: argparse.Namespace) -> pl.DataFrame:
    """The recovery table of one seed's run, with a ``seed`` column."""
    with tempfile.TemporaryDirectory(prefix=f"recovery-{seed}-") as folder:
        root = Path(folder)
        prepare(root, seed, args.samples, args.tasks, args.models)
        target = "results/tables/recovery.parquet"
        config = ("--configfile", "config/simulated.yaml")
        snakemake(root, target, "--cores", str(args.cores), "--profile", "profiles/local", *config)
        return pl.read_parquet(root / target).with_columns(seed=pl.lit(seed))


def coverage_table(rows: pl.DataFrame) -> pl.DataFrame:
    """Per quantity: planted values, share inside their intervals, mean error, mean width."""
    return (
        rows.filter(pl.col("inside").is_not_null())
        .group_by("quantity")
        .agg(
            values=pl.len(),
            coverage=pl.col("inside").mean(),
            mean_error=pl.col("error").mean(),
            mean_abs_error=pl.col("error").abs().mean(),
            mean_width=(pl.col("ci_high") - pl.col("ci_low")).mean(),
        )
        .sort("quantity")
    )


def intervention_seed(seed: int, args: argparse.Namespace) -> pl.DataFrame:
    """One seed of ``coverage-interventions``: ``config/simulated.yaml``'s intervention design on its
    datasets (``--tasks``, dataset seed ``seed``), answered by ``--model`` (model seed moved as in
    :func:`prepare`) through the interventions stage's own function, fitted as the interventions table
    fits them, and joined with the planted estimand (recovery rows, with a ``seed`` column)."""
    from saltbench.analysis import SimulatedRun, fit_intervention_effects, planted_values
    from saltbench.inference import load_model_registry
    from saltbench.inference.sources import SimulatedSource
    from saltbench.interventions import InterventionOptions
    from saltbench.stages.interventions import intervention_shard
    from saltbench.tasks import get_task

    config = yaml.safe_load(Path("config/simulated.yaml").read_text(encoding="utf-8"))
    spec = load_model_registry("config/models.yaml")[args.model]
    source = spec.source
    if not isinstance(source, SimulatedSource):
        raise SystemExit(f"--model {args.model!r} is not a simulated model")
    params = dataclasses.replace(source.parameters, seed=1000 * seed + source.parameters.seed)
    spec = dataclasses.replace(spec, source=dataclasses.replace(source, parameters=params))
    design = {k: v for k, v in config["interventions"].items() if k not in ("enabled", "models", "tasks")}
    samples = args.samples or config["datasets"]["n_samples"]
    options = InterventionOptions.from_dict({**design, "samples_per_task": samples, "seed": seed})
    frames = []
    with tempfile.TemporaryDirectory(prefix=f"interventions-{seed}-") as folder:
        for task in args.tasks:
            dataset = get_task(task).generate(samples, seed, **config["datasets"]["params"].get(task, {}))
            dataset.write_parquet(Path(folder) / f"{task}.parquet")
            frames.append(dataset)
        rows = pl.concat(
            intervention_shard(
                frame, options, model_name=args.model, model_path=folder, spec=spec, n_shots=None
            )
            for frame in frames
        )
    fit = fit_intervention_effects(rows, n_resamples=args.resamples, seed=seed).filter(
        pl.col("status") == "ok"
    )
    run = SimulatedRun(
        params={args.model: params},
        styles=[],
        datasets={},
        intervention_models=[args.model],
        intervention_tasks=args.tasks,
        interventions=rows,
    )
    planted = planted_values(run).select("model", "task", "quantity", "planted", "structural")
    estimates = fit.select(
        "model", "task", "estimate", "ci_low", "ci_high", quantity=pl.lit("intervention_") + pl.col("term")
    )
    return planted.join(estimates, on=["model", "task", "quantity"]).with_columns(
        error=pl.col("estimate") - pl.col("planted"),
        inside=(pl.col("ci_low") <= pl.col("planted")) & (pl.col("planted") <= pl.col("ci_high")),
        seed=pl.lit(seed),
    )


def coverage(args: argparse.Namespace) -> None:
    """The ``coverage`` subcommand (module docstring)."""
    frames = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        started = time.perf_counter()
        frames.append(
            intervention_seed(seed, args)
            if args.command == "coverage-interventions"
            else run_seed(seed, args)
        )
        log.info("seed %d: %.0f s", seed, time.perf_counter() - started)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        pl.concat(frames).write_parquet(args.out)  # every finished seed is kept
    with pl.Config(
        tbl_formatting="MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        float_precision=3,
        tbl_rows=50,
    ):
        print(coverage_table(pl.concat(frames)))


def parser() -> argparse.ArgumentParser:
    """The subcommands ``speed`` and ``coverage`` and their options."""
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = cli.add_subparsers(dest="command", required=True)
    s = commands.add_parser("speed", help="atoms and responses per second of the simulated backend")
    s.add_argument("--codons", type=int, default=300, help="atoms per DNA answer")
    s.add_argument("--samples", type=int, default=200)
    s.add_argument("--repeats", type=int, default=3)
    c = commands.add_parser("coverage", help="the recovery intervals' coverage over seeds")
    c.add_argument("--seeds", type=int, default=20)
    c.add_argument("--first-seed", type=int, default=1)
    c.add_argument("--samples", type=int, default=None, help="samples per task (default: the config's)")
    c.add_argument("--cores", type=int, default=2)
    c.add_argument("--tasks", nargs="+", default=None, help="only these tasks (default: the config's)")
    c.add_argument("--models", nargs="+", default=None, help="only these models (default: the config's)")
    c.add_argument("--out", type=Path, default=Path("recovery_coverage.parquet"))
    i = commands.add_parser(
        "coverage-interventions",
        help="the intervention intervals' coverage over seeds, at the function level (no workflow run)",
    )
    i.add_argument("--seeds", type=int, default=40)
    i.add_argument("--first-seed", type=int, default=1)
    i.add_argument("--samples", type=int, default=None, help="samples per task (default: the config's)")
    i.add_argument("--tasks", nargs="+", default=["matmul"])
    i.add_argument("--model", default="sim-planted")
    i.add_argument("--resamples", type=int, default=200, help="cluster-bootstrap resamples of the fit")
    i.add_argument("--out", type=Path, default=Path("intervention_coverage.parquet"))
    return cli


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command != "speed":
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        logging.getLogger("saltbench").setLevel(logging.WARNING)  # not a line per intervened sample
    (speed if args.command == "speed" else coverage)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
