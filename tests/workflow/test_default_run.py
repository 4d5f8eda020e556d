"""The embedded default configuration, run for real: a miniature of the whole study in which every finding
is estimated (docs/tiny-models.md §1). The checks are about estimability — statuses, defined AUROCs,
intervals — never about the values, which are whatever the run measures.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from saltbench.io import read_table

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

TINY = ("salt-tiny@", "salt-tiny-reason@")
"""Models of the workflow-trained families (registry entries ``{family}@{checkpoint}``)."""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, copy_workflow) -> Path:
    """A fresh copy of the workflow after the README's first command (the converted SmolLM2 reused)."""
    workdir = copy_workflow(tmp_path_factory.mktemp("default-run"), with_converted_smollm2=True)
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--profile", "profiles/local"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=2400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return workdir


def _table(run_dir: Path, name: str) -> pl.DataFrame:
    return read_table(run_dir / "results" / "tables" / f"{name}.parquet", f"table.{name}")


def _section(page: str, number: int) -> str:
    return page.split(f"## {number}.")[1].split("\n## ")[0]


def test_granularity_is_defined_for_three_tasks_in_each_style(run_dir: Path) -> None:
    """Some eligible model has correct and wrong units at atom and line level in >= 3 tasks per prompt style
    (logic, kronecker, words; MatMul's lines hold 3-4 correct ones over all models, below the per-model
    floor of docs/metrics.md §10)."""
    pooled = _table(run_dir, "granularity").filter(pl.col("metric") == "auroc_pooled")
    for style, part in pooled.group_by("style"):
        defined = part.filter(pl.col("granularity").is_in(["atom", "line"]) & pl.col("mean").is_finite())
        tasks = defined.group_by("task").len().filter(pl.col("len") == 2)["task"].to_list()
        assert len(tasks) >= 3, (style, sorted(tasks))


def test_intervention_effects_are_fitted_with_intervals_for_two_tasks(run_dir: Path) -> None:
    effects = _table(run_dir, "interventions")
    fitted = effects.filter(
        pl.col("term").is_in(["corrupted_fraction", "position_fraction"])
        & (pl.col("status") == "ok")
        & pl.col("ci_low").is_finite()
        & pl.col("ci_high").is_finite()
    )
    both = fitted.group_by("model", "task").len().filter(pl.col("len") == 2)
    assert both.height >= 2, effects.select("model", "task", "term", "status").to_dicts()


def test_reasoning_comparisons_of_the_tiny_family_are_estimated(run_dir: Path) -> None:
    """Prompt-style pairs and reasoning-model pairs, precision and AUROC: every one has status ok."""
    table = _table(run_dir, "reasoning_tradeoff")
    tiny = table.filter(
        pl.col("model_a").str.starts_with(TINY[0]) | pl.col("model_b").str.starts_with(TINY[1])
    )
    assert set(tiny["kind"]) == {"style", "reasoning"}
    for row in tiny.iter_rows(named=True):
        assert (row["status_precision"], row["status_auroc"]) == ("ok", "ok"), row
        assert math.isfinite(row["delta_precision_ci_low"]) and math.isfinite(row["rel_delta_auroc_ci_high"])


def test_findings_page_estimates_the_tiny_family_everywhere(run_dir: Path) -> None:
    page = (run_dir / "results" / "findings.md").read_text()
    assert "## What this run estimated" in page
    for number in (3, 4):
        tiny_lines = [
            line for line in _section(page, number).splitlines() if line.startswith(("- salt-tiny",))
        ]
        assert tiny_lines, number
        assert not [line for line in tiny_lines if "not enough data" in line]
    figures = run_dir / "figures"
    for name in ("reasoning_tradeoff", "interventions_propagation", "interventions_context_length"):
        assert (figures / f"{name}.png").stat().st_size > 10_000


