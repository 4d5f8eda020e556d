"""The workloads of ``bench/compare.py``: each builds its cases (name → a call to time) before any timing.

A workload runs in both trees, so its cases use only API present in both, and it imports the package inside
``cases`` (the worker's ``PYTHONPATH`` chooses the tree). Results are compared between the trees in plain form
(dataclasses as dictionaries of their fields, polars frames with ``equals``, floats within 1e-12).
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import REPO

Cases = dict[str, Callable[[], object]]


@dataclass(frozen=True)
class Workload:
    """One workload: its help (a line, then details), its options and its cases."""

    summary: str
    details: str
    arguments: Callable[[argparse.ArgumentParser], None]
    cases: Callable[[argparse.Namespace], Cases]


# --- evaluation: evaluate / evaluate_many --------------------------------------------------------------

CODONS = [a + b + c for a in "ACGT" for b in "ACGT" for c in "ACGT"]
REASONING = "Let me work through this carefully, pairing each base with its complement.\n"


def _evaluation_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=int, default=2000, help="number of responses")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wrong", type=float, default=0.1, help="probability that a codon is wrong")


def dna_responses(n: int, seed: int, wrong: float) -> tuple[list[str], list[str]]:
    """``n`` fenced DNA responses and their references (a wrong codon is any other codon)."""
    from saltbench.tasks import get_task

    references = get_task("dna").generate(n, seed)["reference"].to_list()
    rng = random.Random(seed + 1)
    responses = []
    for reference in references:
        codons = [
            rng.choice([c for c in CODONS if c != codon]) if rng.random() < wrong else codon
            for codon in reference.split(" ")
        ]
        responses.append(f"{REASONING}********\n{' '.join(codons)}\n********")
    return responses, references


def _evaluation_cases(args: argparse.Namespace) -> Cases:
    """``{granularity}/{alignment}/{evaluate|evaluate_many}`` for every granularity and alignment."""
    from saltbench.core.vocabulary import ALIGNMENTS, GRANULARITIES
    from saltbench.evaluation import evaluate, evaluate_many
    from saltbench.tasks import get_task

    responses, references = dna_responses(args.n, args.seed, args.wrong)
    task = get_task("dna")
    out: Cases = {}
    for granularity in GRANULARITIES:
        for alignment in ALIGNMENTS:

            def loop(g: Any = granularity, a: Any = alignment) -> object:
                return [
                    evaluate(r, ref, task, granularity=g, alignment=a)
                    for r, ref in zip(responses, references)
                ]

            def many(g: Any = granularity, a: Any = alignment) -> object:
                return evaluate_many(responses, references, task, granularities=g, alignment=a)

            out[f"{granularity}/{alignment}/evaluate"] = loop
            out[f"{granularity}/{alignment}/evaluate_many"] = many
    return out


# --- confidence: the batch path, the scoring stage's call and the one-unit API ---------------------------


def plain_unit_confidence(
    vectors: Sequence[Sequence[float] | None],
    flavour: str = "topk",
    full_entropy: Sequence[float] | None = None,
    top_k: int = 20,
    eps: float = 1e-20,
) -> dict[str, float | int]:
    """The one-unit API's contract in plain Python (lists and ``math``), written the direct way:
    docs/confidence.md §2.1/§2.2 per token, then the §4.1 table, with the API's input checks and its NaN
    rules (NaN alternatives are absent, a NaN or missing chosen value is uniform for ``topk``, a NaN
    entropy makes the entropy functions NaN)."""
    if flavour not in ("topk", "full"):
        raise ValueError(f"unknown flavour {flavour!r}")
    if not vectors:
        raise ValueError("a unit needs at least one token")
    if not (isinstance(top_k, int) and top_k > 0) or not 0.0 < eps < 1.0:
        raise ValueError("top_k must be a positive integer and eps lie in (0, 1)")
    if flavour == "full":
        if full_entropy is None or len(full_entropy) != len(vectors):
            raise ValueError("full_entropy needs one value per token")
        if any(math.isinf(h) for h in full_entropy):
            raise ValueError("full_entropy must be finite or NaN")
    log_ps: list[float] = []
    entropies: list[float] = []
    for t, vector in enumerate(vectors):
        if flavour == "full":
            assert full_entropy is not None
            if not vector or math.isnan(vector[0]):
                raise ValueError("flavour='full' needs a log-probability for every token")
            log_ps.append(math.log(min(max(math.exp(min(vector[0], 0.0)), eps), 1.0)))
            entropies.append(full_entropy[t])
            continue
        if not vector or math.isnan(vector[0]):  # step 1
            d = [0.0] * top_k
        else:
            d = [vector[0], *(x for x in vector[1:] if not math.isnan(x))]
        if d[0] < -1000.0:  # step 2
            finite = [x for x in d[1:] if math.isfinite(x)]
            d[0] = min(finite) - 1.0 if finite else (min(d[1:]) - 1.0 if len(d) > 1 else -20.0)
        d = (d[:top_k] + [-1e9] * top_k)[:top_k]  # step 3
        m = max(d)  # step 4: softmax
        e = [math.exp(x - m) for x in d]
        total = sum(e)
        probs = [x / total for x in e]
        log_ps.append(math.log(min(max(probs[0], eps), 1.0)))  # step 5
        entropies.append(-sum(q * math.log(q) for q in probs if q > 0))
    n = len(log_ps)
    p = [math.exp(x) for x in log_ps]
    s = sorted(p)
    mean_lp = sum(log_ps) / n
    return {
        "mean_probability": sum(p) / n,
        "median_probability": (s[(n - 1) // 2] + s[n // 2]) / 2,
        "max_probability": max(p),
        "log_probability_sum": sum(log_ps),
        "max_log_probability": max(log_ps),
        "log_perplexity": -mean_lp,
        "perplexity": math.exp(-mean_lp),
        "max_entropy": math.nan if any(math.isnan(h) for h in entropies) else max(entropies),
        "mean_entropy": sum(entropies) / n,
        "num_tokens": n,
    }


def _confidence_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--units", type=int, default=200_000, help="atoms of the batch cases")
    p.add_argument("--single-units", type=int, default=20_000, help="atoms of the one-unit loops")
    p.add_argument("--seed", type=int, default=0)


def synthesise(n_units: int, seed: int) -> dict[str, np.ndarray]:
    """Token-level arrays for ``n_units`` atoms plus (token, unit) membership pairs (numpy only, so that
    both trees of a comparison build the same input; ``bench_confidence.py`` times the same input)."""
    rng = np.random.default_rng(seed)
    tokens_per_unit = rng.integers(1, 6, n_units)  # mean 3
    n_tokens = int(tokens_per_unit.sum())
    # top-20 log-probs: descending, a proper (partial) distribution
    logits = np.sort(rng.standard_normal((n_tokens, 20), dtype=np.float32) * 2.0, axis=1)[:, ::-1]
    top = (logits - np.logaddexp.reduce(logits, axis=1, keepdims=True) - 0.05).astype(np.float32)
    # distinct ids within a row (vocabulary of 50,000; id 50,001 is never in a top-20)
    row_offset = np.arange(n_tokens, dtype=np.int64)[:, None] * 7919
    topk_ids = ((row_offset + np.arange(20)) % 50_000).astype(np.int32)
    rank = np.minimum(rng.geometric(0.6, n_tokens) - 1, 20)  # 20 = outside the top-20
    inside = rank < 20
    rows = np.arange(n_tokens)
    chosen_lp = np.where(inside, top[rows, np.minimum(rank, 19)], top[:, 19] - 1.0).astype(np.float32)
    chosen_ids = np.where(inside, topk_ids[rows, np.minimum(rank, 19)], 50_001).astype(np.int32)
    entropy = (rng.gamma(2.0, 0.5, n_tokens)).astype(np.float32)
    unit_of_token = np.repeat(np.arange(n_units), tokens_per_unit)
    # 2% of atoms also claim the first token of the next atom (a token straddling two units)
    extra_units = np.flatnonzero(rng.random(n_units - 1) < 0.02)
    first_token = np.cumsum(tokens_per_unit) - tokens_per_unit
    pair_token = np.concatenate([rows, first_token[extra_units + 1]])
    pair_unit = np.concatenate([unit_of_token, extra_units])
    return {
        "chosen_lp": chosen_lp,
        "chosen_ids": chosen_ids,
        "topk_lp": top,
        "topk_ids": topk_ids,
        "entropy": entropy,
        "pair_token": pair_token,
        "pair_unit": pair_unit,
    }


def _single_unit_inputs(
    data: dict[str, np.ndarray], n_units: int
) -> tuple[list[list[list[float]]], list[list[float]]]:
    """Per atom: its tokens' vectors ``[chosen, *alternatives without the chosen id]`` and entropies."""
    first = data["pair_token"][: data["chosen_lp"].size]  # token t of atom pair_unit[t], in order
    unit = data["pair_unit"][: first.size]
    bounds = np.searchsorted(unit, np.arange(n_units + 1))
    keep = data["topk_ids"] != data["chosen_ids"][:, None]
    chosen, top, entropy = data["chosen_lp"].tolist(), data["topk_lp"], data["entropy"].tolist()
    vectors: list[list[list[float]]] = []
    entropies: list[list[float]] = []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        tokens = first[a:b].tolist()
        vectors.append([[chosen[t], *top[t][keep[t]].tolist()] for t in tokens])
        entropies.append([entropy[t] for t in tokens])
    return vectors, entropies


