"""CPU time and peak memory of dynamic alignment on a 1 MB response (``"1 " * 500_000``).

Each case runs in a fresh subprocess (``--case``) so that its peak resident memory is its own: the child
imports saltbench, builds the reference (``get_task(slug).generate(1, seed=0)``) and the response, then
records ``resource.getrusage(RUSAGE_SELF)`` before and after one call. Reported per case:

* ``cpu_s``: user + system CPU seconds of the call alone;
* ``rss_peak_mb``: the child's peak resident set size (``ru_maxrss``), imports included;
* ``rss_before_mb``: its resident size just before the call (imports, reference and response);
* ``traced_peak_mb`` (with ``--traced``, a second child): the ``tracemalloc`` peak of the call alone
  (Python objects and numpy buffers), which does not count the interpreter and the imported modules.

Usage::

    python bench/bench_alignment_memory.py [--traced] [--units 500000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

CASES = [
    ("kronecker", "evaluate"),
    ("dna", "evaluate"),
    ("kronecker", "evaluate_many"),
    ("dna", "evaluate_many"),
]


def _rss_now_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _child(slug: str, api: str, units: int, traced: bool) -> dict[str, float | int | str]:
    import tracemalloc

    from saltbench.evaluation import evaluate, evaluate_many, summarize_units
    from saltbench.tasks import get_task

    reference = get_task(slug).generate(1, seed=0)["reference"][0]
    response = "1 " * units
    task = get_task(slug)

    def call() -> tuple[float, int]:
        if api == "evaluate":
            m = evaluate(response, reference, task, granularity="atom", alignment="dynamic").metrics
        else:
            frame = evaluate_many([response], [reference], task, granularities="atom", alignment="dynamic")
            m = summarize_units(frame, dynamic_alignment=True).row(0, named=True)
        return m["precision"], m["num_correct"]

    rss_before = _rss_now_mb()
    if traced:
        tracemalloc.start()
    before = resource.getrusage(resource.RUSAGE_SELF)
    precision, correct = call()
    after = resource.getrusage(resource.RUSAGE_SELF)
    out: dict[str, float | int | str] = {
        "case": f"{slug}/{api}",
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "rss_before_mb": round(rss_before, 1),
        "rss_peak_mb": round(after.ru_maxrss / 1024, 1),
        "precision": precision,
        "num_correct": correct,
    }
    if traced:
        out["traced_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=500_000)
    parser.add_argument("--traced", action="store_true", help="also measure the tracemalloc peak (slower)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--trace-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        slug, api = args.case.split("/")
        print(json.dumps(_child(slug, api, args.units, args.trace_child)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    for slug, api in CASES:
        row: dict[str, float | int | str] = {}
        for traced in (False, True) if args.traced else (False,):
            cmd = [sys.executable, __file__, "--case", f"{slug}/{api}", "--units", str(args.units)]
            if traced:
                cmd.append("--trace-child")
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            row.update({k: v for k, v in result.items() if not traced or k == "traced_peak_mb"})
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
