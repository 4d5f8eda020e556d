"""rules/analysis.smk and rules/figures.smk for real: lint, and every table, figure and the HTML report.

A throw-away workflow folder holds a minimal Snakefile (defining the lists the rules expect), the two rule
files, their scripts, the captions and synthetic upstream tables with the contract schemas.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from helpers.synthetic_tables import (
    synthetic_interventions,
    synthetic_metrics,
    synthetic_train_log,
    synthetic_units,
    with_contract_columns,
)
from test_analysis_findings import assert_numbers_come_from_tables

from saltbench.analysis import FINDINGS_TABLES
from saltbench.confidence import PAPER_CONFIDENCE_NAMES
from saltbench.core.contracts import TABLES as TABLE_ARTIFACTS
from saltbench.io import read_provenance, read_table, write_table
from saltbench.plotting import FIGURES

pytestmark = pytest.mark.workflow

REPO = Path(__file__).resolve().parents[2]
MODELS = ("toy-1b", "toy-1b-thinking")
TASKS = ("dna", "matmul")
STYLES = ("direct", "cot")
TABLES = (
    "leaderboard",
    "accuracy_by_task",
    "dominance",
    "granularity",
    "reasoning_tradeoff",
    "interventions",
    "interventions_by_position",
    "interventions_by_corruption",
    "interventions_by_placement",
    "label_noise",
)

SNAKEFILE = """
configfile: "config.yaml"

TASKS = config["tasks"]
STYLES = config["prompt_styles"]
MODELS = config["models"]
INTERVENTION_MODELS = config["interventions"]["models"]
INTERVENTION_TASKS = config["interventions"]["tasks"]
TRAINED_MODELS = config["training"]["models"]
SIMULATED_MODELS = []
IMPORTED_MODELS = []

report: "report/workflow.rst"

include: "rules/analysis.smk"
include: "rules/figures.smk"

rule all:
    input:
        expand("results/tables/{name}.{ext}", name={tables}, ext=["parquet", "csv", "tex"]),
        expand("results/tables/{name}.{ext}", name=["reliability", "rejection"], ext=["parquet", "csv"]),
        expand("figures/{name}.{ext}", name={figures}, ext=["pdf", "png"]),
        "results/findings.md",