def _batch_cases(data: dict[str, np.ndarray], n_units: int) -> Cases:
    """``token_signals`` + ``unit_confidences`` per flavour; the scoring stage's ``confidence_columns``."""
    from saltbench.confidence import token_signals, unit_confidences

    mask = data["topk_ids"] == data["chosen_ids"][:, None]  # an input, built as the scoring stage builds it

    def batch(flavour: str) -> Callable[[], object]:
        def run() -> dict[str, np.ndarray]:
            if flavour == "topk":
                log_p, ent = token_signals(data["chosen_lp"], data["topk_lp"], chosen_in_topk=mask)
            else:
                log_p, ent = token_signals(data["chosen_lp"], None, data["entropy"], "full")
            return unit_confidences(log_p, ent, data["pair_token"], data["pair_unit"], n_units)

        return run

    cases = {f"batch[{f}] token_signals+unit_confidences": batch(f) for f in ("topk", "full")}
    try:  # the scoring stage imports the evaluator, which other work in the tree may have broken
        from saltbench.stages.scoring import confidence_columns
    except ImportError as exc:
        print(f"skipping scoring.confidence_columns: {exc}", file=sys.stderr)
        return cases
    tokens = {
        "chosen": data["chosen_lp"],
        "token_ids": data["chosen_ids"],
        "entropy": data["entropy"],
        "topk": data["topk_lp"],
        "topk_ids": data["topk_ids"],
    }
    pairs = (data["pair_token"], data["pair_unit"], n_units)
    cases["scoring.confidence_columns (both flavours)"] = lambda: confidence_columns(
        tokens, *pairs, flavours=("topk", "full"), top_k=20
    )
    return cases


