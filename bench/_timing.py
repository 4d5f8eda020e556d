"""Timing helper shared by the bench scripts.

They run as ``python bench/bench_*.py``, so this folder is on the path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def timed(fn: Callable[[], Any], repeats: int) -> tuple[dict[str, float], Any]:
    """Run ``fn`` ``repeats`` times; the minimum wall-clock and process CPU seconds, and the last result.

    CPU time (``time.process_time``: all threads of this process) is the steadier number on a shared
    machine, where wall-clock time includes waiting for a core.
    """
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - started_cpu)
    return {"seconds": wall, "cpu_seconds": cpu}, result
