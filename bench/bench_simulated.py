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
coverage-estimators
    The same for the pooled AUROC of the draws' consistency (``draws.agreement``, ``draws.entropy``) and
    the second pass (``verbalized``, ``p_true``) at the function level: per seed, greedy answers scored by
    the scoring stage, ``--draws`` draws scored by ``draw_consistency``, second-pass prompts about every
    line and answer answered by the simulated model and parsed; intervals by the metrics' bootstrap.
    An interval is compared as the recovery table compares it: where its cell ranks at least
    ``MIN_CLASS_UNITS`` correct and wrong units; a second table gives the coverage by the smaller class
    (docs/simulation.md §10.2).

Usage::

    .venv/bin/python bench/bench_simulated.py speed --codons 300 --samples 200 --repeats 3
    .venv/bin/python bench/bench_simulated.py coverage --seeds 20 --samples 60 --out coverage.parquet
    .venv/bin/python bench/bench_simulated.py coverage --seeds 40 --tasks matmul --models sim-planted
    .venv/bin/python bench/bench_simulated.py coverage-interventions --seeds 40 --tasks matmul
    .venv/bin/python bench/bench_simulated.py coverage-estimators --seeds 100 --tasks dna matmul
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

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
    from saltbench.interventions import InterventionOptions
    from saltbench.stages.interventions import intervention_shard
    from saltbench.tasks import get_task

    config, spec = _reseeded(args.model, seed)
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
        params={args.model: spec.source.parameters},
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


def _estimator_units(model: Any, folder: str, frame: pl.DataFrame, task: str, draws: int) -> pl.DataFrame:
    """The scored units of ``model``'s greedy answers to ``frame`` (direct style; ``folder``: its
    datasets) with the consistency of ``draws`` draws per prompt and the second pass's replies about each
    line and answer (``verbalized``, ``p_true`` columns; NaN where not asked or unparsable)."""
    from saltbench.config import InferenceConfig
    from saltbench.evaluation import EvaluateOptions, draw_consistency, p_true, parse_verbalized
    from saltbench.evaluation import second_pass_instruction as ask
    from saltbench.inference.base import DrawSettings
    from saltbench.inference.simulated.answers import FALSE_ID, TRUE_ID
    from saltbench.stages.generation import build_prompts, generate_shard
    from saltbench.stages.scoring import score_generations

    prompts = build_prompts(frame, "direct", None)
    budgets = [4096] * len(prompts)
    greedy = generate_shard(
        frame,
        InferenceConfig(max_new_tokens={"default": 4096}),
        model_name="sim",
        model_path=folder,
        spec=model.spec,
        style="direct",
        n_shots=None,
        progress=False,
    )
    units = score_generations(greedy, frame, task, reasoning=None, max_new_tokens=4096)
    drawn = model.sample(prompts, budgets, list(range(len(prompts))), DrawSettings(draws))
    table = pl.DataFrame(
        [(s, d, r.text) for s, rs in zip(frame["sample_id"], drawn, strict=True) for d, r in enumerate(rs)],
        schema={"sample_id": pl.String, "draw": pl.Int32, "text": pl.String},
        orient="row",
    )
    units = draw_consistency(
        units.with_columns(task=pl.lit(task)), table, options=EvaluateOptions(fence_rule="line")
    )
    prompt_of = dict(zip(frame["sample_id"], prompts, strict=True))
    answers = units.filter(pl.col("granularity") == "generation", pl.col("response_unit").is_not_null())
    answer_of = dict(zip(answers["sample_id"], answers["response_unit"], strict=True))
    asked = units.with_row_index("row").filter(
        pl.col("granularity").cast(pl.String).is_in(["line", "generation"]),
        pl.col("response_unit").is_not_null(),
        pl.col("sample_id").is_in(list(answer_of)),
    )
    values = {kind: pl.Series([float("nan")] * units.height) for kind in ("verbalized", "p_true")}
    for row, sample, granularity, index, unit in asked.select(
        "row", "sample_id", pl.col("granularity").cast(pl.String), "unit_index", "response_unit"
    ).iter_rows():
        where = {} if granularity == "generation" else {"unit": unit, "index": index + 1}
        for kind in ("verbalized", "p_true"):
            question = ask(kind, prompt_of[sample], answer_of[sample], granularity=granularity, **where)
            record = model.generate([question], [8 if kind == "verbalized" else 1])[0]
            value = (
                parse_verbalized(record.text)[0]
                if kind == "verbalized"
                else p_true(
                    int(record.token_ids[0]),
                    float(record.chosen_logprobs[0]),
                    record.topk_ids[0],
                    record.topk_logprobs[0],
                    (TRUE_ID,),
                    (FALSE_ID,),
                )[0]
            )
            values[kind][row] = value
    return units.with_columns(**{f"second_pass.{kind}": series for kind, series in values.items()})


