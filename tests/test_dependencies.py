"""The environment the setup script built has no dependency conflict beyond the known, explained ones
(scripts/check_dependencies.py; docs/reliability.md §1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_pip_check_reports_only_known_harmless_conflicts() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "check_dependencies.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "UNEXPECTED" not in proc.stderr
