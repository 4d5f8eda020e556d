"""The batched bootstrap (resamples as integer weights) equals the per-resample path, resample by resample."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.metrics import (
    _bootstrap,
    _weighted,
    aurc,
    auroc,
    auroc_per_response,
    bootstrap_ci,
    bootstrap_cis,
    brier,
    ece,
    mce,
    prr,
    prr_per_response,
)
from saltbench.metrics._bootstrap import _batched, _resample_indices, mean_score

TOL = 1e-12

# (name, metric); confidences lie in [0, 1] for every metric
POOLED = [
    ("auroc", auroc),
    ("prr", prr),
    ("prr_atol0", functools.partial(prr, atol=0.0)),
    ("prr_average", functools.partial(prr, ties="average")),
    ("aurc", aurc),
    ("aurc_average", functools.partial(aurc, ties="average")),
    ("ece", ece),
    ("ece_bins4", functools.partial(ece, n_bins=4)),
    ("ece_corrected", functools.partial(ece, n_bins=15, binning="corrected")),
    ("mce", mce),
    ("mce_corrected", functools.partial(mce, n_bins=3, binning="corrected")),
    ("brier", brier),
    ("mean_score", mean_score),
]
PER_RESPONSE = [
    ("auroc_per_response", auroc_per_response),
    ("auroc_per_response_micro", functools.partial(auroc_per_response, paper_micro=True)),
    ("prr_per_response", prr_per_response),
    ("prr_per_response_size", functools.partial(prr_per_response, group_weighting="size")),
    ("prr_per_response_paper", functools.partial(prr_per_response, ties="paper")),
]


def per_resample(metric, s, y, codes, draws, with_groups):
    """The per-resample path of ``bootstrap_ci``: materialise each resample and call the metric."""
    unit_order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=draws.shape[1])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    out = []
    for d in draws:
        idx, new_codes = _resample_indices(d, unit_order, starts, sizes)
        out.append(metric(s[idx], y[idx], new_codes) if with_groups else metric(s[idx], y[idx]))
    return np.array(out, dtype=np.float64)


def assert_same(fast, slow):
    assert fast.shape == slow.shape
    assert np.array_equal(np.isnan(fast), np.isnan(slow)), (fast, slow)
    both = ~np.isnan(slow)
    assert np.all(np.abs(fast[both] - slow[both]) <= TOL), np.max(np.abs(fast[both] - slow[both]))


@st.composite
def inputs(draw):
    """Scores with many ties (a few distinct values, exact 0 and 1 included), labels that may be one class
    only, groups that may be singletons or a single group, and the bootstrap draws."""
    n = draw(st.integers(1, 40))
    n_groups = draw(st.integers(1, min(n, 8)))
    codes = np.array(draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)))
    codes = np.unique(codes, return_inverse=True)[1].reshape(-1)  # dense, as bootstrap_ci makes them
    pool = draw(st.lists(st.sampled_from([0.0, 1.0, 0.5, 0.25, 1 / 3, 0.7]) | st.floats(0, 1), min_size=1))
    s = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)), dtype=np.float64)
    label = st.sampled_from([0, 1])
    y = np.array(draw(st.one_of(st.lists(label, min_size=n, max_size=n), label.map(lambda v: [v] * n))))
    n_resamples = draw(st.integers(1, 25))
    seed = draw(st.integers(0, 2**32 - 1))
    draws = np.random.default_rng(seed).integers(0, codes.max() + 1, size=(n_resamples, codes.max() + 1))
    return s, y.astype(np.float64), codes, draws


@pytest.mark.parametrize("dense_groups", [_weighted.DENSE_GROUPS, 0])  # block sums: matrix product, unit sums
@settings(max_examples=100, deadline=None)
@given(data=inputs())
def test_every_batched_metric_equals_the_per_resample_path(data, dense_groups):
    s, y, codes, draws = data
    counts = _weighted.group_counts(draws, codes.max() + 1)
    previous, _weighted.DENSE_GROUPS = _weighted.DENSE_GROUPS, dense_groups
    try:
        for name, metric in POOLED:
            batched = _batched(metric, False, s, y, codes)
            assert batched is not None, name
            assert_same(batched(counts), per_resample(metric, s, y, codes, draws, False))
        for name, metric in PER_RESPONSE:
            batched = _batched(metric, True, s, y, codes)
            assert batched is not None, name
            assert_same(batched(counts), per_resample(metric, s, y, codes, draws, True))
    finally:
        _weighted.DENSE_GROUPS = previous


@settings(max_examples=40, deadline=None)
@given(inputs())
def test_row_chunks_do_not_change_values(data):
    s, y, codes, draws = data
    counts = _weighted.group_counts(draws, codes.max() + 1)
    for _, metric in POOLED:
        whole = _batched(metric, False, s, y, codes)(counts)
        previous = _weighted.ROW_CHUNK_ELEMENTS
        _weighted.ROW_CHUNK_ELEMENTS = 1  # one resample per chunk
        try:
            chunked = _batched(metric, False, s, y, codes)(counts)
        finally:
            _weighted.ROW_CHUNK_ELEMENTS = previous
        assert_same(chunked, whole)  # AURC's final row sums see other padding: equal up to ulps


def test_group_counts_are_the_draw_multiplicities():
    draws = np.random.default_rng(3).integers(0, 5, size=(7, 5))
    counts = _weighted.group_counts(draws, 5)
    assert counts.shape == (7, 5) and np.all(counts.sum(axis=1) == 5)
    for row, d in zip(counts, draws):
        assert row.tolist() == np.bincount(d, minlength=5).tolist()


@pytest.mark.parametrize(
    ("metric", "with_groups"),
    [
        (functools.partial(prr, ties="paper"), False),  # order-dependent ties
        (functools.partial(aurc, ties="paper"), False),
        (lambda s, y: auroc(s, y), False),  # any other callable
        (functools.partial(ece, [0.5]), False),  # positional partial arguments
        (auroc, True),  # called with groups: not the pooled metric's signature
        (auroc_per_response, False),
    ],
)
def test_no_batched_path_where_it_would_not_be_exact(metric, with_groups):
    s, y, codes = np.array([0.2, 0.2, 0.9]), np.array([0.0, 1.0, 1.0]), np.array([0, 1, 1])
    assert _batched(metric, with_groups, s, y, codes) is None


def _data(seed, n_groups=30, rounding=1):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 8, n_groups)
    groups = np.repeat(np.arange(n_groups), sizes)
    correct = rng.integers(0, 2, groups.size)
    scores = np.round(np.clip(correct * 0.3 + rng.random(groups.size) * 0.7, 0, 1), rounding)
    return scores, correct, groups.astype(str)


METRICS = {name: (metric, False) for name, metric in POOLED} | {
    name: (metric, True) for name, metric in PER_RESPONSE
}


@pytest.mark.parametrize("name", list(METRICS))
@pytest.mark.parametrize("min_defined", [0.0, 0.5, 1.0])
def test_bootstrap_ci_equals_the_per_resample_path(name, min_defined, monkeypatch):
    metric, with_groups = METRICS[name]
    for seed in range(3):
        s, y, g = _data(seed, n_groups=[2, 5, 100][seed])  # 100 > DENSE_GROUPS
        fast = bootstrap_ci(metric, s, y, g, 150, 0.1, seed, with_groups=with_groups, min_defined=min_defined)
        with monkeypatch.context() as m:
            m.setattr(_bootstrap, "_batched", lambda *args: None)
            slow = bootstrap_ci(
                metric, s, y, g, 150, 0.1, seed, with_groups=with_groups, min_defined=min_defined
            )
        assert fast.point == slow.point
        for a, b in zip(fast, slow):
            assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOL


def test_one_class_resamples_are_nan_in_both_paths():
    # two responses, one all-correct and one all-wrong (as in test_bootstrap_ci): half the resamples NaN
    s, y, g = [0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0], [0, 0, 1, 1]
    codes = np.array(g)
    draws = np.random.default_rng(0).integers(0, 2, size=(50, 2))
    for metric in (auroc, prr, functools.partial(prr, atol=0.0)):
        fast = _batched(metric, False, np.array(s), np.array(y), codes)(_weighted.group_counts(draws, 2))
        slow = per_resample(metric, np.array(s), np.array(y), codes, draws, False)
        assert_same(fast, slow)
        assert np.isnan(fast).any() and not np.isnan(fast).all()


@settings(max_examples=60, deadline=None)
@given(data=inputs(), seed=st.integers(0, 2**16))
def test_bootstrap_cis_equals_one_bootstrap_ci_per_metric(data, seed):
    """Shared resamples and block sums (the metrics stage's ranking metrics) change no interval; a metric
    without a shared path (ties="paper") and one undefined on the data (one class) are handled per metric."""
    s, y, codes, _ = data
    metrics = [
        auroc,
        functools.partial(prr, ties="average"),
        aurc,
        functools.partial(prr, ties="paper"),
        brier,
    ]
    shared = bootstrap_cis(metrics, s, y, codes, n_resamples=30, seed=seed)
    for metric, interval in zip(metrics, shared, strict=True):
        alone = bootstrap_ci(metric, s, y, codes, n_resamples=30, seed=seed)
        for a, b in zip(interval, alone):
            assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOL, (metric, interval, alone)
