"""Workflow tests: lint, dry runs of the default and paper-scale plans, and the datasets stage for real."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.workflow

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    return proc


def job_counts(output: str) -> dict[str, int]:
    """Jobs per rule from the "Job stats" table of a (dry) run."""
    stats = output.split("Job stats:", 1)[1].split("total", 1)[0]
    rows = (line.split() for line in stats.splitlines())
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[1].isdigit()}


@pytest.fixture()
def workdir(tmp_path, copy_workflow) -> Path:
    """A copy of the workflow files (not outputs) in a temporary folder."""
    return copy_workflow(tmp_path)


def test_lint_is_clean(workdir):
    proc = run(["--lint"], workdir)
    assert "Congratulations" in proc.stdout + proc.stderr or "No issues" in proc.stdout + proc.stderr


def test_paper_scale_dry_run_with_the_slurm_profile(workdir):
    """The whole paper-scale plan (59 models, all tasks and styles, interventions, every figure) plans
    through the SLURM profile, and each inference job shows the GPU request taken from the registry."""
    proc = run(["-n", "--configfile", "config/paper.yaml", "--profile", "profiles/slurm"], workdir)
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["generate_shard"] == 59 * 2 * 18  # models x styles x shards of 100 samples
    assert counts["generate_draws_shard"] == counts["generate_shard"]  # the draws: the same shards
    assert counts["intervention_shard"] == 8 * 6 * 2
    assert counts["figure_granularity_auroc"] == 1
    assert "gpu=4" in out and "gpu=1" in out and "slurm_partition=gpu" in out


@pytest.mark.parametrize(
    ("figure", "expected"),
    [
        (
            "granularity_auroc",
            {
                "build_dataset": 6,
                "generate_shard": 2124,
                "merge_generations": 118,
                "second_pass": 59,  # inference.second_pass: one job per model
                "generate_draws_shard": 2124,  # 5 draws per prompt (inference.samples)
                "merge_draws": 118,
                "score_units": 118,
                "compute_metrics": 118,
                "table_generation_health": 1,  # behind the eligibility rule (docs/metrics.md §10)
                "table_eligibility": 1,
                "table_granularity": 1,
                "figure_granularity_auroc": 1,
            },
        ),
        (
            "interventions_propagation",
            {
                "build_dataset": 6,
                "intervention_shard": 96,
                "merge_interventions": 48,
                "table_interventions": 1,
                "figure_interventions_propagation": 1,
            },
        ),
    ],
)
def test_one_paper_figure_plans_only_what_it_needs(workdir, figure, expected):
    proc = run(["-n", f"figures/{figure}.pdf", "--configfile", "config/paper.yaml"], workdir)
    assert job_counts(proc.stdout + proc.stderr) == expected


@pytest.mark.parametrize("jobs", ["per_model", "per_shard"])
@pytest.mark.parametrize("styles", [["direct"], ["cot"], ["direct", "cot"]])
def test_every_prompt_style_list_plans_only_its_styles(workdir, jobs, styles):
    """A run of one prompt style (either one) or both plans exactly those styles' jobs: no rule file
    replaces the configured list with the vocabulary's (issue: `prompt_styles: [direct]` planned cot jobs)."""
    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    config["prompt_styles"] = styles
    config["inference"]["jobs"] = jobs
    (workdir / "config" / "styles.yaml").write_text(yaml.safe_dump(config))
    proc = run(["-n", "--configfile", "config/styles.yaml"], workdir)
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    n_models = len(config["models"])
    assert counts["score_units"] == counts["compute_metrics"] == n_models * len(styles)  # per (model, style)
    planned = {style for style in ("direct", "cot") if f"/{style}/" in out}
    assert planned == set(styles)


