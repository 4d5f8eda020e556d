"""PRR, rejection curves and grouped PRR (docs/metrics.md §4–5, docs/compatibility.md §1.7)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.metrics import prr, prr_details, prr_per_group, prr_per_response, rejection_curve

TOY_CORRECT = [1, 1, 0, 1, 0]
TOY_SCORES = [1, 1, 0.8, 0.8, 0.8]


def _paper_prr_loop(correct, scores):
    """Independent plain-Python transcription of the §6.3 definition (ties by ascending index)."""
    n = len(correct)
    losses = [1 - c for c in correct]
    total = sum(losses)
    base = total / n

    def area(order):
        errors = [total / n]
        rejected = 0.0
        for i in order:
            rejected += losses[i]
            errors.append((total - rejected) / n)
        return sum((errors[k] + errors[k + 1]) / 2 / n for k in range(n))

    model = sorted(range(n), key=lambda i: (scores[i], i))  # uncertainty descending = score ascending
    oracle = sorted(range(n), key=lambda i: (-losses[i], i))
    a_rand = sum((base * (1 - k / n) + base * (1 - (k + 1) / n)) / 2 / n for k in range(n))
    ar_orc = a_rand - area(oracle)
    return math.nan if abs(ar_orc) <= 1e-12 else (a_rand - area(model)) / ar_orc


def test_toy_matrix_paper_ties():
    d = prr_details(TOY_SCORES, TOY_CORRECT, ties="paper")
    model, oracle = d.curves.model, d.curves.oracle
    assert model.order.tolist() == [2, 3, 4, 0, 1]
    np.testing.assert_allclose(model.overall_error, [0.4, 0.2, 0.2, 0, 0, 0], atol=1e-15)
    assert oracle.order.tolist() == [2, 4, 0, 1, 3]
    np.testing.assert_allclose(oracle.overall_error, [0.4, 0.2, 0, 0, 0, 0], atol=1e-15)
    assert d.area_model == pytest.approx(0.12)
    assert d.area_random == pytest.approx(0.2)
    assert d.area_oracle == pytest.approx(0.08)
    assert d.base_error == pytest.approx(0.4)
    assert d.prr == pytest.approx(2 / 3)
    assert round(prr(TOY_SCORES, TOY_CORRECT, ties="paper"), 3) == 0.667


def test_toy_matrix_average_ties_same_value():
    # The tied block {2, 3, 4} holds losses (1, 0, 1); its mean curve has the same area here.
    d = prr_details(TOY_SCORES, TOY_CORRECT)
    np.testing.assert_allclose(d.curves.model.overall_error, [0.4, 0.8 / 3, 0.4 / 3, 0, 0, 0], atol=1e-15)
    assert d.prr == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("correct", "scores", "ties", "expected"),
    [
        ([0, 0, 1, 1], [0.1, 0.2, 0.9, 0.8], "paper", 1.0),
        ([0, 0, 1, 1], [0.1, 0.2, 0.9, 0.8], "average", 1.0),
        ([1, 0], [0.5, 0.5], "paper", -1.0),
        ([0, 1], [0.5, 0.5], "paper", 1.0),
        ([1, 0], [0.5, 0.5], "average", 0.0),
        ([0, 1], [0.5, 0.5], "average", 0.0),
        ([0, 1], [0.9, 0.1], "paper", -1.0),
        ([0, 1], [0.9, 0.1], "average", -1.0),
        ([1, 0], [1.0, 0.8], "paper", 1.0),  # line-level reference number (§6.5)
        ([1, 1, 0, 1], [-1, -1.5, -8, -2], "paper", 1.0),
    ],
)
def test_worked_values(correct, scores, ties, expected):
    assert prr(scores, correct, ties=ties) == pytest.approx(expected, abs=1e-12)


def test_base_error_and_single_unit():
    assert prr_details([0.1, 0.2, 0.9, 0.8], [0, 0, 1, 1]).base_error == 0.5
    assert math.isnan(prr([0.88], [0]))  # generation-level reference (§6.5)
    assert math.isnan(prr([0.88], [1]))


@pytest.mark.parametrize("ties", ["paper", "average"])
@pytest.mark.parametrize("value", [0, 1])
def test_all_wrong_and_all_correct_are_nan(ties, value):
    rng = np.random.default_rng(value)
    for n in range(1, 61):
        for scores in (np.full(n, 0.5), rng.random(n), np.arange(n, dtype=float)):
            assert math.isnan(prr(scores, [value] * n, ties=ties)), (n, ties)
        _, per = prr_per_group(rng.random(n), [value] * n, np.zeros(n, dtype=int), ties=ties)
        assert math.isnan(per[0])


def test_grouped_prr_reference_example():
    scores = [0.9, 0.1, 0.5, 0.5, 0.5, 0.5]
    correct = [1, 0, 1, 1, 0, 0]
    groups = ["a", "a", "b", "b", "c", "c"]
    labels, values = prr_per_group(scores, correct, groups)
    assert labels.tolist() == ["a", "b", "c"]
    assert values[0] == pytest.approx(1.0) and math.isnan(values[1]) and math.isnan(values[2])
    assert prr_per_response(scores, correct, groups) == pytest.approx(1.0)
    assert prr_per_response(scores, correct, groups, group_weighting="size") == pytest.approx(1.0)
    assert math.isnan(prr_per_response([0.5, 0.5], [1, 1], [0, 1]))


def test_grouped_prr_weighting():
    # group 0: perfect (PRR 1, 2 units); group 1: reversed (PRR -1, 4 units).
    scores = [0.9, 0.1, 0.1, 0.2, 0.8, 0.9]
    correct = [1, 0, 1, 1, 0, 0]
    groups = [0, 0, 1, 1, 1, 1]
    _, values = prr_per_group(scores, correct, groups)
    np.testing.assert_allclose(values, [1.0, -1.0])
    assert prr_per_response(scores, correct, groups) == pytest.approx(0.0)
    assert prr_per_response(scores, correct, groups, group_weighting="size") == pytest.approx((2 - 4) / 6)
    with pytest.raises(ValueError, match="group_weighting must be one of"):
        prr_per_response(scores, correct, groups, group_weighting="weight")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scores": [], "correct": []}, "scores must not be empty"),
        ({"scores": [0.1], "correct": [1, 0]}, "length mismatch"),
        ({"scores": [float("inf")], "correct": [1]}, "scores must be finite, got inf"),
        ({"scores": [0.1], "correct": [0.5]}, r"correct must contain only 0/1 \(or bools\), got 0.5"),
        ({"scores": [0.1], "correct": [1], "ties": "random"}, "ties must be one of"),
        ({"scores": [0.1], "correct": [1], "atol": -1.0}, "atol must be finite and >= 0, got -1.0"),
    ],
)
def test_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        prr(**kwargs)


labels = st.lists(st.booleans(), min_size=1, max_size=60).map(lambda xs: [int(x) for x in xs])


@settings(derandomize=True, max_examples=100, deadline=None)
@given(labels, st.sampled_from(["paper", "average"]))
def test_oracle_scores_give_one(correct, ties):
    value = prr(correct, correct, ties=ties)  # scores = correctness: incorrect units rejected first
    if 0 < sum(correct) < len(correct):
        assert value == pytest.approx(1.0, abs=1e-12)
    else:
        assert math.isnan(value)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(labels, st.sampled_from(["paper", "average"]))
def test_reversed_oracle_gives_minus_one(correct, ties):
    """Rejecting every correct unit first is the mirror image of the oracle.

    With error rate b: A_oracle = b²/2 (error falls linearly to 0 over r ∈ [0, b]), A_random = b/2,
    and the reversed curve stays at b for r ∈ [0, 1-b] then falls to 0: A_rev = b(1-b) + b²/2.
    So AR_uns = b/2 - b + b²/2 = -b(1-b)/2 = -AR_orc and PRR = -1 (the grid is exact: curves are
    piecewise linear with kinks on grid points).
    """
    value = prr([-c for c in correct], correct, ties=ties)
    if 0 < sum(correct) < len(correct):
        assert value == pytest.approx(-1.0, abs=1e-12)
    else:
        assert math.isnan(value)


@settings(derandomize=True, max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=1, max_size=40))
def test_paper_mode_matches_plain_loop(data):
    scores = [s / 5 for s, _ in data]
    correct = [int(y) for _, y in data]
    want = _paper_prr_loop(correct, scores)
    got = prr(scores, correct, ties="paper")
    assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want, abs=1e-9)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=2, max_size=50), st.randoms())
def test_average_ties_invariant_to_unit_order(data, rnd):
    scores = np.array([s for s, _ in data], dtype=float)
    correct = np.array([int(y) for _, y in data])
    perm = np.array(rnd.sample(range(len(data)), len(data)))
    a = prr(scores, correct)
    b = prr(scores[perm], correct[perm])
    assert (math.isnan(a) and math.isnan(b)) or a == b  # bitwise: same sorted losses


@pytest.mark.parametrize("seed", range(12))
def test_average_ties_equals_mean_over_permutations(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    scores = rng.integers(0, 3, n).astype(float)
    correct = rng.integers(0, 2, n)
    if correct.min() == correct.max():
        correct[0] = 1 - correct[0]
    values = []
    for perm in itertools.permutations(range(n)):
        p = np.array(perm)
        values.append(prr(scores[p], correct[p], ties="paper"))
    assert prr(scores, correct) == pytest.approx(float(np.mean(values)), abs=1e-12)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.booleans(), st.integers(0, 4)), min_size=1, max_size=50),
    st.sampled_from(["paper", "average"]),
)
def test_closed_form_matches_trapezoid(data, ties):
    scores = np.array([s for s, _, _ in data], dtype=float)
    correct = np.array([int(y) for _, y, _ in data])
    groups = np.array([g for _, _, g in data])
    labels_, values = prr_per_group(scores, correct, groups, ties=ties)
    for label, value in zip(labels_, values):
        m = groups == label
        want = prr_details(scores[m], correct[m], ties=ties).prr  # trapezoid over the curves
        assert (math.isnan(want) and math.isnan(value)) or value == pytest.approx(want, abs=1e-9)
        pooled = prr(scores[m], correct[m], ties=ties)  # same closed form as the grouped kernel
        assert (math.isnan(value) and math.isnan(pooled)) or value == pooled


def test_rejection_curve_shapes_and_random_baseline():
    c = rejection_curve([0.9, 0.8, 0.1, 0.3], [1, 1, 0, 0])
    assert c.base_error == 0.5
    for curve in (c.model, c.oracle, c.random):
        assert curve.coverage.shape == (5,) and curve.coverage[0] == 1.0 and curve.coverage[-1] == 0.0
        assert math.isnan(curve.selective_risk[-1])
    np.testing.assert_allclose(c.random.overall_error, 0.5 * (1 - np.arange(5) / 4))
    np.testing.assert_allclose(c.model.overall_error, c.oracle.overall_error)
    np.testing.assert_allclose(c.model.selective_risk[:-1], [0.5, 1 / 3, 0.0, 0.0])
    assert c.random.order is None


# -- PRR = 2 AUROC - 1 on binary units (the identity in prr's docstring) ---------------------------------

_binary_units = st.integers(1, 60).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 6).map(lambda k: k / 6), min_size=n, max_size=n),  # coarse scores: many ties
        st.lists(st.booleans(), min_size=n, max_size=n),
    )
)


@settings(max_examples=300, deadline=None)
@given(_binary_units)
def test_pooled_prr_is_twice_auroc_minus_one(data):
    from saltbench.metrics import auroc

    scores, correct = data
    value, area = prr(scores, correct), auroc(scores, correct)
    if math.isnan(area):
        assert math.isnan(value)
    else:
        assert value == pytest.approx(2 * area - 1, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(_binary_units, st.integers(1, 5), st.randoms(use_true_random=False))
def test_per_response_prr_is_twice_per_response_auroc_minus_one(data, n_groups, rnd):
    from saltbench.metrics import auroc_per_response

    scores, correct = data
    groups = [rnd.randrange(n_groups) for _ in scores]
    value, area = prr_per_response(scores, correct, groups), auroc_per_response(scores, correct, groups)
    if math.isnan(area):
        assert math.isnan(value)
    else:
        assert value == pytest.approx(2 * area - 1, abs=1e-12)


def test_identity_fails_under_the_paper_tie_rule():
    from saltbench.metrics import auroc

    assert auroc([0.5, 0.5], [1, 0]) == 0.5
    assert prr([0.5, 0.5], [1, 0], ties="paper") == -1.0  # order-dependent: not 2 * 0.5 - 1


def test_aurc_is_not_a_function_of_auroc():
    """Two rankings with the same AUROC (0.5) and base rate but different AURC: the rejection aspect
    measured by AURC carries information the ranking aspect does not."""
    from saltbench.metrics import aurc, auroc

    scores = [0.9, 0.7, 0.5, 0.3]
    first, second = [0, 1, 1, 0], [1, 0, 0, 1]  # correctness of the units, most confident first
    assert auroc(scores, first) == auroc(scores, second) == 0.5
    assert prr(scores, first) == prr(scores, second) == 0.0
    assert aurc(scores, first) == pytest.approx((1 + 1 / 2 + 1 / 3 + 2 / 4) / 4)
    assert aurc(scores, second) == pytest.approx((0 + 1 / 2 + 2 / 3 + 2 / 4) / 4)
