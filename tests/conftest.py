"""Shared fixtures: repository paths and the authors' reproduction data (skipped when absent)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAPER_DATA = Path(os.environ.get("SALT_PAPER_DATA", REPO.parent / "shared" / "reference" / "paper_data"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def paper_data() -> Path:
    if not (PAPER_DATA / "DNA_dataset").is_dir():
        pytest.skip(f"the authors' reproduction data is not at {PAPER_DATA} (set SALT_PAPER_DATA)")
    return PAPER_DATA


WORKFLOW_FILES: tuple[str, ...] = (
    "Snakefile", "rules", "workflow_scripts", "config", "profiles", "report", "environment.yml"
)
"""What a copy of the workflow needs to run somewhere else (no outputs)."""


def _copy_workflow(dest: Path, *, with_converted_smollm2: bool = False) -> Path:
    """Copy the workflow files into ``dest``; optionally reuse an already converted SmolLM2."""
    for name in WORKFLOW_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        elif src.exists():
            shutil.copy2(src, dest / name)
    converted = REPO / "data" / "models" / "converted" / "smollm2-135m"
    if with_converted_smollm2 and converted.is_dir():  # saves a one-minute conversion job
        shutil.copytree(converted, dest / "data" / "models" / "converted" / "smollm2-135m")
    return dest


@pytest.fixture(scope="session")
def copy_workflow():
    """``copy_workflow(dest, with_converted_smollm2=False) -> dest``: a runnable copy of the workflow."""
    return _copy_workflow
