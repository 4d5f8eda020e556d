"""Cross-check of ``mean_self_certainty`` and ``mean_boosted_probability`` against lm-polygraph 0.7.0's
SelfCertainty and BoostedProb estimators, sequence and claim level, on shared inputs (docs/confidence.md
§4.4).

lm-polygraph is not a dependency. Install it *without* dependencies in a throwaway venv and give its
site-packages with ``--site`` (without it, ours alone runs on the cases)::

    python -m venv /tmp/lmp && /tmp/lmp/bin/pip install lm-polygraph==0.7.0 --no-deps
    .venv/bin/python bench/crosscheck_token_functions_lmpolygraph.py \\
        --site /tmp/lmp/lib/python3.11/site-packages

Their four files (``SelfCertainty``, ``SelfCertaintyClaim``, ``BoostedProbSequence``, ``BoostedProbClaim``)
and their ``Estimator`` base are loaded by path, the logging helper their base imports replaced by a
stand-in; their BoostedProb estimators call the ``boostedprob`` package (our test dependency) and torch.
Shared inputs (``tests/helpers/token_function_cases.py``): random responses, per token the stored top-k
log-probabilities (chosen first, −inf where absent, which they drop), renormalised for the ``topk``
flavour, raw for ``full``; our generation unit is their sequence, our unit's tokens their claim's
``aligned_token_ids``. They return uncertainty (minus the mean), so ours is compared with minus theirs.
Where the stored top-k is not the whole distribution the formulas differ by design; the bench also feeds
them the whole distribution and reports where and by how much ours (top-k) departs.
"""

from __future__ import annotations

import argparse
import logging
import sys
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _anchors import find_anchor, load, stub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.token_function_cases import (  # noqa: E402
    Case,
    fully_stored,
    ours,
    random_case,
    stored_entries_suffice,
    stored_rows,
)

log = logging.getLogger("crosscheck_token_functions")

Anchor = Callable[[np.ndarray, np.ndarray, list[np.ndarray]], tuple[float, np.ndarray]]
"""Their estimator pair as one function: (rows ``(T, V)``, chosen columns ``(T,)``, claims) to (the
sequence's confidence, each claim's), signs turned to ours (higher = more confident)."""


def load_lmpolygraph(root: Path) -> dict[str, Anchor]:
    """lm-polygraph's sequence and claim estimators of self-certainty and BoostedProb, as :data:`Anchor`."""
    stub("lm_polygraph.utils.common", polygraph_module_init=lambda init: init)
    load("lm_polygraph.estimators.estimator", root / "estimators" / "estimator.py")
    estimators = root / "estimators"
    sequence = {
        "self-certainty": load(
            "lm_polygraph.estimators.self_certainty", estimators / "self_certainty.py"
        ).SelfCertainty(),
        "BoostedProb": load(
            "lm_polygraph.estimators.boostedprob_score", estimators / "boostedprob_score.py"
        ).BoostedProbSequence(),
    }
    claim = {
        "self-certainty": load(
            "lm_polygraph.estimators.claim.self_certainty", estimators / "claim" / "self_certainty.py"
        ).SelfCertaintyClaim(),
        "BoostedProb": load(
            "lm_polygraph.estimators.claim.boostedprob_score", estimators / "claim" / "boostedprob_score.py"
        ).BoostedProbClaim(),
    }

    def anchor(name: str) -> Anchor:
        def run(rows: np.ndarray, picks: np.ndarray, claims: list[np.ndarray]) -> tuple[float, np.ndarray]:
            # one response per call: their claim estimator reads stats["greedy_tokens"] as the tokens of
            # every response (the whole batch) and hands it to each one, so it is given the response's own
            stats = {
                "greedy_log_probs": [rows],
                "claims": [[types.SimpleNamespace(aligned_token_ids=c.tolist()) for c in claims]],
            }
            whole = -float(sequence[name]({**stats, "greedy_tokens": [picks]})[0])
            per_claim = -np.array(claim[name]({**stats, "greedy_tokens": picks})[0], dtype=np.float64)
            return whole, per_claim

        return run

    return {name: anchor(name) for name in sequence}