def test_the_tiny_models_draws_and_second_pass_reach_every_table(run_dir: Path) -> None:
    """The default run gives the tiny models 3 draws and asks them about their atoms, lines and whole answers
    (config ``inference.samples``, ``inference.second_pass``; they learn the questions in training,
    docs/tiny-models.md §2.4): generation health counts both, the units carry the sampling-consistency and
    second-pass columns, the dominance table and findings §1 rank the three families at every granularity,
    the frontier prices them and the figure is drawn (docs/confidence.md §Families)."""
    health = _table(run_dir, "generation_health")
    tiny = health.filter(pl.col("model").str.starts_with("salt-tiny"))
    assert (tiny["draws"] == tiny["draws_expected"]).all() and (tiny["draws_expected"] > 0).all()
    assert tiny["second_pass_replies"].sum() > 0
    assert tiny["second_pass_ok"].sum() > tiny["second_pass_replies"].sum() / 2  # the questions are answered
    smollm2 = health.filter(pl.col("model") == "smollm2-135m")
    assert (smollm2["draws_expected"] == 0).all() and (smollm2["second_pass_replies"] == 0).all()
    units = read_table(run_dir / "data/units/salt-tiny@final/direct/logic.parquet", "units")
    assert units["draws.agreement"].is_not_nan().any()
    assert (
        units["second_pass.verbalized"].is_not_nan().any() and units["second_pass.p_true"].is_not_nan().any()
    )
    dominance = _table(run_dir, "dominance")
    winners = _section((run_dir / "results" / "findings.md").read_text(), 1)
    for granularity in ("atom", "line", "generation"):
        families = set(dominance.filter(pl.col("granularity") == granularity)["family"])
        assert {"single_pass", "samples", "second_pass"} <= families, granularity
        (ranking,) = [
            line
            for line in winners.splitlines()
            if line.startswith(f"- ranking (auroc_pooled), {granularity}:")
        ]
        assert all(f"{family}: " in ranking for family in ("single_pass", "samples", "second_pass")), ranking
    frontier = _table(run_dir, "frontier")
    samples = frontier.filter(pl.col("family") == "samples")
    assert samples.height and (samples["extra_generated_tokens"] > 0).all()
    assert (run_dir / "figures" / "frontier.png").stat().st_size > 10_000
    assert "By family" in winners


def test_smollm2_which_answers_nothing_is_named_in_section_0_only(run_dir: Path) -> None:
    """SmolLM2 answers none of its prompts (docs/tiny-models.md): it enters no pooled or compared estimate,
    and the findings page names it in §0 alone (docs/metrics.md §10)."""
    eligibility = _table(run_dir, "eligibility")
    assert not eligibility.filter(pl.col("model") == "smollm2-135m")["eligible_model"].any()
    tradeoff = _table(run_dir, "reasoning_tradeoff")
    assert "smollm2-135m" not in {*tradeoff["model_a"], *tradeoff["model_b"]}
    page = (run_dir / "results" / "findings.md").read_text()
    named = [section.splitlines()[0] for section in page.split("\n## ") if "smollm2" in section]
    assert named == ["0. What the responses hold"], named


def test_a_damaged_model_file_fails_its_job_by_name_and_the_next_run_rebuilds_it(
    run_dir: Path, tmp_path: Path
) -> None:
    """4096 bytes overwritten in the middle of the converted SmolLM2 weights (in a copy of the finished run):
    the generation job refuses them naming the file, and the next run plans the conversion again."""
    import shutil

    work = Path(shutil.copytree(run_dir, tmp_path / "run", symlinks=True))
    weights = work / "data" / "models" / "converted" / "smollm2-135m" / "model.safetensors"
    with open(weights, "r+b") as handle:
        handle.seek(weights.stat().st_size // 2)
        handle.write(b"\xa5" * 4096)
    snakemake = [sys.executable, "-m", "snakemake", "--cores", "2", "--profile", "profiles/local"]
    forced = subprocess.run(
        [*snakemake, "--forcerun", "data/generations/smollm2-135m/direct/dna.parquet"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert forced.returncode != 0
    log = (work / "logs" / "generations" / "smollm2-135m" / "generate.log").read_text()
    assert f"{weights.relative_to(work)}: SHA-256 differs from the manifest" in log + forced.stderr, log[
        -2000:
    ]
    assert "the rule convert_gguf_model rebuilds it" in log + forced.stderr
    assert not weights.parent.exists()  # moved aside
    # the next run of what needs the model plans its conversion (with the default target alone, Snakemake
    # leaves a missing intermediate file whose downstream outputs are up to date alone)
    target = "data/generations/smollm2-135m/direct/dna.parquet"
    plan = subprocess.run(
        [*snakemake, "--dry-run", target], cwd=work, capture_output=True, text=True, timeout=600
    )
    assert plan.returncode == 0 and "convert_gguf_model" in plan.stdout, plan.stdout[-2000:]


def test_the_explorer_is_built_within_its_size_budget(run_dir: Path) -> None:
    """results/explorer: every cell has its data file, at most 20 MB in all (docs/explorer.md §4; its build
    time is measured by bench/bench_explorer.py, not asserted), linked from the findings page."""
    folder = run_dir / "results" / "explorer"
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert (folder / "index.html").is_file() and (folder / "data" / "index.js").is_file()
    assert len(list((folder / "data").glob("chunk-*.js"))) == len(
        list((run_dir / "data" / "units").rglob("*.parquet"))
    )
    assert sum(p.stat().st_size for p in files) <= 20_000_000
    assert "[the explorer](explorer/index.html)" in (run_dir / "results" / "findings.md").read_text()
