"""Benchmark: nine confidence functions (both flavours) and pooled metrics on ~1M synthetic atoms.

Synthesises ``--units`` atoms of 1–5 tokens (~3 tokens per atom), each token with its chosen
log-probability, top-20 ids and log-probabilities (float32, as stored in Parquet), a full-vocabulary
entropy, and a few tokens straddling two atoms. Times, separately:

1. ``token_signals`` (``topk`` with the chosen token removed from the top-20 by id, and ``full``);
2. ``unit_confidences`` for both flavours;
3. pooled AUROC, ECE (z-score/sigmoid-calibrated where the function is not a probability) and PRR for
   every confidence function and flavour (18 score vectors).

Reports units/s (wall and CPU time), the process's peak resident memory (``ru_maxrss``, which
includes the synthetic input) and the peak extra memory of the timed phase (``tracemalloc``). Run::

    OMP_NUM_THREADS=2 python bench/bench_confidence.py --units 1000000
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import time
import tracemalloc

import numpy as np
from _workloads import synthesise

from saltbench.calibration import zscore_sigmoid
from saltbench.confidence import PAPER_FUNCTIONS, ranking_scores, token_signals, unit_confidences
from saltbench.metrics import auroc, ece, prr

logger = logging.getLogger("bench_confidence")


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def confidences(data: dict[str, np.ndarray], n_units: int, timings: dict[str, float]) -> dict[str, dict]:
    """The nine functions of both flavours for every unit; each step's seconds into ``timings``."""
    per_flavour: dict[str, dict[str, np.ndarray]] = {}
    for flavour in ("topk", "full"):
        t = time.perf_counter()
        if flavour == "topk":
            mask = data["topk_ids"] == data["chosen_ids"][:, None]
            log_p, ent = token_signals(data["chosen_lp"], data["topk_lp"], chosen_in_topk=mask)
            del mask
        else:
            log_p, ent = token_signals(data["chosen_lp"], None, data["entropy"], "full")
        timings[f"token_signals[{flavour}]"] = time.perf_counter() - t
        t = time.perf_counter()
        per_flavour[flavour] = unit_confidences(log_p, ent, data["pair_token"], data["pair_unit"], n_units)
        timings[f"unit_confidences[{flavour}]"] = time.perf_counter() - t
    return per_flavour


def pooled_metrics(per_flavour: dict[str, dict], seed: int, n_units: int) -> list[tuple]:
    """AUROC, ECE and PRR of every function and flavour against seeded labels (18 score vectors)."""
    rng = np.random.default_rng(seed + 1)
    correct = (rng.random(n_units) < per_flavour["full"]["mean_probability"]).astype(np.int8)
    results = []
    for flavour, values in per_flavour.items():
        for spec in PAPER_FUNCTIONS:
            raw = values[spec.name]
            calibrated = zscore_sigmoid(raw, raw, spec.higher_is_confident) if spec.needs_calibration else raw
            scores = ranking_scores(spec.name, raw)
            results.append(
                (flavour, spec.name, auroc(scores, correct), ece(calibrated, correct), prr(scores, correct))
            )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)

    t0 = time.perf_counter()
    data = synthesise(args.units, args.seed)
    logger.info(
        "synthesised %d units, %d tokens, %d pairs in %.1f s (peak RSS %.0f MiB)",
        args.units,
        data["chosen_lp"].size,
        data["pair_unit"].size,
        time.perf_counter() - t0,
        peak_rss_mib(),
    )
    timings: dict[str, float] = {}
    tracemalloc.start()  # numpy reports its buffers: peak = extra memory of the timed phase
    start_all, cpu_all = time.perf_counter(), time.process_time()
    per_flavour = confidences(data, args.units, timings)
    confidence_time, confidence_cpu = time.perf_counter() - start_all, time.process_time() - cpu_all
    t_metrics = time.perf_counter()
    results = pooled_metrics(per_flavour, args.seed, args.units)
    timings["metrics (18 x AUROC/ECE/PRR)"] = time.perf_counter() - t_metrics
    total, total_cpu = time.perf_counter() - start_all, time.process_time() - cpu_all
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    for key, seconds in timings.items():
        logger.info("%-32s %7.2f s", key, seconds)
    for label, wall, cpu in (
        ("all confidences (2 flavours)", confidence_time, confidence_cpu),
        ("end to end", total, total_cpu),
    ):
        logger.info("%-32s %7.2f s wall (%.0f units/s), %.2f s CPU", label, wall, args.units / wall, cpu)
    logger.info("peak RSS %.0f MiB (whole process, incl. synthesis)", peak_rss_mib())
    logger.info("peak extra memory of the timed phase %.0f MiB (tracemalloc)", traced_peak / 2**20)
    logger.info("%-5s %-20s %7s %7s %7s", "flav", "function", "AUROC", "ECE", "PRR")
    for flavour, name, a, e, p in results:
        logger.info("%-5s %-20s %7.4f %7.4f %7.4f", flavour, name, a, e, p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
