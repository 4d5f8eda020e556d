"""rules/analysis.smk and rules/figures.smk for real: lint, and every table, figure and the HTML report.

A throw-away workflow folder holds a minimal Snakefile (defining the lists the rules expect), the two rule
files, their scripts, the captions and synthetic upstream tables with the contract schemas.
"""

from __future__ import annotations

import os
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
MODELS = ("toy-1b", "toy-1b-thinking", "toy-mute")
MUTE = "toy-mute"
"""A model whose every response was cut off: it enters no pooled or compared estimate (metrics.md §10)."""
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
DRAW_MODELS = []

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
        if script.name in ("make_table.py", "make_table_part.py", "draw_figure.py", "findings.py"):
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
            "alignment": "strict",
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
    units = synthetic_units(models=MODELS, styles=STYLES, tasks=TASKS, n_samples=8, seed=2).with_columns(
        answer_status=pl.when(pl.col("model") == MUTE).then(pl.lit("truncated")).otherwise("answer_status")
    )
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
    _assert_mute_model_only_named(tmp_path, findings)


def _assert_mute_model_only_named(root: Path, findings: str) -> None:
    """The model that answered nothing is named in the findings' §0, the health, eligibility and per-model
    accuracy tables (marked not eligible), and in no other table or section."""
    eligibility = read_table(
        root / "results" / "tables" / "eligibility.parquet", TABLE_ARTIFACTS["eligibility"]
    )
    mute = eligibility.filter(pl.col("model") == MUTE)
    assert mute.height and not mute["eligible_model"].any() and mute["reason"].str.contains("answered").all()
    assert eligibility.filter(pl.col("model") != MUTE)["eligible_model"].all()
    for name in ("leaderboard", "accuracy_by_task"):
        table = read_table(root / "results" / "tables" / f"{name}.parquet", TABLE_ARTIFACTS[name])
        assert set(table.filter(pl.col("model") == MUTE)["eligible"]) == {False}, name
    for name in TABLE_ARTIFACTS:
        path = root / "results" / "tables" / f"{name}.parquet"
        if (
            name in ("generation_health", "eligibility", "leaderboard", "accuracy_by_task")
            or not path.exists()
        ):
            continue
        table = read_table(path, TABLE_ARTIFACTS[name])
        for column in (c for c, t in table.schema.items() if t == pl.String):
            assert not table[column].str.contains(MUTE, literal=True).any(), (name, column)
    sections = findings.split("\n## ")
    named = [section.splitlines()[0] for section in sections if MUTE in section]
    assert named == ["0. What the responses hold"], named


NEW_TABLE_FUNCTION = '''
def response_count_table(job: TableJob) -> pl.DataFrame:
    """Responses per model, style and task (the atom-level precision rows of the metrics)."""
    import polars as pl

    rows = _metrics(job).filter((pl.col("metric") == "precision") & (pl.col("granularity") == "atom"))
    return rows.select("model", "style", "task", "n_responses").sort("model", "style", "task")


'''
NEW_TABLE_RULE = """    TableRule(
        "response_counts",
        "Responses per model, style and task.",
        response_count_table,
        inputs={"metrics": "metrics"},
        params={"flavour": "analysis.flavour"},
        formats=DATA_ONLY,
    ),
"""
NEW_CONTRACT = """RESPONSE_COUNTS_TABLE = _table(
    "response_counts",
    {"model": pl.String(), "style": pl.String(), "task": pl.String(), "n_responses": pl.Int64()},
    *_at_least(0, "n_responses"),
)

"""
NEW_FIGURE_MODULE = '''"""Responses per model, style and task."""

import polars as pl
from matplotlib.figure import Figure

from ._style import new_figure, styled


@styled
def plot_response_counts(table: pl.DataFrame, flavour: str = "topk") -> Figure:
    """One bar per (model, style, task)."""
    fig = new_figure()
    ax = fig.subplots()
    ax.bar(range(table.height), table["n_responses"].to_list())
    ax.set_title(f"responses ({flavour})")
    return fig
'''
NEW_FIGURE = """    FigureOutput(
        "response_counts",
        "response_counts",
        "Accuracy",
        "saltbench.plotting._response_counts:plot_response_counts",
        options={"flavour": "analysis.flavour"},
    ),
"""


def _insert(path: Path, anchor: str, text: str, after: bool = False) -> None:
    """Put ``text`` before (or after) the one occurrence of ``anchor`` in ``path``."""
    source = path.read_text()
    assert source.count(anchor) == 1, (path, anchor)
    path.write_text(source.replace(anchor, anchor + text if after else text + anchor))


def _changed(new: Path, old: Path) -> set[str]:
    """Files of ``new`` that ``old`` lacks or holds otherwise (bytecode aside)."""
    return {
        str(path.relative_to(new))
        for path in new.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and (
            not (old / path.relative_to(new)).is_file()
            or path.read_bytes() != (old / path.relative_to(new)).read_bytes()
        )
    }


def test_a_table_and_a_figure_each_added_in_three_files(tmp_path):
    """docs/extending.md §6–7 done in a copy of the package: a table (its function and declaration in
    saltbench/workflow/tables.py, its contract, its caption) and a figure drawn from it (its plotting module,
    its declaration in saltbench/core/outputs.py, its caption); the rule files are untouched, and the run
    makes both, the table with its contract and the declared parameters in its provenance."""
    _write_workflow(tmp_path, "task")
    _write_inputs(tmp_path)
    package = tmp_path / "src" / "saltbench"
    shutil.copytree(REPO / "src" / "saltbench", package, ignore=shutil.ignore_patterns("__pycache__"))
    tables = package / "workflow" / "tables.py"
    _insert(tables, "_REASONING_RESAMPLES = Derived(", NEW_TABLE_FUNCTION)
    _insert(tables, ')\n"""Every table rule', NEW_TABLE_RULE)
    contracts = package / "core" / "contracts.py"
    _insert(contracts, "TABLES: Mapping[str, Artifact] = {", NEW_CONTRACT)
    _insert(contracts, "        RECOVERY_TABLE,\n", "        RESPONSE_COUNTS_TABLE,\n", after=True)
    (tmp_path / "report" / "table_response_counts.rst").write_text("Responses per model, style and task.\n")
    (package / "plotting" / "_response_counts.py").write_text(NEW_FIGURE_MODULE)
    _insert(package / "core" / "outputs.py", ')\n"""Every figure, in the order', NEW_FIGURE)
    (tmp_path / "report" / "figure_response_counts.rst").write_text("Responses per model, style and task.\n")
    assert _changed(package, REPO / "src" / "saltbench") == {
        "workflow/tables.py",
        "core/contracts.py",
        "plotting/_response_counts.py",
        "core/outputs.py",
    }
    assert _changed(tmp_path / "report", REPO / "report") == {
        "table_response_counts.rst",
        "figure_response_counts.rst",
    }
    assert _changed(tmp_path / "rules", REPO / "rules") == set()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    targets = ["results/tables/response_counts.csv", "figures/response_counts.png"]
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *targets],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    table = pl.read_parquet(tmp_path / "results" / "tables" / "response_counts.parquet")
    assert table.columns == ["model", "style", "task", "n_responses"]
    assert table.height == len(MODELS) * len(STYLES) * len(TASKS) and (table["n_responses"] > 0).all()
    provenance = read_provenance(tmp_path / "results" / "tables" / "response_counts.parquet")
    assert provenance["rule"] == "table_response_counts" and provenance["params"] == {"flavour": "topk"}
    assert (tmp_path / "figures" / "response_counts.png").stat().st_size > 2000
