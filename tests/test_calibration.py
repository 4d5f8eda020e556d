"""Calibration methods and the calibration/evaluation split (docs/confidence.md §5)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from saltbench.calibration import ConstantCalibrator, fit_calibrator, sigmoid, split_by_sample, zscore_sigmoid
from saltbench.core.vocabulary import CALIBRATION_METHODS

# -- z-score + sigmoid (stable API) -----------------------------------------------------------------


def test_zscore_worked_example():
    perplexities = [1, 1, 1.8, 1.8, 1.8]
    out = zscore_sigmoid(perplexities, perplexities, higher_is_confident=False)
    np.testing.assert_allclose(out, [0.7729, 0.7729, 0.3065, 0.3065, 0.3065], atol=5e-5)
    # population std: mu = 1.48, sigma = sqrt(0.1536)
    assert out[0] == pytest.approx(1 / (1 + np.exp(-0.48 / np.sqrt(0.1536))), abs=1e-15)


def test_zscore_directions():
    up = zscore_sigmoid([1, 2, 3], [1, 2, 3])
    down = zscore_sigmoid([1, 2, 3], [1, 2, 3], higher_is_confident=False)
    assert np.all(np.diff(up) > 0) and np.all(np.diff(down) < 0)
    assert np.all((up > 0) & (up < 1)) and np.all((down > 0) & (down < 1))
    assert up[1] == 0.5
    np.testing.assert_allclose(up + down, 1.0)


def test_zscore_constant_train_and_extremes():
    np.testing.assert_array_equal(zscore_sigmoid([2.0, 2.0, 2.0], [0.0, 2.0, 100.0]), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(zscore_sigmoid([0.0, 1e-13], [5.0]), [0.5])  # sigma <= eps
    out = zscore_sigmoid([0.0, 1.0], [-1e6, 1e6])
    assert out.tolist() == [0.0, 1.0] and np.all(np.isfinite(out))


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([], [1.0]), {}, "train_scores must not be empty"),
        (([1.0, 2.0], [1.0]), {"eps": 0.0}, "eps must be > 0, got 0.0"),
        (([1.0, float("nan")], [1.0]), {}, "train_scores must be finite, got nan"),
        (([1.0, 2.0], [float("inf")]), {}, "scores must be finite, got inf"),
    ],
)
def test_zscore_validation(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        zscore_sigmoid(*args, **kwargs)


def test_sigmoid_is_stable():
    x = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0])
    with np.errstate(over="raise"):
        out = sigmoid(x)
    np.testing.assert_allclose(out, expit(x), rtol=1e-15)


# -- fit_calibrator ------------------------------------------------------------------------------------


def _data(seed=0, n=400):
    rng = np.random.default_rng(seed)
    score = rng.normal(size=n)
    correct = (rng.random(n) < 1 / (1 + np.exp(-2 * score))).astype(int)
    return score, correct


@pytest.mark.parametrize("method", [m for m in CALIBRATION_METHODS if m != "none"])
@pytest.mark.parametrize("higher", [True, False])
def test_outputs_are_monotone_probabilities(method, higher):
    score, correct = _data()
    raw = score if higher else -score  # the same information, opposite direction
    cal = fit_calibrator(method, raw, correct, higher_is_confident=higher)
    assert cal.method == method
    grid = np.linspace(-4, 4, 101)
    out = cal.apply(grid if higher else -grid)
    assert out.shape == grid.shape
    assert np.all((out >= 0) & (out <= 1))
    if method != "histogram":  # bin accuracies need not be monotone
        assert np.all(np.diff(out) >= -1e-12)  # non-decreasing in confidence
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.higher_is_confident = not higher  # type: ignore[misc]


def test_zscore_method_equals_function():
    score, correct = _data(1)
    cal = fit_calibrator("zscore_sigmoid", score, correct, higher_is_confident=False)
    np.testing.assert_array_equal(cal.apply(score), zscore_sigmoid(score, score, higher_is_confident=False))


def test_platt_matches_sklearn_with_platt_targets():
    score, correct = _data(2)
    cal = fit_calibrator("platt", score, correct)
    n_pos, n_neg = correct.sum(), (1 - correct).sum()
    t = np.where(correct == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    # soft targets as weighted duplicated rows; C huge = no regularisation
    x = np.concatenate([score, score])[:, None]
    y = np.concatenate([np.ones_like(score), np.zeros_like(score)])
    lr = LogisticRegression(C=1e12, tol=1e-12, max_iter=10_000)
    lr.fit(x, y, sample_weight=np.concatenate([t, 1 - t]))
    grid = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(cal.apply(grid), lr.predict_proba(grid[:, None])[:, 1], atol=1e-6)
    assert cal.slope > 0


def test_platt_separable_data_stays_finite():
    cal = fit_calibrator("platt", [0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1])
    out = cal.apply([0.0, 0.5, 1.0])
    assert np.all(np.isfinite(out)) and 0 < out[0] < 0.5 < out[2] < 1


def test_isotonic_matches_sklearn():
    score, correct = _data(3)
    cal = fit_calibrator("isotonic", score, correct)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(score, correct)
    grid = np.linspace(-5, 5, 201)
    np.testing.assert_allclose(cal.apply(grid), ref.predict(grid), atol=1e-12)


def test_histogram_equal_width_and_empty_bin_fallback():
    # equal width on [0, 1] with 4 bins: [0,.25) [.25,.5) [.5,.75) [.75,1]; bin 3 is empty.
    train = [0.0, 0.1, 0.3, 0.4, 0.9, 1.0]
    correct = [0, 0, 1, 0, 1, 1]
    cal = fit_calibrator("histogram", train, correct, n_bins=4, histogram_binning="equal_width")
    out = cal.apply([-5.0, 0.2, 0.3, 0.6, 0.8, 7.0])
    np.testing.assert_allclose(out, [0.0, 0.0, 0.5, 0.5, 1.0, 1.0])  # 0.6: empty bin → overall 3/6


def test_histogram_equal_mass():
    train = np.arange(12, dtype=float)
    correct = np.array([0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1])  # bins {0..3} {4..7} {8..11}
    cal = fit_calibrator("histogram", train, correct, n_bins=3)
    np.testing.assert_allclose(cal.apply([0.0, 5.0, 11.0]), [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="histogram_binning must be one of"):
        fit_calibrator("histogram", train, correct, histogram_binning="quantile")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_bins must be a positive integer, got 0"):
        fit_calibrator("histogram", train, correct, n_bins=0)


@pytest.mark.parametrize("method", ["platt", "isotonic", "histogram"])
@pytest.mark.parametrize("label", [0, 1])
def test_single_class_gives_constant_base_rate(method, label):
    cal = fit_calibrator(method, [0.1, 0.5, 0.9], [label] * 3)
    assert isinstance(cal, ConstantCalibrator) and cal.fitted_method == method
    np.testing.assert_array_equal(cal.apply([-10.0, 0.3, 10.0]), [float(label)] * 3)


def test_platt_constant_scores_give_base_rate():
    cal = fit_calibrator("platt", [0.4, 0.4, 0.4, 0.4], [1, 0, 1, 1])
    np.testing.assert_allclose(cal.apply([0.0, 1.0]), [0.75, 0.75])


def test_none_method():
    cal = fit_calibrator("none", [0.2, 0.9], [0, 1])
    np.testing.assert_array_equal(cal.apply([0.0, 0.3, 1.0]), [0.0, 0.3, 1.0])
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\], got 1.3"):
        cal.apply([1.3])
    with pytest.raises(ValueError, match=r"train_scores must lie in \[0, 1\], got 2.0"):
        fit_calibrator("none", [2.0], [1])
    with pytest.raises(ValueError, match="higher_is_confident must be True"):
        fit_calibrator("none", [0.5], [1], higher_is_confident=False)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("bayes", [0.1], [1]), "method must be one of"),
        (("platt", [0.1, 0.2], [1]), "length mismatch"),
        (("platt", [], []), "train_scores must not be empty"),
        (("platt", [0.1], [2]), "train_correct must contain only 0/1"),
    ],
)
def test_fit_validation(args, match):
    with pytest.raises(ValueError, match=match):
        fit_calibrator(*args)


# -- split_by_sample -----------------------------------------------------------------------------------


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    ids=st.lists(st.integers(0, 30), min_size=2, max_size=120).filter(lambda xs: len(set(xs)) >= 2),
    fraction=st.floats(0.05, 0.95),
    seed=st.integers(0, 2**31),
    method=st.sampled_from(["permutation", "hash"]),
)
def test_split_is_deterministic_and_disjoint_by_id(ids, fraction, seed, method):
    mask = split_by_sample(ids, fraction, seed, method=method)
    assert mask.dtype == bool and mask.shape == (len(ids),)
    np.testing.assert_array_equal(mask, split_by_sample(list(ids), fraction, seed, method=method))
    arr = np.array(ids)
    cal_ids, eval_ids = set(arr[mask].tolist()), set(arr[~mask].tolist())
    assert not cal_ids & eval_ids
    if method == "permutation":
        n_unique = len(set(ids))
        assert len(cal_ids) == min(max(round(fraction * n_unique), 1), n_unique - 1)


def test_split_string_ids_and_seed_dependence():
    ids = [f"dna-s0-{i:05d}" for i in range(200) for _ in range(3)]
    a = split_by_sample(ids, 0.3, seed=1)
    assert a.sum() == 60 * 3
    assert not np.array_equal(a, split_by_sample(ids, 0.3, seed=2))
    h = split_by_sample(ids, 0.3, seed=1, method="hash")
    assert 0.15 < h.mean() < 0.45
    # hash assignment of an id does not depend on the other ids present
    sub = split_by_sample(ids[:30], 0.3, seed=1, method="hash")
    np.testing.assert_array_equal(sub, h[:30])


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((["a", "b"], 0.0, 0), {}, r"calibration_fraction must lie in \(0, 1\), got 0.0"),
        ((["a", "b"], 1.0, 0), {}, "calibration_fraction"),
        ((["a", "a"], 0.5, 0), {}, "need at least 2 distinct sample_ids"),
        ((["a", "b"], 0.5, 0), {"method": "modulo"}, "method must be"),
    ],
)
def test_split_validation(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        split_by_sample(*args, **kwargs)