"""


def _write_workflow(root: Path, level: str) -> None:
    for name in ("analysis.smk", "figures.smk"):
        (root / "rules").mkdir(exist_ok=True)
        shutil.copy2(REPO / "rules" / name, root / "rules" / name)
    shutil.copytree(REPO / "report", root / "report")
    (root / "workflow_scripts").mkdir()
    for script in (REPO / "workflow_scripts").glob("*.py"):
        if script.name in ("make_table.py", "draw_figure.py", "findings.py"):
            shutil.copy2(script, root / "workflow_scripts" / script.name)
    shutil.copy2(REPO / "environment.yml", root / "environment.yml")
    (root / "Snakefile").write_text(
        SNAKEFILE.replace("{tables}", repr(list(TABLES))).replace("{figures}", repr(list(FIGURES)))
    )
    config = {
        "seed": 3,
        "tasks": list(TASKS),
        "prompt_styles": list(STYLES),
        "models": list(MODELS),
        "model_registry": "registry.yaml",
        "metrics": {
            "default_confidence": "mean_probability",
            "n_bins": 10,
            "calibration_fraction": 0.5,
            "n_bootstrap": 20,
            "ci_level": 0.95,
        },
        "analysis": {
            "paired_bootstrap": 100,
            "intervention_bootstrap": 10,
            "reasoning_level": level,
            "label_noise_epsilons": [0.0, 0.2],
            "label_noise_replicates": 3,
        },
        "scoring": {
            "granularities": ["atom", "line", "generation"],
            "confidence_functions": list(PAPER_CONFIDENCE_NAMES),
        },
        "interventions": {"models": [MODELS[0]], "tasks": list(TASKS), "style": "direct"},
        "training": {"models": ["salt-tiny", "salt-small"]},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    registry = {"models": {MODELS[0]: {"reasoning": False}, MODELS[1]: {"reasoning": True}}}
    (root / "registry.yaml").write_text(yaml.safe_dump(registry))


def _write_inputs(root: Path) -> None:
    metrics = synthetic_metrics(models=MODELS, styles=STYLES, tasks=TASKS, seed=2)
    units = synthetic_units(models=MODELS, styles=STYLES, tasks=TASKS, n_samples=8, seed=2)
    for (model, style, task), frame in metrics.partition_by("model", "style", "task", as_dict=True).items():
        (root / "results" / "metrics" / model / style).mkdir(parents=True, exist_ok=True)
        write_table(frame, root / "results" / "metrics" / model / style / f"{task}.parquet", {}, "metrics")
    for (model, style, task), frame in units.partition_by("model", "style", "task", as_dict=True).items():
        (root / "data" / "units" / model / style).mkdir(parents=True, exist_ok=True)
        write_table(frame, root / "data" / "units" / model / style / f"{task}.parquet", {}, "units")
    inter = synthetic_interventions(models=MODELS[:1], tasks=TASKS, n_samples=6, seed=2)
    for (model, task), frame in inter.partition_by("model", "task", as_dict=True).items():
        (root / "data" / "interventions" / model).mkdir(parents=True, exist_ok=True)
        path = root / "data" / "interventions" / model / f"{task}.parquet"
        write_table(with_contract_columns(frame, "interventions"), path, {}, "interventions")
    logs = synthetic_train_log(models=("salt-tiny", "salt-small"), steps=50)
    for (model,), frame in logs.partition_by("model", as_dict=True).items():
        (root / "data" / "models" / model).mkdir(parents=True, exist_ok=True)
        # the training stage writes no model column
        path = root / "data" / "models" / model / "train_log.parquet"
        write_table(with_contract_columns(frame.drop("model"), "train_log"), path, {}, "train_log")


def _snakemake(root: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "snakemake", *args]
    proc = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=timeout)
    tail = f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    assert proc.returncode == 0, f"snakemake {' '.join(args)} failed:\n{tail}"
    return proc


def test_lint_and_dry_run(tmp_path):
    _write_workflow(tmp_path, "task")
    _write_inputs(tmp_path)
    lint = _snakemake(tmp_path, "--lint")
    text = lint.stdout + lint.stderr
    assert "Congratulations" in text or "No issues" in text, text
    dry = _snakemake(tmp_path, "-n", "--quiet", "rules")
    for rule in ("table_leaderboard", "table_interventions", "figure_training_loss", "figure_dominance"):
        assert rule in dry.stdout + dry.stderr


@pytest.mark.slow
@pytest.mark.parametrize("level", ["task", "sample"])
def test_tables_figures_and_report(tmp_path, level):
    _write_workflow(tmp_path, level)
    _write_inputs(tmp_path)
    _snakemake(tmp_path, "--cores", "2")
    for name in TABLES:
        table = read_table(tmp_path / "results" / "tables" / f"{name}.parquet", TABLE_ARTIFACTS[name])
        assert table.height > 0, name
        assert read_provenance(tmp_path / "results" / "tables" / f"{name}.parquet")["stage"] == "analysis"
        assert (tmp_path / "results" / "tables" / f"{name}.tex").read_text().startswith("\\begin{tabular}")
    tradeoff = read_table(
        tmp_path / "results" / "tables" / "reasoning_tradeoff.parquet", TABLE_ARTIFACTS["reasoning_tradeoff"]
    )
    assert set(tradeoff["kind"]) == {"style", "reasoning"} and set(tradeoff["level"]) == {level}
    assert (tradeoff["n_pairs"] > 0).all()
    for name in FIGURES:
        for ext in ("pdf", "png"):
            assert (tmp_path / "figures" / f"{name}.{ext}").stat().st_size > 2000, (name, ext)
    findings = (tmp_path / "results" / "findings.md").read_text()
    tables = {
        name: read_table(tmp_path / "results" / "tables" / f"{name}.parquet", TABLE_ARTIFACTS[name])
        for name in FINDINGS_TABLES
        if name != "recovery"  # runs with simulated models only
    }
    assert assert_numbers_come_from_tables(findings, tables) > 10
    if level == "task":
        _snakemake(tmp_path, "--report", "report.html")
        html = (tmp_path / "report.html").read_text(errors="replace")
        assert len(html) > 100_000 and "dominance" in html and "Which confidence function wins" in html
        assert "findings.md" in html and "Findings of this run" in html
    leaderboard = pl.read_csv(tmp_path / "results" / "tables" / "leaderboard.csv")
    assert leaderboard.height == len(MODELS) * len(STYLES)
