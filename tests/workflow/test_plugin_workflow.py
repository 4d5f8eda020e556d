"""The example plugin package (examples/saltbench-hex) installed into the venv (editable), checked, and run
end to end with SmolLM2: its task and its confidence function in every stage, table and figure
(docs/extending.md)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from saltbench.confidence import EXTENDED_FUNCTIONS, PAPER_CONFIDENCE_NAMES
from saltbench.io import read_table

pytestmark = [pytest.mark.workflow, pytest.mark.slow, pytest.mark.model]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "saltbench-hex"
FUNCTIONS = [*PAPER_CONFIDENCE_NAMES, *(spec.name for spec in EXTENDED_FUNCTIONS), "covered_mass"]


@pytest.fixture(scope="module")
def installed_example():
    """``pip install -e examples/saltbench-hex`` into this venv for the module; uninstalled afterwards
    (this process's registries were built before: only subprocesses see the plugin)."""
    try:
        importlib.metadata.distribution("saltbench-hex")
        was_installed = True
    except importlib.metadata.PackageNotFoundError:
        was_installed = False
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run([*pip, "install", "--no-deps", "--no-build-isolation", "-e", str(EXAMPLE)], check=True)
    yield
    if not was_installed:
        subprocess.run([*pip, "uninstall", "--yes", "saltbench-hex"], check=True)


def test_the_example_plugins_pass_the_conformance_checks(installed_example) -> None:
    code = (
        "from saltbench.conformance import check_task, check_confidence_function\n"
        "from saltbench.tasks import TASKS, TASK_PLUGINS\n"
        "from saltbench.confidence import CONFIDENCE_FUNCTIONS, CONFIDENCE_PLUGINS\n"
        "check_task(TASKS['hex']); check_confidence_function(CONFIDENCE_FUNCTIONS['covered_mass'])\n"
        "print(TASK_PLUGINS['hex'].package, CONFIDENCE_PLUGINS['covered_mass'].package, list(TASKS)[-1])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["saltbench-hex", "saltbench-hex", "hex"]


def test_the_example_task_and_function_run_end_to_end(installed_example, tmp_path, copy_workflow) -> None:
    workdir = copy_workflow(tmp_path, with_converted_smollm2=True)
    cfg = yaml.safe_load((REPO / "config" / "test.yaml").read_text())
    cfg.update(tasks=["hex", "dna"], prompt_styles=["direct", "cot"])
    cfg["datasets"]["params"] = {
        "hex": {"min_numbers": 3, "max_numbers": 5, "max_value": 255},
        "dna": {"min_codons": 2, "max_codons": 4},
    }
    cfg["scoring"] = {"confidence_functions": FUNCTIONS}
    # SmolLM2 answers none of its prompts: with the eligibility rule off (docs/metrics.md §10) its cells
    # still carry the plugin function into the tables this test reads
    cfg["analysis"] = {**cfg.get("analysis", {}), "eligible_answered_share": 0.0, "min_model_units": 0}
    (workdir / "plugin.yaml").write_text(yaml.safe_dump(cfg))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "plugin.yaml"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    dataset = read_table(workdir / "data/datasets/hex.parquet", "dataset")
    assert dataset.height == 3 and set(dataset["task"]) == {"hex"}
    assert (
        "Convert each decimal number into hexadecimal"
        in read_table(workdir / "data/generations/smollm2-135m/cot/hex.parquet", "generations")["prompt"][0]
    )
    units = read_table(workdir / "data/units/smollm2-135m/direct/hex.parquet", "units")
    assert {"full.covered_mass", "topk.mean_margin", "topk.mean_fisher_rao"} <= set(units.columns)
    assert "topk.covered_mass" not in units.columns  # a full-flavour function
    metrics = read_table(workdir / "results/metrics/smollm2-135m/direct/hex.parquet", "metrics")
    assert {"covered_mass", "mean_renyi_negentropy"} <= set(metrics["confidence"].drop_nulls())

    tables = workdir / "results" / "tables"
    accuracy = read_table(tables / "accuracy_by_task.parquet", "table.accuracy_by_task")
    assert "hex" in set(accuracy["task"])
    dominance = read_table(tables / "dominance.parquet", "table.dominance")
    assert {"covered_mass", "min_probability"} <= set(dominance["confidence"])
    assert set(dominance.filter(pl.col("confidence") == "covered_mass")["flavour"]) == {"full"}
    assert "hex" in set(read_table(tables / "granularity.parquet", "table.granularity")["task"])
    assert "mean_margin" in set(read_table(tables / "rejection.parquet", "table.rejection")["confidence"])
    for figure in ("accuracy_by_task", "dominance", "granularity_auroc", "rejection_curves"):
        assert (workdir / "figures" / f"{figure}.png").stat().st_size > 5_000
    assert (workdir / "results" / "findings.md").read_text().startswith("#")
