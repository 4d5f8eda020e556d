"""Shared fixtures: repository paths and the authors' reproduction data (skipped when absent)."""

from __future__ import annotations

import os
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