REGISTRY_MISTAKES = {  # SmolLM2's entry changed -> the message
    "negative_gpus": (
        lambda entry: entry.replace("gpus: 0", "gpus: -1", 1),
        "invalid model registry: models.smollm2-135m.resources.gpus: -1 is less than the minimum of 0",
    ),
    "no_source": (
        lambda entry: re.sub(r"    source: .*\n", "", entry, count=1),
        "invalid model registry: models.smollm2-135m: 'source' is a required property",
    ),
    "unknown_backend": (
        lambda entry: entry.replace("backend: vllm", "backend: tgi", 1),
        "models.smollm2-135m.backend: 'tgi' is not one of ['hf', 'vllm', 'openai', 'vllm_server', "
        "'simulated']",
    ),
    "duplicate_key": (
        lambda entry: entry.replace("    dtype:", "    dtype: float16\n    dtype:", 1),
        "duplicate key 'models.smollm2-135m.dtype'",
    ),
}


@pytest.mark.parametrize("mistake", sorted(REGISTRY_MISTAKES))
def test_a_registry_mistake_stops_the_run_with_its_message_alone(workdir, mistake):
    """A wrong model registry is reported like a wrong configuration: one line naming the file, the model and
    the key, no Python traceback."""
    change, message = REGISTRY_MISTAKES[mistake]
    registry = workdir / "config" / "models.yaml"
    text = registry.read_text()
    start = text.index("  smollm2-135m:")
    registry.write_text(text[:start] + change(text[start:]))
    proc = subprocess.run([*SNAKEMAKE, "-n"], cwd=workdir, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1
    assert "saltbench: model_registry: config/models.yaml" in out and message in out, out[-2000:]
    assert "Traceback" not in out and 'File "' not in out


def test_an_intervention_model_outside_models_runs_the_interventions_only(workdir):
    """interventions.models may name a registry model that is not in models (docs/configuration.md §2): it
    gets intervention jobs and no inference, scoring or metrics jobs."""
    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    config["models"] = ["smollm2-135m"]
    assert config["interventions"]["models"] == ["salt-tiny@final"]
    (workdir / "config" / "outside.yaml").write_text(yaml.safe_dump(config))
    out = run(["-n", "--configfile", "config/outside.yaml"], workdir).stdout
    counts = job_counts(out)
    assert counts["generate_model"] == 1 and counts["score_units"] == 2  # SmolLM2's, in two styles
    assert counts["intervention_shard"] == len(config["interventions"]["tasks"])
    assert "data/interventions/salt-tiny@final/logic/shard-0.parquet" in out
    assert "data/generations/salt-tiny@final" not in out and "data/units/salt-tiny@final" not in out


def test_no_rule_file_shadows_a_snakefile_name():
    """Every name the Snakefile defines from the configuration (TASKS, STYLES, ...) keeps its configured value
    in the rule files: none of them imports or assigns it again."""
    repo = Path(__file__).resolve().parents[2]
    defined = set(re.findall(r"^([A-Z][A-Z0-9_]*) = ", (repo / "Snakefile").read_text(), re.M))
    assert {"TASKS", "STYLES", "MODELS"} <= defined
    for rule_file in sorted((repo / "rules").glob("*.smk")):
        text = rule_file.read_text()
        imported = {
            name.strip().split(" as ")[-1]
            for names in re.findall(r"^from \S+ import ([^(\n]+)$", text, re.M)
            for name in names.split(",")
        }
        assigned = set(re.findall(r"^([A-Z][A-Z0-9_]*) = ", text, re.M))
        assert not (imported | assigned) & defined, (
            f"{rule_file.name} redefines {(imported | assigned) & defined}"
        )


def test_bad_config_key_fails_before_any_job(workdir):
    proc = subprocess.run(
        [*SNAKEMAKE, "-n", "--config", "sead=1"], cwd=workdir, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode != 0
    assert "sead" in proc.stdout + proc.stderr


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.parquet"))}


def test_datasets_stage_is_byte_identical_on_rerun(workdir):
    targets = [f"data/datasets/{t}.parquet" for t in ("dna", "code", "logic", "matmul", "kronecker", "words")]
    run(["--cores", "2", *targets], workdir)
    first = _digests(workdir / "data" / "datasets")
    assert len(first) == 6
    # the job run by hand (saltbench.workflow.debug, resolved by Snakemake) writes the bytes the run wrote
    debug = [sys.executable, "-m", "saltbench.workflow.debug", "build_dataset", "task=logic", "--into", "out"]
    done = subprocess.run(debug, cwd=workdir, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert _digests(workdir / "out/data/datasets") == {"logic.parquet": first["logic.parquet"]}
    assert "wrote 32 logic samples" in (workdir / "out/logs/datasets/logic.log").read_text(encoding="utf-8")
    shutil.rmtree(workdir / "data")
    run(["--cores", "2", *targets], workdir)
    assert _digests(workdir / "data" / "datasets") == first


@pytest.mark.slow
@pytest.mark.model
def test_tiny_end_to_end_run_and_resume(tmp_path, copy_workflow):
    """config/test.yaml: datasets -> SmolLM2 shards -> units -> metrics; a lost shard is recomputed alone."""
    workdir = copy_workflow(tmp_path, with_converted_smollm2=True)
    run(["--cores", "2", "--configfile", "config/test.yaml"], workdir, timeout=1500)
    import polars as pl
    from helpers.job_logs import job_threads_from_logs, most_threads_at_once

    from saltbench.io import read_table

    jobs = job_threads_from_logs(workdir / "logs")
    assert len(jobs) >= 10  # datasets, shards, merge, scoring, metrics
    assert all(0 < job.largest_pool <= job.granted for job in jobs), jobs  # torch and polars pools
    assert most_threads_at_once(jobs) <= 2, jobs  # --cores 2

    for task in ("dna", "matmul"):
        metrics = read_table(workdir / f"results/metrics/smollm2-135m/direct/{task}.parquet", "metrics")
        assert set(metrics["granularity"]) == {"atom", "line", "generation"}
        assert metrics.filter(pl.col("metric") == "precision").height == 3
        gens = read_table(workdir / f"data/generations/smollm2-135m/direct/{task}.parquet", "generations")
        assert gens.height == 3 and gens["sample_id"].n_unique() == 3
    # simulate a run killed while generating: one shard and everything downstream of it are missing
    shard = workdir / "data/generations/smollm2-135m/direct/dna/shard-1.parquet"
    before = shard.read_bytes()
    for path in (
        shard,
        workdir / "data/generations/smollm2-135m/direct/dna.parquet",
        workdir / "data/units/smollm2-135m/direct/dna.parquet",
        workdir / "results/metrics/smollm2-135m/direct/dna.parquet",
    ):
        path.unlink()
    plan = run(["--cores", "2", "--configfile", "config/test.yaml", "-n"], workdir)
    jobs = [line.split() for line in plan.stdout.splitlines() if line.startswith("generate_shard")]
    assert jobs and jobs[0][-1] == "1", plan.stdout  # only the lost shard is regenerated
    assert "output: data/generations/smollm2-135m/direct/dna/shard-1.parquet" in plan.stdout
    run(["--cores", "2", "--configfile", "config/test.yaml"], workdir, timeout=900)
    assert shard.read_bytes() == before  # deterministic generation (float32, CPU)
    _second_pass_joins_the_units_and_resumes(workdir)


def _second_pass_joins_the_units_and_resumes(workdir: Path) -> None:
    """inference.second_pass on after the run: rule second_pass asks (never a greedy generation again), the
    units gain its columns, the health table counts its replies; a lost table is made again, identical
    (docs/confidence.md §8; kept tables restored after a failed job: tests/stages/test_second_pass_stage.py)
    """
    import polars as pl

    from saltbench.io import read_table

    config = yaml.safe_load((workdir / "config/test.yaml").read_text(encoding="utf-8"))
    config["inference"]["second_pass"] = {"kinds": ["verbalized", "p_true"]}
    (workdir / "config/second.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    units = [f"data/units/smollm2-135m/direct/{task}.parquet" for task in ("dna", "matmul")]
    targets = [*units, "results/tables/generation_health.parquet"]
    options = ["--cores", "2", "--configfile", "config/second.yaml"]
    plan = run([*targets, "-n", *options], workdir).stdout
    assert "rule second_pass:" in plan and "generate_shard" not in plan, plan
    run([*targets, *options], workdir)
    health = read_table(workdir / "results/tables/generation_health.parquet", "table.generation_health")
    for task, path in zip(("dna", "matmul"), units, strict=True):
        asked = read_table(workdir / f"data/second_pass/smollm2-135m/direct/{task}.parquet", "second_pass")
        scored = read_table(workdir / path, "units")
        values = scored.select("second_pass.verbalized", "second_pass.p_true")
        assert values.select(pl.all().is_not_nan().sum()).sum_horizontal().item() == (
            asked.filter(pl.col("status") == "ok").height
        )
        assert health.filter(pl.col("task") == task)["second_pass_replies"].item() == asked.height
    lost = workdir / "data/second_pass/smollm2-135m/direct/dna.parquet"
    before = lost.read_bytes()
    for path in (lost, workdir / units[0]):  # a table lost and what was made of it
        path.unlink()
    run([*targets, *options], workdir)
    assert lost.read_bytes() == before


@pytest.mark.model
@pytest.mark.vllm
def test_one_shard_and_interventions_through_vllm(tmp_path, copy_workflow):
    """config/test-vllm.yaml: a DNA shard generated by the vLLM engine is scored into units and metrics,
    and the intervention runner runs on vLLM; entropy-based full-flavour values are NaN, never made up."""
    pytest.importorskip("vllm", reason="vLLM is not installed")
    import polars as pl

    from saltbench.io import read_provenance, read_table

    workdir = copy_workflow(tmp_path, with_converted_smollm2=True)
    targets = [
        "results/metrics/smollm2-135m/direct/dna.parquet",
        "data/interventions/smollm2-135m/kronecker.parquet",
    ]
    run([*targets, "--cores", "2", "--configfile", "config/test-vllm.yaml"], workdir, timeout=1500)
    gens_path = workdir / "data/generations/smollm2-135m/direct/dna/shard-0.parquet"
    assert read_provenance(gens_path)["backend"] == "vllm"
    gens = read_table(gens_path, "generations")
    assert gens.height == 2 and (gens["num_generated_tokens"] > 0).all()
    assert gens["entropy"].explode().is_nan().all() and gens["chosen_logprob"].explode().is_finite().all()
    units = read_table(workdir / "data/units/smollm2-135m/direct/dna.parquet", "units")
    spanned = units.filter(pl.col("n_tokens") > 0)
    assert spanned.height > 0 and spanned["topk.mean_probability"].is_finite().all()
    assert spanned["full.mean_probability"].is_finite().all() and spanned["full.mean_entropy"].is_nan().all()
    log = (workdir / "logs/units/smollm2-135m/direct.log").read_text()
    assert "full-vocabulary entropy not recorded" in log
    metrics = read_table(workdir / "results/metrics/smollm2-135m/direct/dna.parquet", "metrics")
    assert set(metrics["granularity"]) == {"atom", "line", "generation"}
    interventions = read_table(workdir / "data/interventions/smollm2-135m/kronecker.parquet", "interventions")
    assert interventions.height > 0 and interventions["full.mean_entropy"].is_nan().all()
    assert (
        read_provenance(workdir / "data/interventions/smollm2-135m/kronecker/shard-0.parquet")["backend"]
        == "vllm"
    )


@pytest.mark.model
def test_run_lock_refuses_a_second_run_and_a_killed_run_resumes(tmp_path, copy_workflow):
    """While a real run works, a second real run and a targeted run in the same directory are refused,
    and a run that finds nothing to do cannot take the lock away; after SIGKILL of the first run, a rerun
    resumes without --unlock and removes the temporary file an interrupted writer left."""
    import os
    import signal
    import time

    workdir = copy_workflow(tmp_path, with_converted_smollm2=True)
    command = ["--cores", "1", "--profile", "profiles/local", "--configfile", "config/test.yaml"]
    run(["data/datasets/dna.parquet", *command], workdir)  # complete before the first run starts: see below
    first = subprocess.Popen(
        [*SNAKEMAKE, *command],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        lock = workdir / ".snakemake/saltbench-run.lock"
        deadline = time.monotonic() + 300
        while not (lock.exists() and lock.read_text().strip() == str(first.pid)):
            assert first.poll() is None and time.monotonic() < deadline, "the first run did not start"
            time.sleep(0.5)
        # Freeze the first run (it keeps its lock): on a fast machine it could otherwise finish before the
        # attempts below, which would then rightly succeed.
        os.killpg(first.pid, signal.SIGSTOP)
        # a target the first run never builds (its config has no cot style; this run's adds it), so this
        # run always has work
        cot_shard = "data/generations/smollm2-135m/cot/dna/shard-0.parquet"
        target = [cot_shard, "--config", "prompt_styles=[direct,cot]"]

        def refused(args: list[str]) -> None:
            second = subprocess.run(
                [*SNAKEMAKE, *args], cwd=workdir, capture_output=True, text=True, timeout=300
            )
            assert second.returncode != 0, second.stdout[-2000:]
            assert f"another workflow run (process {first.pid})" in second.stdout + second.stderr

        refused(command)  # the first run has work left, so this one has work too
        refused([*target, *command])
        nothing = subprocess.run(
            [*SNAKEMAKE, "data/datasets/dna.parquet", *command],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert nothing.returncode == 0 and "Nothing to be done" in nothing.stdout + nothing.stderr
        refused([*target, *command])  # ... and did not take the lock away
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    stale = workdir / "data/generations/smollm2-135m/direct/dna/.shard-1.parquet.x1y2.tmp"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"half a file")
    metrics = "results/metrics/smollm2-135m/direct/matmul.parquet"
    (workdir / metrics).unlink(missing_ok=True)  # work is left
    run([metrics, *command], workdir, timeout=1500)  # no --unlock (one target: the lock is any real run's)
    assert not stale.exists()
    assert (workdir / metrics).is_file()


def test_the_paper_stand_ins_plan_the_papers_analysis_jobs(workdir):
    """bench/bench_paper_size.py's configuration (docs/performance.md §5): the paper roster as simulated
    stand-ins at 1/64 of the samples plans the same analysis jobs as the paper configuration, plus the
    recovery table of its planted values, with one generation job per model."""
    from saltbench.inference.simulated.stand_in import scaled_config, stand_in_registry

    paper = yaml.safe_load((workdir / "config/paper.yaml").read_text(encoding="utf-8"))
    registry = yaml.safe_load((workdir / paper["model_registry"]).read_text(encoding="utf-8"))["models"]
    (workdir / "config/stand-ins.yaml").write_text(
        yaml.safe_dump(stand_in_registry(registry, paper["models"])), encoding="utf-8"
    )
    scaled = scaled_config(paper, 1 / 64, "config/stand-ins.yaml")
    (workdir / "config/scaled.yaml").write_text(yaml.safe_dump(scaled), encoding="utf-8")
    stand_ins = job_counts(
        (p := run(["-n", "--configfile", "config/scaled.yaml"], workdir)).stdout + p.stderr
    )
    real = job_counts((p := run(["-n", "--configfile", "config/paper.yaml"], workdir)).stdout + p.stderr)
    analysis = {
        rule for rule in real if rule.startswith(("score_", "compute_", "table_", "figure_", "explorer"))
    }
    assert analysis and {rule: stand_ins[rule] for rule in analysis} == {
        rule: real[rule] for rule in analysis
    }
    assert stand_ins["generate_model"] == 59 and stand_ins["table_recovery"] == 1
    assert stand_ins["intervention_shard"] == 8 * 6  # one shard of 1/64 of the samples per model and task
