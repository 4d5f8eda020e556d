"""Shared inputs of the cross-check of ``mean_self_certainty`` and ``mean_boosted_probability`` against
lm-polygraph's SelfCertainty and BoostedProb estimators (docs/confidence.md §4.4):
``bench/crosscheck_token_functions_lmpolygraph.py`` feeds them to lm-polygraph's files and to ours;
``tests/test_token_function_anchors.py`` pins ours on them without lm-polygraph installed.

A case is one response as the stores hold it: per token the chosen log-probability (the token at any rank)
and ``top_k − 1`` stored alternatives (NaN where fewer were stored), and claims: runs of its tokens (our
units' tokens, their claims' ``aligned_token_ids``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from saltbench.confidence import CONFIDENCE_FUNCTIONS, extended_confidences, token_distributions
from saltbench.confidence._extended import BOOST_EPSILON


@dataclass(frozen=True)
class Case:
    """One response: chosen log-probabilities ``(T,)``, alternatives ``(T, top_k − 1)`` (NaN absent),
    claims (token indices of each), and the whole distributions ``(T, V)`` with the chosen outcomes."""

    chosen: np.ndarray
    alternatives: np.ndarray
    claims: list[np.ndarray]
    top_k: int
    whole: np.ndarray
    picks: np.ndarray


def random_case(rng: np.random.Generator, top_k: int) -> Case:
    """A random response of 1–12 tokens: each token's whole distribution over the same ``top_k`` to
    ``3·top_k`` outcomes (Gaussian logits of a random scale per token), the chosen token drawn from it, the
    most likely others stored as alternatives, the last ones missing at random; 1–3 claims of consecutive
    tokens."""
    n, width = int(rng.integers(1, 13)), int(rng.integers(top_k, 3 * top_k + 1))
    logits = rng.normal(0.0, rng.uniform(0.3, 4.0, (n, 1)), (n, width))
    whole = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    picks = np.array([rng.choice(width, p=np.exp(row)) for row in whole])
    chosen, alternatives = whole[np.arange(n), picks], np.full((n, top_k - 1), np.nan)
    for t in range(n):
        others = np.sort(np.delete(whole[t], picks[t]))[::-1][: int(rng.integers(0, top_k))]
        alternatives[t, : others.size] = others
    claims = []
    for _ in range(int(rng.integers(1, 4))):
        start = int(rng.integers(0, n))
        claims.append(np.arange(start, int(rng.integers(start + 1, n + 1))))
    return Case(chosen, alternatives, claims, top_k, whole, picks)


def stored_rows(case: Case, renormalise: bool) -> np.ndarray:
    """Per token, the stored log-probabilities as one vector, chosen first (``(T, top_k)``, −inf where
    absent): the inputs lm-polygraph's estimators read as ``greedy_log_probs``; renormalised over the
    stored entries where our ``topk`` flavour renormalises (docs/confidence.md §2.1)."""
    rows = np.column_stack([case.chosen, case.alternatives])
    rows = np.where(np.isnan(rows), -np.inf, rows)
    if renormalise:
        rows = rows - np.logaddexp.reduce(rows, axis=1, keepdims=True)
    return rows


def ours(case: Case, name: str, flavour: str) -> tuple[float, np.ndarray]:
    """Our function ``name`` in ``flavour`` on the case: (the whole response as one unit, each claim)."""
    n = case.chosen.size
    d = token_distributions(
        case.chosen,
        case.alternatives,
        np.zeros(n),
        flavour,
        top_k=case.top_k,  # type: ignore[arg-type]
    )
    units = [np.arange(n), *case.claims]
    values = extended_confidences(
        d,
        np.concatenate(units),
        np.repeat(np.arange(len(units)), [u.size for u in units]),
        len(units),
        (CONFIDENCE_FUNCTIONS[name],),
    )[name]
    return float(values[0]), values[1:]


def fully_stored(case: Case) -> Case:
    """The case as a backend stores it: each token's ``top_k − 1`` most likely other outcomes."""
    others = [
        np.sort(np.delete(row, pick))[::-1][: case.top_k - 1] for row, pick in zip(case.whole, case.picks)
    ]
    return dataclasses.replace(case, alternatives=np.array(others))


def stored_entries_suffice(case: Case) -> bool:
    """Whether ours (``full``, the stored entries) and BoostedProb on the whole distribution must coincide:
    every token's chosen outcome is among its ``top_k`` most likely and the ``top_k``-th holds at most
    ``BOOST_EPSILON``, so no jump counts at or beyond it (docs/confidence.md §4.4)."""
    ranked = np.sort(case.whole, axis=1)[:, ::-1]
    kth = ranked[:, case.top_k - 1]
    return bool(np.all((case.chosen >= kth) & (np.exp(kth) <= BOOST_EPSILON)))