def _estimator_estimates(units: pl.DataFrame, task: str, resamples: int, seed: int) -> list[tuple]:
    """``(task, quantity, estimate, ci_low, ci_high, n_correct, n_wrong)`` of the pooled AUROC of every
    estimator column of ``units`` at each granularity, with the metrics stage's bootstrap (responses
    resampled), and the correct and wrong units it ranks."""
    import numpy as np

    from saltbench.core.vocabulary import RESPONSE_STATUSES
    from saltbench.metrics import auroc, bootstrap_ci

    out = []
    for (granularity,), part in units.group_by("granularity", maintain_order=True):
        written = part.filter(pl.col("status").cast(pl.String).is_in(list(RESPONSE_STATUSES)))
        for column, sign in (
            ("draws.agreement", 1),
            ("draws.entropy", -1),
            ("second_pass.verbalized", 1),
            ("second_pass.p_true", 1),
        ):
            raw = written[column].to_numpy()
            keep = np.isfinite(raw)
            if not keep.any():
                continue
            y = written["is_correct"].to_numpy()[keep]
            _, groups = np.unique(written["sample_id"].to_numpy()[keep], return_inverse=True)
            ci = bootstrap_ci(auroc, sign * raw[keep], y, groups, n_resamples=resamples, seed=seed)
            name = column.split(".")[1]
            n_correct = int(y.sum())
            quantity = f"{granularity}_auroc_{name}"
            out.append((task, quantity, ci.point, ci.low, ci.high, n_correct, y.size - n_correct))
    return out


def estimator_seed(seed: int, args: argparse.Namespace) -> pl.DataFrame:
    """One seed of ``coverage-estimators``: ``--model`` (its seed moved as in :func:`prepare`) answers
    fresh datasets of ``--tasks`` in the direct style, draws ``--draws`` times and is asked about each line
    and answer; the pooled AUROC of the draws' and second pass's estimators with the metrics' bootstrap
    interval, joined with their planted values (recovery rows, with a ``seed`` column)."""
    from saltbench.analysis import MIN_CLASS_UNITS, SimulatedRun, planted_values
    from saltbench.inference.backends import load_backend
    from saltbench.tasks import get_task

    config, spec = _reseeded(args.model, seed)
    samples = args.samples or config["datasets"]["n_samples"]
    rows, datasets = [], {}
    with tempfile.TemporaryDirectory(prefix=f"estimators-{seed}-") as folder:
        for task in args.tasks:
            datasets[task] = get_task(task).generate(
                samples, seed, **config["datasets"]["params"].get(task, {})
            )
            datasets[task].write_parquet(Path(folder) / f"{task}.parquet")
        model = load_backend(folder, spec)
        for task in args.tasks:
            units = _estimator_units(model, folder, datasets[task], task, args.draws)
            rows += _estimator_estimates(units, task, args.resamples, seed)
    columns = ["task", "quantity", "estimate", "ci_low", "ci_high", "n_correct", "n_wrong"]
    estimates = pl.DataFrame(rows, schema=columns, orient="row")
    granularity = pl.col("quantity").str.split("_auroc_")
    scored = estimates.select(
        granularity.list.get(0),
        pl.when(granularity.list.get(1).is_in(["agreement", "entropy"]))
        .then(pl.lit("draws"))
        .otherwise(pl.lit("second_pass")),
        granularity.list.get(1).alias("name"),
    ).unique()
    run = SimulatedRun(
        params={args.model: spec.source.parameters},
        styles=["direct"],
        datasets=datasets,
        draws=args.draws,
        estimators=set(scored.iter_rows()),
    )
    planted = planted_values(run, seed=seed).select("task", "quantity", "planted")
    # compared as the recovery table compares: a planted value, and enough units of each class
    few = pl.min_horizontal("n_correct", "n_wrong") < MIN_CLASS_UNITS
    covered = (pl.col("ci_low") <= pl.col("planted")) & (pl.col("planted") <= pl.col("ci_high"))
    return planted.join(estimates, on=["task", "quantity"]).with_columns(
        error=pl.col("estimate") - pl.col("planted"),
        covered=covered,
        inside=pl.when(pl.col("planted").is_nan() | few).then(None).otherwise(covered),
        seed=pl.lit(seed),
    )


