"""ECE / MCE / Brier (docs/metrics.md §2, §7)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.metrics import brier, calibration_errors, ece, mce


@pytest.mark.parametrize(
    ("conf", "correct", "n_bins", "expected_ece", "expected_mce"),
    [
        ([1, 1, 0.8, 0.8, 0.8], [1, 1, 0, 1, 0], 15, 0.28, 0.8 - 1 / 3),  # 0.8 sits on boundary 12/15
        ([1.0, 0.8], [1, 0], 15, 0.4, 0.8),
        ([0.88], [0], 15, 0.88, 0.88),
        ([1 / 15, 2 / 15], [1, 0], 15, 8 / 15, 14 / 15),  # (0.5333, 0.9333)
        ([0.05, 0.15, 0.95], [0, 1, 1], 10, 0.95 / 3, 0.85),  # (0.31667, 0.85)
        ([0, 1], [0, 1], 15, 0.0, 0.0),
    ],
)
def test_worked_values(conf, correct, n_bins, expected_ece, expected_mce):
    got_ece, got_mce = calibration_errors(conf, correct, n_bins=n_bins)
    assert got_ece == pytest.approx(expected_ece, abs=1e-12)
    assert got_mce == pytest.approx(expected_mce, abs=1e-12)
    assert ece(conf, correct, n_bins) == got_ece
    assert mce(conf, correct, n_bins) == got_mce


def test_rounded_reference_values():
    assert round(ece([1 / 15, 2 / 15], [1, 0]), 4) == 0.5333
    assert round(mce([1 / 15, 2 / 15], [1, 0]), 4) == 0.9333
    assert round(ece([0.05, 0.15, 0.95], [0, 1, 1], n_bins=10), 5) == 0.31667


def test_zero_confidence_quirk():
    # paper: 0.0 is in no bin but counts in N; corrected: 0.0 joins the first bin.
    conf, correct = [0.0, 0.0, 1.0], [1, 1, 1]
    assert ece(conf, correct) == 0.0
    assert ece(conf, correct, binning="corrected") == pytest.approx(2 / 3)
    assert mce([0.0, 0.0], [1, 0]) == 0.0  # no occupied bin
    assert mce([0.0, 0.0], [1, 0], binning="corrected") == pytest.approx(0.5)
    # N still counts the zero: one perfectly wrong unit at 0.5 among a zero gives 0.5 / 2.
    assert ece([0.0, 0.5], [1, 0]) == pytest.approx(0.25)


def test_booleans_and_numpy_inputs():
    assert ece(np.array([1.0, 0.8]), np.array([True, False])) == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"confidences": [], "correct": []}, "confidences must not be empty"),
        ({"confidences": [0.5], "correct": [1, 0]}, "length mismatch"),
        ({"confidences": [1.5], "correct": [1]}, r"confidences must lie in \[0, 1\], got 1.5"),
        ({"confidences": [-0.1], "correct": [1]}, r"got -0.1"),
        ({"confidences": [float("nan")], "correct": [1]}, "confidences must be finite"),
        ({"confidences": [0.5], "correct": [2]}, "correct must contain only 0/1"),
        ({"confidences": [0.5], "correct": [1], "n_bins": 0}, "n_bins must be a positive integer, got 0"),
        ({"confidences": [0.5], "correct": [1], "n_bins": 2.5}, "n_bins"),
        ({"confidences": [0.5], "correct": [1], "binning": "weird"}, "binning must be one of"),
        ({"confidences": [[0.5]], "correct": [1]}, "must be 1-D"),
    ],
)
def test_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ece(**kwargs)


def _loop_ece(conf, correct, m, corrected=False):
    """Straightforward reference: explicit open-below/closed-above bins."""
    n = len(conf)
    total, worst = 0.0, 0.0
    for j in range(1, m + 1):
        lower, upper = (j - 1) / m, j / m
        members = [
            i for i in range(n) if (lower < conf[i] <= upper) or (corrected and j == 1 and conf[i] == 0.0)
        ]
        if not members:
            continue
        mean_c = sum(conf[i] for i in members) / len(members)
        mean_a = sum(correct[i] for i in members) / len(members)
        total += abs(mean_c - mean_a) * len(members) / n
        worst = max(worst, abs(mean_c - mean_a))
    return total, worst


conf_values = st.one_of(
    st.floats(0.0, 1.0, allow_nan=False),
    st.integers(0, 20).map(lambda k: k / 20),  # lands on bin boundaries often
)


@settings(derandomize=True, max_examples=150, deadline=None)
@given(
    data=st.lists(st.tuples(conf_values, st.booleans()), min_size=1, max_size=60),
    m=st.integers(1, 25),
    corrected=st.booleans(),
)
def test_matches_loop(data, m, corrected):
    conf = [c for c, _ in data]
    correct = [int(y) for _, y in data]
    want_ece, want_mce = _loop_ece(conf, correct, m, corrected)
    got_ece, got_mce = calibration_errors(conf, correct, m, "corrected" if corrected else "paper")
    assert got_ece == pytest.approx(want_ece, abs=1e-12)
    assert got_mce == pytest.approx(want_mce, abs=1e-12)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-9, 1.0), st.booleans()), min_size=1, max_size=40))
def test_binnings_agree_without_zeros(data):
    conf = [c for c, _ in data]
    correct = [int(y) for _, y in data]
    assert ece(conf, correct) == ece(conf, correct, binning="corrected")


def test_brier():
    assert brier([1.0, 0.8], [1, 0]) == pytest.approx(0.32)
    assert brier([0.5, 0.5], [True, False]) == 0.25
    assert brier([1.0, 0.0], [1, 0]) == 0.0
    with pytest.raises(ValueError, match=r"confidences must lie in \[0, 1\], got 2.0"):
        brier([2.0], [1])
    with pytest.raises(ValueError, match="must not be empty"):
        brier([], [])
    rng = np.random.default_rng(0)
    c, y = rng.random(100), rng.integers(0, 2, 100)
    assert brier(c, y) == pytest.approx(float(np.mean((c - y) ** 2)))