def _confidence_cases(args: argparse.Namespace) -> Cases:
    """The batch cases, then the one-unit API and its plain-Python reference in loops over the first
    ``--single-units`` atoms (the reference checked against the API once, outside the timing)."""
    from saltbench.confidence import unit_confidence

    data = synthesise(args.units, args.seed)
    vectors, entropies = _single_unit_inputs(data, args.single_units)
    for flavour in ("topk", "full"):
        for v, h in zip(vectors[:200], entropies[:200]):
            got, want = unit_confidence(v, flavour, full_entropy=h), plain_unit_confidence(v, flavour, h)
            for name, value in want.items():
                assert math.isclose(got[name], value, rel_tol=1e-9, abs_tol=1e-12), (flavour, name)
    n = args.single_units
    return _batch_cases(data, args.units) | {
        f"unit_confidence[topk] x{n}": lambda: [unit_confidence(v) for v in vectors],
        f"unit_confidence[full] x{n}": lambda: [
            unit_confidence(v, "full", full_entropy=h) for v, h in zip(vectors, entropies)
        ],
        f"plain_python[topk] x{n} (reference)": lambda: [plain_unit_confidence(v) for v in vectors],
        f"plain_python[full] x{n} (reference)": lambda: [
            plain_unit_confidence(v, "full", h) for v, h in zip(vectors, entropies)
        ],
    }


# --- metrics: the metrics stage --------------------------------------------------------------------------


def _metrics_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--samples", type=int, nargs="*", default=[8, 300], help="responses of the synthetic tables"
    )
    p.add_argument("--atoms", type=int, nargs=2, default=[10, 40], help="range of atoms per response")
    p.add_argument("--units", default="", help="glob of real units files (one case for all of them)")
    p.add_argument("--n-bootstrap", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)


