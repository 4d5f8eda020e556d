"""A process that holds a directory's run lock (saltbench.workflow.runlock) until it is killed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HOLD = (
    "import sys, time; from saltbench.workflow.runlock import acquire_run_lock; "
    "acquire_run_lock(sys.argv[1]); "
    "print('held', flush=True); time.sleep(60)"
)


def lock_holder(workdir: Path) -> subprocess.Popen[str]:
    """Start a process that takes the run lock of ``workdir``; returns once it holds it."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(workdir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc
