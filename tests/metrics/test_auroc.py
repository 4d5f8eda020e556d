"""Pooled and per-response AUROC (docs/metrics.md §3, docs/compatibility.md §1.9)."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from saltbench.metrics import aurc, auroc, auroc_per_group, auroc_per_response, prr


@pytest.mark.parametrize(
    ("scores", "correct", "expected"),
    [
        ([1, 1, 0.8, 0.8, 0.8], [1, 1, 0, 1, 0], 5 / 6),
        ([0.5, 0.5], [1, 0], 0.5),
        ([0.9, 0.1], [0, 1], 0.0),
        ([1.0, 0.8], [1, 0], 1.0),  # line-level reference number (§6.5)
        ([-1, -1.5, -8, -2], [1, 1, 0, 1], 1.0),  # negated perplexities (§6.5)
        ([-1, -1, -1.8, -1.8, -1.8], [1, 1, 0, 1, 0], 5 / 6),
    ],
)
def test_worked_values(scores, correct, expected):
    assert auroc(scores, correct) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("scores", "correct"),
    [([0.88], [0]), ([0.3, 0.4], [1, 1]), ([0.3, 0.4], [0, 0])],
)
def test_undefined_is_nan(scores, correct):
    assert math.isnan(auroc(scores, correct))


@pytest.mark.parametrize(
    ("scores", "correct", "message"),
    [
        ([], [], "scores must not be empty"),
        ([float("nan"), 0.5], [1, 0], "scores must be finite, got nan"),
        ([0.9, float("inf")], [1, 0], "scores must be finite, got inf"),
        ([0.2, 0.9], [float("nan"), 1], "correct must contain only 0/1 (or bools), got nan"),
    ],
)
def test_empty_or_nonfinite_input_is_refused_as_by_every_metric(scores, correct, message):
    for metric in (auroc, prr, aurc):
        with pytest.raises(ValueError, match=re.escape(message)):
            metric(scores, correct)
    with pytest.raises(ValueError, match=re.escape(message)):
        auroc_per_response(scores, correct, [0] * len(scores))


def test_validation():
    with pytest.raises(ValueError, match="length mismatch"):
        auroc([0.1, 0.2], [1])
    with pytest.raises(ValueError, match="correct must contain only 0/1"):
        auroc([0.1, 0.2], [1, 3])


def test_tutorial_pooled_vs_per_response():
    # colors: red yellow green (1,0,1) at .70 .65 .68; weekdays: monday thursday sunday at .50 .45 .48.
    scores = [0.70, 0.65, 0.68, 0.50, 0.45, 0.48]
    correct = [1, 0, 1, 1, 0, 1]
    groups = ["colors"] * 3 + ["weekdays"] * 3
    assert auroc(scores, correct) == pytest.approx(0.75)  # tutorial "macro"
    assert auroc_per_response(scores, correct, groups) == 1.0  # tutorial "micro"
    assert auroc_per_response(scores, correct, groups, paper_micro=True) == 1.0


def test_per_response_undefined_groups():
    scores = [0.9, 0.1, 0.5, 0.6, 0.4]
    correct = [1, 0, 1, 1, 0]
    groups = [0, 0, 1, 2, 2]  # group 1 has a single unit → undefined
    labels, values = auroc_per_group(scores, correct, groups)
    assert labels.tolist() == [0, 1, 2]
    assert values[0] == 1.0 and math.isnan(values[1]) and values[2] == 1.0
    assert auroc_per_response(scores, correct, groups) == 1.0
    assert auroc_per_response(scores, correct, groups, paper_micro=True) == pytest.approx(2 / 3)
    assert math.isnan(auroc_per_response([0.5], [1], [0]))
    assert auroc_per_response([0.5], [1], [0], paper_micro=True) == 0.0


def _sklearn_or_nan(y, s):
    y, s = np.asarray(y), np.asarray(s)
    if y.min() == y.max():
        return math.nan
    return roc_auc_score(y, s)


@settings(derandomize=True, max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-5, 5), st.booleans()), min_size=1, max_size=80),
    st.booleans(),
)
def test_matches_sklearn(data, use_floats):
    scores = [s / 3 if use_floats else s for s, _ in data]  # small integer range → many ties
    correct = [int(y) for _, y in data]
    want = _sklearn_or_nan(correct, scores)
    got = auroc(scores, correct)
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(want, abs=1e-12)


@settings(derandomize=True, max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.integers(0, 5)), min_size=1, max_size=60))
def test_per_group_matches_sklearn_loop(data):
    scores = np.array([s for s, _, _ in data], dtype=float)
    correct = np.array([int(y) for _, y, _ in data])
    groups = np.array([g for _, _, g in data])
    labels, values = auroc_per_group(scores, correct, groups)
    for label, value in zip(labels, values):
        m = groups == label
        want = _sklearn_or_nan(correct[m], scores[m])
        assert (math.isnan(value) and math.isnan(want)) or value == pytest.approx(want, abs=1e-12)
    defined = [v for v in values if not math.isnan(v)]
    got = auroc_per_response(scores, correct, groups)
    if defined:
        assert got == pytest.approx(np.mean(defined))
        assert auroc_per_response(scores, correct, groups, paper_micro=True) == pytest.approx(
            sum(defined) / len(labels)
        )
    else:
        assert math.isnan(got)


def test_permutation_invariance_and_large_input():
    rng = np.random.default_rng(3)
    s = rng.integers(0, 50, 20_000).astype(float)
    y = rng.integers(0, 2, 20_000)
    perm = rng.permutation(s.size)
    assert auroc(s, y) == auroc(s[perm], y[perm])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert auroc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
