"""Before/after comparison of the confidence paths (issue #15, item 2; harness: ``bench/_compare.py``).

Workload: ``--units`` synthetic atoms of 1–5 tokens (about 3 per atom; 2 % also claim the next atom's
first token), each token with its chosen log-probability, top-20 ids and log-probabilities (float32, as
stored in Parquet) and a full-vocabulary entropy — the inputs of ``bench/bench_confidence.py``. Cases:

* ``batch[topk]`` / ``batch[full]`` — :func:`~saltbench.confidence.token_signals` then
  :func:`~saltbench.confidence.unit_confidences` over every (token, atom) pair, all nine functions (the
  ``chosen_in_topk`` mask is an input, built before timing, as the scoring stage builds it);
* ``confidence_columns`` — the scoring stage's call (both flavours, mask included);
* ``unit_confidence[...]`` — the one-unit API in a loop over the first ``--single-units`` atoms, their
  vectors as Python lists (chosen log-probability first, then the alternatives without the chosen id);
* ``plain_python[...]`` — the same loop through :func:`plain_unit_confidence` below, a direct
  plain-Python transcription of docs/confidence.md §2 and §4.1 with the API's input checks and NaN rules
  (identical in both trees: it shows how the one-unit API compares with plain Python, not a change;
  compare its time with the ``after`` column of ``unit_confidence[...]``).

Run::

    OMP_NUM_THREADS=1 python bench/compare_confidence.py --base 98dd4b4 --rounds 3
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence

import _compare
import numpy as np
from bench_confidence import synthesise

from saltbench.confidence import token_signals, unit_confidence, unit_confidences
from saltbench.core.vocabulary import CONFIDENCE_NAMES


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


def parser() -> argparse.ArgumentParser:
    """The workload's options."""
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--units", type=int, default=200_000, help="atoms of the batch cases")
    cli.add_argument("--single-units", type=int, default=20_000, help="atoms of the one-unit loops")
    cli.add_argument("--seed", type=int, default=0)
    return cli


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


def _batch(data: dict[str, np.ndarray], mask: np.ndarray, flavour: str, n_units: int) -> Callable[[], object]:
    def run() -> dict[str, np.ndarray]:
        if flavour == "topk":
            log_p, ent = token_signals(data["chosen_lp"], data["topk_lp"], chosen_in_topk=mask)
        else:
            log_p, ent = token_signals(data["chosen_lp"], None, data["entropy"], "full")
        return unit_confidences(log_p, ent, data["pair_token"], data["pair_unit"], n_units)

    return run


def cases(args: argparse.Namespace) -> dict[str, Callable[[], object]]:
    """The workload, built before timing."""
    data = synthesise(args.units, args.seed)
    mask = data["topk_ids"] == data["chosen_ids"][:, None]
    tokens = {
        "chosen": data["chosen_lp"],
        "token_ids": data["chosen_ids"],
        "entropy": data["entropy"],
        "topk": data["topk_lp"],
        "topk_ids": data["topk_ids"],
    }
    vectors, entropies = _single_unit_inputs(data, args.single_units)
    pairs = (data["pair_token"], data["pair_unit"], args.units)
    # the plain-Python reference agrees with the one-unit API (checked once, outside the timing)
    for flavour in ("topk", "full"):
        for v, h in zip(vectors[:200], entropies[:200]):
            got, want = unit_confidence(v, flavour, full_entropy=h), plain_unit_confidence(v, flavour, h)
            for name in CONFIDENCE_NAMES:
                assert math.isclose(got[name], want[name], rel_tol=1e-9, abs_tol=1e-12), (flavour, name)
    n = args.single_units
    timed: dict[str, Callable[[], object]] = {
        "batch[topk] token_signals+unit_confidences": _batch(data, mask, "topk", args.units),
        "batch[full] token_signals+unit_confidences": _batch(data, mask, "full", args.units),
    }
    try:  # the scoring stage imports the evaluator, which other work in the tree may have broken
        from saltbench.stages.scoring import confidence_columns
    except ImportError as exc:
        print(f"skipping scoring.confidence_columns: {exc}", file=sys.stderr)
    else:
        timed["scoring.confidence_columns (both flavours)"] = lambda: confidence_columns(
            tokens, *pairs, flavours=("topk", "full"), top_k=20
        )
    return timed | {
        f"unit_confidence[topk] x{n}": lambda: [unit_confidence(v) for v in vectors],
        f"unit_confidence[full] x{n}": lambda: [
            unit_confidence(v, "full", full_entropy=h) for v, h in zip(vectors, entropies)
        ],
        f"plain_python[topk] x{n} (reference)": lambda: [plain_unit_confidence(v) for v in vectors],
        f"plain_python[full] x{n} (reference)": lambda: [
            plain_unit_confidence(v, "full", h) for v, h in zip(vectors, entropies)
        ],
    }


if __name__ == "__main__":
    sys.exit(_compare.main("compare_confidence", parser()))
