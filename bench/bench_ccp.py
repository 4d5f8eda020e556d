"""Benchmark: ``topk.ccp`` (docs/confidence.md §4.6) in the scoring stage on paper-size responses.

Builds one model and style's generations (``--n`` responses in the task mix of ``bench_evaluation.py``,
answers corrupted as there, wrapped in the response shapes seen in practice), tokenised into pieces of at
most three characters with their leading whitespace (a BPE-like split), each token with 20 stored
alternatives drawn from the pieces the responses use (a few with ids never chosen: unknown text) and random
log-probabilities. Runs ``score_generations`` per task and reports, apart, the seconds spent in the stage's
single-pass columns (``topk.ccp`` and ``trace.reasoning_tokens``) and in the whole stage, with units per
second (every granularity) — minimum of ``--repeats``. Run::

    OMP_NUM_THREADS=2 python bench/bench_ccp.py --n 1748
"""

from __future__ import annotations

import argparse
import logging
import random
import re
import resource
import time
from collections import defaultdict

import numpy as np
import polars as pl
from bench_evaluation import MAKERS, MIX, corrupt, wrap

from saltbench.inference.records import GenerationRecord, TokenScores, records_to_frame
from saltbench.stages import scoring

PIECE = re.compile(r"\s*\S{1,3}|\s+")
K = 20


def _records(texts: list[str], vocab: dict[str, int], rng: np.random.Generator) -> list[GenerationRecord]:
    """One record per text: BPE-like pieces, 20 alternatives each from the vocabulary (5 % unknown ids)."""
    pieces = [PIECE.findall(text) for text in texts]
    for parts in pieces:
        for part in parts:
            vocab.setdefault(part, len(vocab))
    records = []
    for parts in pieces:
        ids = np.array([vocab[p] for p in parts], dtype=np.int32)
        alternatives = rng.integers(0, int(len(vocab) * 1.05) + 1, size=(ids.size, K - 1)).astype(np.int32)
        logits = rng.normal(0.0, 2.0, size=(ids.size, K)).astype(np.float32)
        logits[:, 0] += 4.0  # the chosen token is usually the most likely
        logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        scores = TokenScores(
            ids,
            logp[:, 0],
            np.column_stack([ids, alternatives]),
            logp,
            np.full(ids.size, 0.5, np.float32),
        )
        records.append(GenerationRecord.from_scores(scores, parts, finish_reason="eos", num_prompt_tokens=3))
    return records


def workload(n: int, seed: int) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """Per task: (generations, dataset) frames of ``n`` responses in the mix of ``bench_evaluation.py``."""
    rng = random.Random(seed)
    keys = list(MIX)
    rows: dict[str, list[tuple[str | None, str, str]]] = defaultdict(list)
    for key in rng.choices(keys, weights=[MIX[k] for k in keys], k=n):
        reference = MAKERS[key](rng)
        body = corrupt(rng, reference, 0.1) if rng.random() < 0.4 else reference
        rows[key[0]].append((key[1], wrap(rng, body), reference))
    out = {}
    np_rng = np.random.default_rng(seed)
    for task, items in rows.items():
        ids = [f"{task}-{i}" for i in range(len(items))]
        gens = records_to_frame(_records([t for _, t, _ in items], {}, np_rng), {"sample_id": ids})
        data = pl.DataFrame(
            {"sample_id": ids, "variant": [v for v, _, _ in items], "reference": [r for _, _, r in items]},
            schema={"sample_id": pl.String, "variant": pl.String, "reference": pl.String},
        )
        out[task] = (gens, data)
    return out


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--n", type=int, default=1_748, help="responses (1,748: one paper model and style)")
    cli.add_argument("--seed", type=int, default=0)
    cli.add_argument("--repeats", type=int, default=3)
    args = cli.parse_args()
    logging.basicConfig(level=logging.WARNING)
    tasks = workload(args.n, args.seed)
    timed = {"single_pass": 0.0}
    inner = scoring.single_pass_columns

    def single_pass_columns(*a, **kw):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return inner(*a, **kw)
        finally:
            timed["single_pass"] += time.perf_counter() - start

    scoring.single_pass_columns = single_pass_columns
    best: dict[str, float] = {}
    units = tokens = 0
    for _ in range(args.repeats):
        timed["single_pass"] = 0.0
        start = time.perf_counter()
        units = tokens = 0
        for task, (gens, data) in tasks.items():
            scored = scoring.score_generations(gens, data, task, fence_rule="line")
            units += int(scored["topk.ccp"].is_not_nan().sum())
            tokens += int(gens["num_generated_tokens"].sum())
        total = time.perf_counter() - start
        best["stage"] = min(best.get("stage", total), total)
        best["single_pass"] = min(best.get("single_pass", timed["single_pass"]), timed["single_pass"])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"responses, tokens    {args.n:,}, {tokens:,}")
    print(f"units with a ccp     {units:,} (atom, line, generation)")
    print(f"single-pass columns  {best['single_pass']:.2f} s  ({units / best['single_pass']:,.0f} units/s)")
    share = best["single_pass"] / best["stage"]
    print(f"whole scoring stage  {best['stage']:.2f} s  (single-pass share {share:.0%})")
    print(f"peak RSS             {peak:,.0f} MiB (whole process)")


if __name__ == "__main__":
    main()
