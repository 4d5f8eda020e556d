"""Reading the thread line every job log starts with (saltbench.workflow.rule_support.setup_logging)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
THREADS = re.compile(r"threads: (\d+) granted; (.*)$")


@dataclass(frozen=True)
class JobThreads:
    """One job: its log, the threads Snakemake granted, the largest pool it had, and when it logged."""

    log: Path
    granted: int
    largest_pool: int
    start: datetime
    end: datetime


def job_threads_from_logs(folder: Path) -> list[JobThreads]:
    """Every job log under ``folder`` that has the thread line."""
    jobs = []
    for log in sorted(folder.rglob("*.log")):
        lines = log.read_text().splitlines()
        stamped = [(m.group(1), line) for line in lines if (m := STAMP.match(line))]
        found = [m for m in (THREADS.search(line) for _, line in stamped) if m]
        if not found:
            continue
        pools = [int(n) for n in re.findall(r"\b(?:torch|polars) (\d+)", found[0].group(2))]
        times = [datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f") for stamp, _ in stamped]
        jobs.append(JobThreads(log, int(found[0].group(1)), max(pools, default=0), times[0], times[-1]))
    return jobs


def most_threads_at_once(jobs: list[JobThreads]) -> int:
    """The largest sum of pool sizes over jobs whose logged lifetimes overlap."""
    events = sorted(
        [(j.start, 1, j.largest_pool) for j in jobs] + [(j.end, 0, -j.largest_pool) for j in jobs]
    )
    running = peak = 0
    for _, _, change in events:  # at equal times an end (0) sorts before a start (1)
        running += change
        peak = max(peak, running)
    return peak