def _metrics_cases(args: argparse.Namespace) -> Cases:
    """One case per synthetic size and one for the ``--units`` files (one ``compute_metrics`` call each)."""
    import polars as pl

    sys.path.insert(0, str(REPO / "tests"))
    from helpers.synthetic_tables import synthetic_units  # the tests' builder, the same in both trees

    from saltbench.config import MetricsConfig
    from saltbench.io import read_table
    from saltbench.stages.metrics import compute_metrics

    settings = MetricsConfig(n_bootstrap=args.n_bootstrap)
    tables: dict[str, list[pl.DataFrame]] = {}
    for n in args.samples:
        units = synthetic_units(
            models=("m",),
            styles=("direct",),
            tasks=("dna",),
            n_samples=n,
            atoms_per_sample=tuple(args.atoms),
            seed=args.seed,
        )
        tables[f"synthetic[{n} responses, {units.height} units]"] = [units]
    files = sorted(glob.glob(args.units)) if args.units else []
    if files:
        real = [read_table(f, "units") for f in files]
        tables[f"real[{len(files)} files, {sum(u.height for u in real)} units]"] = real
    # warm-up outside the timing: one-time imports on the first call (scikit-learn for isotonic calibration)
    compute_metrics(next(iter(tables.values()))[0].head(200), settings=MetricsConfig(n_bootstrap=2))

    def as_columns(frame: pl.DataFrame) -> dict[str, object]:  # floats as arrays: compared within 1e-12
        return {
            c: frame[c].to_numpy() if frame[c].dtype.is_float() else frame[c].to_list() for c in frame.columns
        }

    def run(frames: list[pl.DataFrame]) -> Callable[[], object]:
        return lambda: [
            as_columns(compute_metrics(u, flavours=("topk", "full"), settings=settings, seed=args.seed))
            for u in frames
        ]

    return {name: run(frames) for name, frames in tables.items()}


# --- planning: Snakemake dry runs ------------------------------------------------------------------------

PLANNED = ("generate_shard", "intervention_shard", "build_dataset")
"""The rules whose job counts are compared (the cheap per-task stages may be grouped differently)."""


def _plan(tree: Path, args: list[str]) -> dict[str, int]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    cmd = [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", *args]
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", out, re.M)}
    return {rule: counts.get(rule, 0) for rule in PLANNED}


def _planning_cases(args: argparse.Namespace) -> Cases:
    """The paper plan on the SLURM profile and the default plan on the local one, in the tree under test."""
    import saltbench

    tree = Path(saltbench.__file__).resolve().parents[2]  # the source tree this worker imports
    paper = ["--configfile", "config/paper.yaml", "--profile", "profiles/slurm"]
    return {
        "paper plan, SLURM profile": lambda: _plan(tree, paper),
        "default plan, local profile": lambda: _plan(tree, ["--profile", "profiles/local"]),
    }


WORKLOADS: dict[str, Workload] = {
    "evaluation": Workload(
        "the per-response and batch evaluation paths (evaluate, evaluate_many)",
        "Workload: --n seeded DNA responses of 1-199 codons (get_task('dna').generate), each codon\n"
        "replaced by a different one with probability --wrong, fenced after some reasoning. Cases: every\n"
        "granularity x alignment, as a loop of evaluate calls and as one evaluate_many call.",
        _evaluation_arguments,
        _evaluation_cases,
    ),
    "confidence": Workload(
        "the confidence paths: batch, the scoring stage's call, the one-unit API",
        "Workload: --units synthetic atoms of 1-5 tokens (synthesise: top-20 float32\n"
        "vectors, a full-vocabulary entropy, 2 % of atoms sharing a token). Cases: token_signals +\n"
        "unit_confidences per flavour; scoring's confidence_columns; unit_confidence in a loop over\n"
        "--single-units atoms, and the same loop through a plain-Python transcription of docs/confidence.md\n"
        "§2 and §4.1 (identical in both trees: compare its time with the after column of unit_confidence).",
        _confidence_arguments,
        _confidence_cases,
    ),
    "metrics": Workload(
        "the metrics stage (compute_metrics)",
        "Workload: compute_metrics with both flavours, every confidence function and calibration method\n"
        "and --n-bootstrap resamples, on one synthetic units table per --samples size\n"
        "(tests/helpers/synthetic_tables) and on the --units files (a glob, e.g. a run's\n"
        "data/units/smollm2-135m/*/*.parquet), one call each as the workflow rule runs them. Results\n"
        "compared column by column.",
        _metrics_arguments,
        _metrics_cases,
    ),
    "planning": Workload(
        "planning cost: Snakemake dry runs of the paper-scale and the default plan",
        "Each case runs `snakemake -n --quiet rules` in the source tree under test (its Snakefile, rules,\n"
        "profiles and package). The compared result: the number of inference, intervention and dataset\n"
        "jobs.",
        lambda p: None,
        _planning_cases,
    ),
}