def class_coverage(rows: pl.DataFrame) -> pl.DataFrame:
    """Per granularity and band of the smaller class (the fewer of the correct and wrong units ranked:
    0–4, 5–9, 10–14, 15 and more): intervals and how often they hold the planted value, compared or not
    (``coverage-estimators``; the evidence for :data:`saltbench.analysis.MIN_CLASS_UNITS`)."""
    smaller = pl.min_horizontal("n_correct", "n_wrong")
    return (
        rows.filter(pl.col("planted").is_not_nan())
        .group_by(
            granularity=pl.col("quantity").str.split("_auroc_").list.get(0),
            smaller_class=(smaller.clip(0, 15) // 5 * 5),
        )
        .agg(intervals=pl.len(), coverage=pl.col("covered").mean())
        .sort("granularity", "smaller_class")
    )


def coverage(args: argparse.Namespace) -> None:
    """The ``coverage`` subcommands (module docstring)."""
    frames = []
    one_seed = {
        "coverage": run_seed,
        "coverage-interventions": intervention_seed,
        "coverage-estimators": estimator_seed,
    }[args.command]
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        started = time.perf_counter()
        frames.append(one_seed(seed, args))
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
        if args.command == "coverage-estimators":
            print(class_coverage(pl.concat(frames)))


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
    e = commands.add_parser(
        "coverage-estimators",
        help="the draws' and second pass's AUROC intervals' coverage over seeds, at the function level",
    )
    e.add_argument("--seeds", type=int, default=40)
    e.add_argument("--first-seed", type=int, default=1)
    e.add_argument("--samples", type=int, default=None, help="samples per task (default: the config's)")
    e.add_argument("--tasks", nargs="+", default=["dna", "matmul"])
    e.add_argument("--model", default="sim-planted")
    e.add_argument("--draws", type=int, default=5, help="draws per prompt")
    e.add_argument(
        "--resamples", type=int, default=200, help="bootstrap resamples (the config's n_bootstrap)"
    )
    e.add_argument("--out", type=Path, default=Path("estimator_coverage.parquet"))
    return cli


def _reseeded(model: str, seed: int) -> tuple[dict[str, Any], Any]:
    """config/simulated.yaml and the registry entry of simulated ``model`` with its parameters' seed moved
    to ``1000 * seed + seed_of_the_entry`` (one replicate of a coverage bench)."""
    from saltbench.inference import load_model_registry
    from saltbench.inference.sources import SimulatedSource

    config = yaml.safe_load(Path("config/simulated.yaml").read_text(encoding="utf-8"))
    spec = load_model_registry("config/models.yaml")[model]
    source = spec.source
    if not isinstance(source, SimulatedSource):
        raise SystemExit(f"--model {model!r} is not a simulated model")
    params = dataclasses.replace(source.parameters, seed=1000 * seed + source.parameters.seed)
    return config, dataclasses.replace(spec, source=dataclasses.replace(source, parameters=params))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command != "speed":
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        logging.getLogger("saltbench").setLevel(logging.WARNING)  # not a line per intervened sample
    (speed if args.command == "speed" else coverage)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
