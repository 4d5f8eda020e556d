"""Response-level bootstrap confidence intervals."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from saltbench.metrics import auroc, auroc_per_response, bootstrap_ci, ece, prr


def _well_behaved(n_groups=40, per_group=6, seed=0):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_groups), per_group)
    correct = rng.integers(0, 2, groups.size)
    scores = correct * 0.6 + rng.random(groups.size) * 0.7  # informative but noisy
    return scores, correct, groups


@pytest.mark.parametrize(
    "metric", [auroc, functools.partial(prr, ties="average"), lambda s, y: ece(np.clip(s, 0, 1), y)]
)
def test_contains_point_and_is_reproducible(metric):
    s, y, g = _well_behaved()
    ci = bootstrap_ci(metric, s, y, g, n_resamples=200, seed=7)
    assert ci.low <= ci.point <= ci.high
    assert ci.high - ci.low > 0
    assert tuple(bootstrap_ci(metric, s, y, g, n_resamples=200, seed=7)) == tuple(ci)
    assert tuple(bootstrap_ci(metric, s, y, g, n_resamples=200, seed=8)) != tuple(ci)
    point, low, high = ci  # unpacks as a triple
    assert point == metric(s, y)


def test_resamples_whole_responses():
    # Each response has a constant score and label; a unit-level resample would break that link,
    # a response-level one keeps every resampled response intact.
    seen = []

    def count_groups(s, y, g):
        seen.append(len(np.unique(g)))
        sizes = np.bincount(g)
        assert np.all(sizes == 3)  # every drawn response arrives with all its 3 units
        for code in np.unique(g):
            assert len(set(s[g == code])) == 1
        return 0.0

    s = np.repeat([0.1, 0.2, 0.3, 0.4], 3)
    y = np.repeat([0, 1, 0, 1], 3)
    g = np.repeat(["w", "x", "y", "z"], 3)
    bootstrap_ci(count_groups, s, y, g, n_resamples=30, with_groups=True)
    assert seen == [4] * 31  # point + 30 resamples, each with G = 4 distinct (relabelled) responses


def test_per_response_metric_with_groups():
    s, y, g = _well_behaved(seed=3)
    ci = bootstrap_ci(auroc_per_response, s, y, g, n_resamples=100, with_groups=True)
    assert ci.point == auroc_per_response(s, y, g)
    assert ci.low <= ci.point <= ci.high


def test_nan_resamples_ignored_or_bounds_nan():
    # Two responses, one all-correct and one all-wrong: pooled AUROC is defined only when both are drawn.
    s = [0.9, 0.8, 0.2, 0.1]
    y = [1, 1, 0, 0]
    g = [0, 0, 1, 1]
    ci = bootstrap_ci(auroc, s, y, g, n_resamples=400, seed=0, min_defined=0.2)
    assert ci == (1.0, 1.0, 1.0)  # about half the resamples are NaN and are ignored
    nan_ci = bootstrap_ci(auroc, s, y, g, n_resamples=400, seed=0, min_defined=0.9)
    assert nan_ci.point == 1.0 and math.isnan(nan_ci.low) and math.isnan(nan_ci.high)
    undefined = bootstrap_ci(auroc, [0.5, 0.6], [1, 1], None, n_resamples=50)
    assert all(math.isnan(v) for v in undefined)


def test_undefined_point_is_not_resampled(caplog):
    calls = []

    def counting_auroc(s, y):
        calls.append(len(s))
        return auroc(s, y)

    with caplog.at_level("WARNING", logger="saltbench.metrics"):
        ci = bootstrap_ci(counting_auroc, [0.5, 0.6, 0.7], [0, 0, 0], None, n_resamples=50)
    assert all(math.isnan(v) for v in ci)
    assert calls == [3]  # only the point estimate was computed
    assert not caplog.records  # an undefined metric is expected, not warned about per call


def test_unit_level_when_groups_none():
    s, y, _ = _well_behaved(seed=5)
    ci = bootstrap_ci(auroc, s, y, n_resamples=100, seed=1)
    assert ci.low <= ci.point <= ci.high


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_resamples": 0}, "n_resamples must be a positive integer, got 0"),
        ({"alpha": 1.5}, r"alpha must lie in \(0, 1\), got 1.5"),
        ({"min_defined": -0.1}, r"min_defined must lie in \[0, 1\]"),
        ({"groups": [0]}, "length mismatch"),
    ],
)
def test_validation(kwargs, match):
    args = {"scores": [0.1, 0.9], "correct": [0, 1]} | kwargs
    with pytest.raises(ValueError, match=match):
        bootstrap_ci(auroc, **args)