def mean_per_token(score: Callable[[np.ndarray, int], float]) -> Anchor:
    """A formula of one token's vector and chosen column, reduced as their estimators reduce (a plain
    reference for runs without the anchor)."""

    def run(rows: np.ndarray, picks: np.ndarray, claims: list[np.ndarray]) -> tuple[float, np.ndarray]:
        values = np.array([score(row, int(pick)) for row, pick in zip(rows, picks)])
        return float(values.mean()), np.array([values[c].mean() for c in claims])

    return run


def kl_from_uniform(row: np.ndarray, pick: int) -> float:
    """KL(U ‖ p) over the finite entries of ``row``: ``−ln V − mean(ln p)``."""
    finite = row[np.isfinite(row)]
    return float(-np.log(finite.size) - finite.mean())


def largest_differences(anchor: Anchor, name: str, cases: list[Case], flavour: str) -> tuple[float, float]:
    """Max |ours − theirs| over the cases' sequences and over their claims, on the stored rows."""
    worst_sequence = worst_claim = 0.0
    for case in cases:
        rows = stored_rows(case, renormalise=flavour == "topk")
        theirs = anchor(rows, np.zeros(case.chosen.size, dtype=np.intp), case.claims)
        mine = ours(case, name, flavour)
        worst_sequence = max(worst_sequence, abs(mine[0] - theirs[0]))
        worst_claim = max(worst_claim, float(np.max(np.abs(mine[1] - theirs[1]))))
    return worst_sequence, worst_claim


def compare_whole(anchors: dict[str, Anchor], cases: list[Case]) -> None:
    """Log ours on the stored top-k against each of their sequence estimators on the whole distribution:
    BoostedProb (``full``) where the stored entries suffice and elsewhere; self-certainty (``topk``)."""
    stored = [fully_stored(case) for case in cases]
    suffices = np.array([stored_entries_suffice(case) for case in stored])
    gaps = {
        label: np.array(
            [abs(ours(c, name, flavour)[0] - anchors[label](c.whole, c.picks, c.claims)[0]) for c in stored]
        )
        for label, name, flavour in (
            ("BoostedProb", "mean_boosted_probability", "full"),
            ("self-certainty", "mean_self_certainty", "topk"),
        )
    }
    boosted, certainty = gaps["BoostedProb"], gaps["self-certainty"]
    log.info(
        "  BoostedProb (full): max %.3g on the %d responses whose stored entries suffice; on the other %d: "
        "median %.3g, 90th percentile %.3g, max %.3g",
        *(boosted[suffices].max(initial=0.0), suffices.sum(), (~suffices).sum()),
        *np.quantile(boosted[~suffices], [0.5, 0.9, 1.0]),
    )
    log.info(
        "  self-certainty (topk): median %.3g, max %.3g (over the stored top-k, not the vocabulary)",
        *np.quantile(certainty, [0.5, 1.0]),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--site", type=Path, action="append", default=[], help="site-packages of lm-polygraph"
    )
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--top-k", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("saltbench").setLevel(logging.WARNING)
    root = find_anchor(args.site, "lm_polygraph")
    log.info("lm-polygraph: %s", root or "not found: ours against the plain formulas only")
    anchors = (
        load_lmpolygraph(root) if root is not None else {"self-certainty": mean_per_token(kl_from_uniform)}
    )
    rng = np.random.default_rng(args.seed)
    cases = [random_case(rng, args.top_k) for _ in range(args.cases)]
    log.info(
        "%d random responses (%d tokens, %d claims), top-k %d: max |ours - theirs| (sequence, claim)",
        *(len(cases), sum(c.chosen.size for c in cases), sum(len(c.claims) for c in cases), args.top_k),
    )
    for label, name, flavour in (
        ("self-certainty", "mean_self_certainty", "topk"),
        ("BoostedProb", "mean_boosted_probability", "topk"),
        ("BoostedProb", "mean_boosted_probability", "full"),
    ):
        if label in anchors:
            worst = largest_differences(anchors[label], name, cases, flavour)
            log.info("  %-14s %-5s %.3g, %.3g", label, flavour, *worst)
    if root is not None:
        log.info("Ours on each response's stored top-k vs theirs on its whole distribution (sequence):")
        compare_whole(anchors, cases)


if __name__ == "__main__":
    main()
