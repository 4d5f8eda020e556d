"""``mean_self_certainty`` and ``mean_boosted_probability`` on the inputs shared with the cross-check
against lm-polygraph 0.7.0 (docs/confidence.md §4.4, ``bench/crosscheck_token_functions_lmpolygraph.py``),
without lm-polygraph installed: its estimators average a per-token score over a sequence or a claim's
aligned tokens, from the stored log-probabilities (−inf entries dropped); the per-token scores here are
the formula their SelfCertainty computes and the ``boostedprob`` package their BoostedProb calls."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.token_function_cases import (
    fully_stored,
    ours,
    random_case,
    stored_entries_suffice,
    stored_rows,
)
from hypothesis import given, settings
from hypothesis import strategies as st

SEEDS = st.integers(0, 2**32 - 1)


def reduced(per_token: np.ndarray, claims: list[np.ndarray]) -> tuple[float, np.ndarray]:
    """Their reduction: the mean over the sequence's tokens and over each claim's."""
    return float(per_token.mean()), np.array([per_token[c].mean() for c in claims])


def boostedprob(rows: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """The ``boostedprob`` package's score of each row's chosen column, its defaults."""
    torch = pytest.importorskip("torch")
    package = pytest.importorskip("boostedprob")
    return package.calculate_boostedprob(torch.tensor(rows), torch.tensor(picks)).numpy()


@settings(max_examples=40, deadline=None)
@given(seed=SEEDS, top_k=st.integers(2, 20))
def test_self_certainty_is_lmpolygraphs_on_the_renormalised_stored_top_k(seed, top_k) -> None:
    case = random_case(np.random.default_rng(seed), top_k)
    rows = stored_rows(case, renormalise=True)
    finite = np.isfinite(rows)
    per_token = -np.log(finite.sum(axis=1)) - np.where(finite, rows, 0.0).sum(axis=1) / finite.sum(axis=1)
    sequence, claims = ours(case, "mean_self_certainty", "topk")
    expected = reduced(per_token, case.claims)
    assert sequence == pytest.approx(expected[0], abs=1e-9)
    np.testing.assert_allclose(claims, expected[1], rtol=0, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=SEEDS, top_k=st.integers(2, 20), flavour=st.sampled_from(["topk", "full"]))
def test_boosted_probability_is_lmpolygraphs_on_the_stored_top_k(seed, top_k, flavour) -> None:
    case = random_case(np.random.default_rng(seed), top_k)
    rows = stored_rows(case, renormalise=flavour == "topk")
    expected = reduced(boostedprob(rows, np.zeros(len(rows), dtype=np.int64)), case.claims)
    sequence, claims = ours(case, "mean_boosted_probability", flavour)
    assert sequence == pytest.approx(expected[0], abs=1e-6)
    np.testing.assert_allclose(claims, expected[1], rtol=0, atol=1e-6)


def test_boosted_probability_on_the_stored_top_k_is_the_whole_distributions_where_those_suffice() -> None:
    # every chosen token among its top 20 and the 20th at most 0.005: no jump at or beyond the stored
    # entries, so ours (full) equals theirs on the whole distribution; elsewhere it may not
    rng = np.random.default_rng(0)
    cases = [fully_stored(random_case(rng, 20)) for _ in range(200)]
    gaps = {True: [], False: []}
    for case in cases:
        theirs = reduced(boostedprob(case.whole, case.picks), case.claims)
        sequence, claims = ours(case, "mean_boosted_probability", "full")
        gap = max(abs(sequence - theirs[0]), float(np.max(np.abs(claims - theirs[1]))))
        gaps[stored_entries_suffice(case)].append(gap)
    assert len(gaps[True]) >= 10
    assert max(gaps[True]) <= 1e-6
    assert max(gaps[False]) > 1e-3
