"""Area under the risk–coverage curve."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.metrics import aurc


def _loop_aurc(scores, correct):
    """Reference: keep the k most confident (ties by descending index = reverse of rejection order)."""
    n = len(scores)
    order = sorted(range(n), key=lambda i: (scores[i], i))[::-1]
    risks = []
    for k in range(1, n + 1):
        kept = order[:k]
        risks.append(sum(1 - correct[i] for i in kept) / k)
    return sum(risks) / n


def test_worked_values():
    assert aurc([0.9, 0.8, 0.1], [1, 1, 0]) == pytest.approx(1 / 9)
    assert aurc([0.1, 0.8, 0.9], [1, 1, 0]) == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert aurc([0.5, 0.5], [1, 0]) == 0.5
    # paper ties reject index 0 first, so index 1 (incorrect) is the last kept: risks 1, 1/2.
    assert aurc([0.5, 0.5], [1, 0], ties="paper") == pytest.approx(0.75)
    assert aurc([0.5, 0.5], [0, 1], ties="paper") == pytest.approx(0.25)
    assert aurc([1, 1, 1], [1, 1, 1]) == 0.0
    assert aurc([1, 2, 3], [0, 0, 0]) == 1.0


def test_validation():
    with pytest.raises(ValueError, match="ties must be one of"):
        aurc([0.1], [1], ties="x")
    with pytest.raises(ValueError, match="length mismatch"):
        aurc([0.1, 0.2], [1])


@settings(derandomize=True, max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=40))
def test_paper_ties_matches_loop(data):
    scores = [s for s, _ in data]
    correct = [int(y) for _, y in data]
    assert aurc(scores, correct, ties="paper") == pytest.approx(_loop_aurc(scores, correct), abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_average_ties_equals_mean_over_permutations(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    scores = rng.integers(0, 3, n).astype(float)
    correct = rng.integers(0, 2, n)
    values = [aurc(scores[list(p)], correct[list(p)], ties="paper") for p in itertools.permutations(range(n))]
    assert aurc(scores, correct) == pytest.approx(float(np.mean(values)), abs=1e-12)


def test_oracle_is_minimal():
    rng = np.random.default_rng(0)
    correct = rng.integers(0, 2, 200)
    oracle = aurc(correct, correct)
    for _ in range(20):
        assert aurc(rng.random(200), correct) >= oracle
