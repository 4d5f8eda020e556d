"""The second-pass estimators on the inputs shared with the anchors' cross-check (docs/confidence.md §8.4,
``bench/crosscheck_second_pass_anchors.py``), without the anchors installed: where lm-polygraph's, uqlm's and
TruthTorchLM's formulas must give ours, ours does; where they differ by design, ours is pinned."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.second_pass_cases import (
    FALSE_ID,
    TRUE_ID,
    VERBALIZED_AGREED,
    VERBALIZED_DIFFERENT,
    VOCABULARY,
    top_candidates,
    two_token_logprobs,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from saltbench.evaluation import p_true, parse_verbalized, true_false_ids

EVERY_SPELLING = true_false_ids(enumerate(VOCABULARY))


def ours(logprobs: np.ndarray, top_k: int, words: tuple = EVERY_SPELLING) -> float:
    """Our P(True) of a step with these log-probabilities, from its stored top-k."""
    chosen, chosen_logprob, ids, topk = top_candidates(logprobs, top_k)
    return p_true(chosen, chosen_logprob, ids, topk, *words)[0]


@given(p=st.floats(1e-9, 1 - 1e-9), top_k=st.integers(2, len(VOCABULARY)))
def test_with_all_mass_on_true_and_false_ours_is_every_anchors_p_true(p, top_k) -> None:
    # lm-polygraph: the full-softmax probability of the token of "True" = p; uqlm: the first token's
    # probability if it is True (p), one minus it if it is False (1 − (1 − p)); both are p.
    logprobs = two_token_logprobs(p)
    assert ours(logprobs, top_k) == pytest.approx(p, abs=1e-12)
    assert ours(logprobs, top_k, ({TRUE_ID}, {FALSE_ID})) == pytest.approx(p, abs=1e-12)


@given(
    logits=arrays(np.float64, len(VOCABULARY), elements=st.floats(-8, 8)),
    top_k=st.integers(2, len(VOCABULARY)),
)
def test_with_one_spelling_ours_is_lmpolygraphs_p_true_renormalised_by_p_false(logits, top_k) -> None:
    logprobs = logits - np.logaddexp.reduce(logits)
    listed = set(top_candidates(logprobs, top_k)[2].tolist())
    value = ours(logprobs, top_k, ({TRUE_ID}, {FALSE_ID}))
    p_t, p_f = np.exp(logprobs[TRUE_ID]), np.exp(logprobs[FALSE_ID])
    expected = {
        (True, True): p_t / (p_t + p_f),
        (True, False): 1.0,
        (False, True): 0.0,
        (False, False): math.nan,
    }[TRUE_ID in listed, FALSE_ID in listed]
    assert value == pytest.approx(expected, abs=1e-12, nan_ok=True)


def test_with_mass_elsewhere_or_split_spellings_ours_differs_from_the_anchors_as_documented() -> None:
    # " True" 0.35, "True" 0.25, "False" 0.2, "The" 0.2: lm-polygraph reads P("True") = 0.25, uqlm the greedy
    # token " True": 0.35; ours sums the spellings and renormalises: 0.6 / 0.8, or 0.25 / 0.45 with one.
    probs = np.zeros(len(VOCABULARY))
    probs[[1, TRUE_ID, FALSE_ID, VOCABULARY.index("The")]] = 0.35, 0.25, 0.2, 0.2
    with np.errstate(divide="ignore"):
        logprobs = np.log(probs)
    assert ours(logprobs, 4) == pytest.approx(0.75, abs=1e-12)
    assert ours(logprobs, 4, ({TRUE_ID}, {FALSE_ID})) == pytest.approx(0.25 / 0.45, abs=1e-12)
    assert ours(logprobs, 2) == 1.0  # False below the stored top-2: the mass read is only True's


@pytest.mark.parametrize(("reply", "value"), VERBALIZED_AGREED.items())
def test_replies_every_anchor_reads_alike_are_read_alike_by_ours(reply, value) -> None:
    read, status = parse_verbalized(reply)
    assert status == "ok"
    assert read == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize(("reply", "expected"), VERBALIZED_DIFFERENT.items())
def test_replies_an_anchor_reads_otherwise_are_pinned(reply, expected) -> None:
    read, status = parse_verbalized(reply)
    if isinstance(expected, str):
        assert (status, math.isnan(read)) == (expected, True)
    else:
        assert status == "ok"
        assert read == pytest.approx(expected, abs=1e-12)
