"""The one-unit path (floats) against the batch path (arrays) of saltbench.confidence.

``unit_confidence`` and ``token_signals`` + ``unit_confidences`` implement docs/confidence.md §2 twice
(per token on Python floats, vectorised over rows) and share the §4.1 formulas; these properties keep the
two in step, for every function, both flavours and the edge cases of §2.1 (no log-probabilities, NaN
alternatives, sentinels, -inf, truncation to ``top_k``, a single entry).
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.confidence import PAPER_CONFIDENCE_NAMES as CONFIDENCE_NAMES
from saltbench.confidence import token_signals, unit_confidence, unit_confidences
from saltbench.confidence._paper import _confidence_values, _selection_network

LOGPROB = st.one_of(  # log-probabilities: <= 0 (docs/confidence.md §1.3), -inf and NaN included
    st.floats(-60.0, 0.0),
    st.sampled_from([0.0, -0.0, -math.inf, math.nan, -5000.0, -1000.0, -1000.5, -1e10, -745.5]),
)
VECTOR = st.one_of(st.none(), st.lists(LOGPROB, max_size=30))
TOP_K = st.sampled_from([1, 2, 3, 7, 20, 24])


def _batch_inputs(vectors: list[list[float] | None]) -> tuple[np.ndarray, np.ndarray]:
    """``token_signals`` inputs of ragged vectors: chosen (NaN = none) and NaN-padded alternatives."""
    width = max((len(v) - 1 for v in vectors if v), default=0)
    chosen = np.full(len(vectors), np.nan)
    others = np.full((len(vectors), width), np.nan)
    for i, vector in enumerate(vectors):
        if vector:
            chosen[i] = vector[0]
            others[i, : len(vector) - 1] = vector[1:]
    return chosen, others


def _batch_unit(log_p: np.ndarray, entropy: np.ndarray) -> dict[str, float]:
    n = log_p.size
    out = unit_confidences(log_p, entropy, np.arange(n), np.zeros(n, dtype=np.intp), 1)
    return {name: float(values[0]) for name, values in out.items()}


def _assert_same(single: dict[str, float | int], batch: dict[str, float]) -> None:
    assert list(single) == [*CONFIDENCE_NAMES, "num_tokens"]
    assert type(single["num_tokens"]) is int and single["num_tokens"] == batch["num_tokens"]
    for name in CONFIDENCE_NAMES:
        got, want = single[name], batch[name]
        assert type(got) is float, name
        if math.isnan(want):
            assert math.isnan(got), name
        else:
            assert got == pytest.approx(want, rel=1e-12, abs=1e-12), name


@settings(derandomize=True, max_examples=400, deadline=None)
@given(vectors=st.lists(VECTOR, min_size=1, max_size=8), top_k=TOP_K)
def test_topk_one_unit_equals_batch(vectors, top_k):
    chosen, others = _batch_inputs(vectors)
    log_p, entropy = token_signals(chosen, others, top_k=top_k)
    _assert_same(unit_confidence(vectors, top_k=top_k), _batch_unit(log_p, entropy))


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    tokens=st.lists(
        st.tuples(
            st.lists(LOGPROB.filter(lambda x: not math.isnan(x)), min_size=1, max_size=5),
            st.one_of(st.floats(0.0, 12.0), st.just(math.nan)),
        ),
        min_size=1,
        max_size=8,
    ),
    eps=st.sampled_from([1e-20, 1e-6, 0.5]),
)
def test_full_one_unit_equals_batch(tokens, eps):
    vectors = [vector for vector, _ in tokens]
    entropy = [h for _, h in tokens]
    log_p, h = token_signals([v[0] for v in vectors], None, entropy, "full", eps=eps)
    _assert_same(unit_confidence(vectors, "full", full_entropy=entropy, eps=eps), _batch_unit(log_p, h))


@settings(derandomize=True, max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.floats(-30.0, 0.0), st.lists(st.one_of(st.floats(-30.0, 0.0), st.just(math.nan)), min_size=1)
        ),
        min_size=1,
        max_size=6,
    ),
    data=st.data(),
)
def test_chosen_in_topk_mask_equals_dropping_the_entry(rows, data):
    """The batch path's ``chosen_in_topk`` mask drops entries; the one-unit vector simply omits them."""
    width = max(len(alternatives) for _, alternatives in rows)
    chosen = np.array([c for c, _ in rows])
    others = np.full((len(rows), width), np.nan, dtype=np.float32)
    mask = np.zeros(others.shape, dtype=bool)
    vectors = []
    for i, (c, alternatives) in enumerate(rows):
        others[i, : len(alternatives)] = alternatives
        drop = data.draw(st.sets(st.integers(0, len(alternatives) - 1), max_size=2))
        mask[i, list(drop)] = True
        kept = [float(x) for j, x in enumerate(others[i, : len(alternatives)]) if j not in drop]
        vectors.append([c, *kept])
    log_p, entropy = token_signals(chosen, others, chosen_in_topk=mask)
    _assert_same(unit_confidence(vectors), _batch_unit(log_p, entropy))


def test_worked_edge_cases_agree():
    """docs/confidence.md §2.1 edge cases, each alone and all in one unit."""
    cases = [
        [None],
        [[]],
        [[math.nan, -1.0]],
        [[-7.5]],
        [[-math.inf]],
        [[-math.inf, -math.inf]],
        [[-math.inf, -1.0, math.nan, -2.0]],
        [[-9999.0, 0.0]],
        [[0.0, -1e10, -1e10]],
        [[-0.5] + [-3.0 - i for i in range(19)] + [-0.1] * 6],
    ]
    for vectors in [*cases, [v for case in cases for v in case]]:
        log_p, entropy = token_signals(*_batch_inputs(vectors))
        _assert_same(unit_confidence(vectors), _batch_unit(log_p, entropy))
    assert unit_confidence([[-7.5]])["mean_entropy"] == 0.0


def test_non_float_vectors_are_converted():
    values = [-0.25, -1.5, -3.0, -7.0]
    want = unit_confidence([values, values[:2]])
    assert unit_confidence([np.array(values), tuple(values[:2])]) == want
    assert unit_confidence([[np.float64(x) for x in values], values[:2]]) == want
    low = np.array(values, dtype=np.float32)  # float32 entries: computed in float64, not float32
    assert unit_confidence([list(low)]) == unit_confidence([[float(x) for x in low]])
    assert unit_confidence([[0, -1], [-1, -2]]) == unit_confidence([[0.0, -1.0], [-1.0, -2.0]])


@pytest.mark.parametrize("bad", [0.7, math.inf, 1e-4])
def test_positive_or_infinite_logprobs_are_refused_on_both_paths(bad):
    with pytest.raises(
        ValueError, match=rf"token_logprob_vectors\[1\]\[2\] must be a log-probability .*got {bad!r}"
    ):
        unit_confidence([[-1.0], [-0.5, -1.0, bad]])
    with pytest.raises(
        ValueError, match=rf"topk_logprobs must be log-probabilities .*got {bad!r} at \[1, 1\]"
    ):
        token_signals([-1.0, -0.5], [[-2.0, math.nan], [-1.0, bad]])
    with pytest.raises(ValueError, match=rf"chosen_logprob must be log-probabilities .*got {bad!r} at \[0\]"):
        token_signals([bad], None, [0.5], "full")
    assert unit_confidence([[5e-6, -1.0]])["num_tokens"] == 1  # float32 rounding past 0 is tolerated


def test_negative_entropy_is_refused():
    with pytest.raises(
        ValueError, match=r"full_entropy must be finite or NaN \(not recorded\) and >= 0, got -0.5"
    ):
        unit_confidence([[0.0], [0.0]], "full", full_entropy=[math.nan, -0.5])
    with pytest.raises(ValueError, match=r"full_entropy .* >= 0, got -0.5 at \[1\]"):
        token_signals([-1.0, -1.0], None, [0.1, -0.5], "full")


@pytest.mark.parametrize(
    ("vectors", "error", "message"),
    [
        (
            ["ab", "cd"],
            TypeError,
            "token_logprob_vectors[0] must be None or a sequence of log-probabilities, got str 'ab'",
        ),
        (
            [-0.5, -1.0],
            TypeError,
            "got float -0.5; one log-probability per token is written [[-0.5], [-1.0]]",
        ),
        ([[-0.5, "x"]], TypeError, "token_logprob_vectors[0][1] must be a number, got str 'x'"),
        ([[True]], TypeError, "token_logprob_vectors[0][0] must be a number, got bool True"),
        (
            "abc",
            TypeError,
            "token_logprob_vectors must be a sequence with one entry per token, got str 'abc'",
        ),
    ],
)
def test_unit_confidence_names_the_entry_of_the_wrong_type(vectors, error, message):
    with pytest.raises(error, match=re.escape(message)):
        unit_confidence(vectors)


def test_full_flavour_validation():
    with pytest.raises(ValueError, match="needs a log-probability for every token"):
        unit_confidence([[math.nan]], "full", full_entropy=[1.0])
    with pytest.raises(ValueError, match=r"full_entropy must have shape \(2,\), got \(1,\)"):
        unit_confidence([[0.0], [0.0]], "full", full_entropy=[1.0])
    with pytest.raises(ValueError, match=r"full_entropy must have shape \(1,\), got \(1, 1\)"):
        unit_confidence([[0.0]], "full", full_entropy=[[1.0]])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="full_entropy must be finite or NaN"):
        unit_confidence([[0.0], [0.0]], "full", full_entropy=[math.nan, -math.inf])
    with pytest.raises(ValueError, match=r"top_k must be a positive integer, got True"):
        unit_confidence([[0.0]], "full", full_entropy=[1.0], top_k=True)
    nan_entropy = unit_confidence([[-1.0], [-2.0]], "full", full_entropy=[math.nan, 1.0])
    assert math.isnan(nan_entropy["max_entropy"]) and math.isnan(nan_entropy["mean_entropy"])
    assert nan_entropy["max_probability"] == pytest.approx(math.exp(-1.0))


def test_confidence_values_follow_the_paper_order():
    values = _confidence_values(2.0, 1.0, -1.0, 3.0, -0.25, 2.0, (-0.75, -0.25), math.exp)
    assert list(values) == list(CONFIDENCE_NAMES)
    assert values["median_probability"] == (math.exp(-0.75) + math.exp(-0.25)) / 2
    assert values["perplexity"] == math.exp(0.5) and values["log_perplexity"] == 0.5


@pytest.mark.parametrize("length", range(1, 17))
def test_selection_network_zero_one_principle(length):
    """A comparator network selects order statistics of every input iff it does of every 0/1 input."""
    inputs = np.array(list(itertools.product((0.0, 1.0), repeat=length))).T  # (length, 2^length)
    wires = list(inputs)
    for i, j, keep_min, keep_max in _selection_network(length):
        a, b = wires[i], wires[j]
        if keep_min:
            wires[i] = np.minimum(a, b)
        if keep_max:
            wires[j] = np.maximum(a, b)
    ordered = np.sort(inputs, axis=0)
    for k in {(length - 1) // 2, length // 2, length - 1}:
        np.testing.assert_array_equal(wires[k], ordered[k])


@settings(derandomize=True, max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=8),
    seed=st.integers(0, 2**16),
    nan_log_p=st.booleans(),
    nan_entropy=st.booleans(),
)
def test_aggregation_is_exact(sizes, seed, nan_log_p, nan_entropy):
    """Sums in pair order (as ``np.bincount`` adds), exact maxima and medians, NaN propagation, for units
    of every length (the selection network up to 16 tokens, a sort beyond)."""
    rng = np.random.default_rng(seed)
    n_tokens = 30
    log_p = np.log(rng.random(n_tokens) * 0.98 + 0.01)
    entropy = rng.random(n_tokens) * 3
    if nan_log_p:
        log_p[rng.integers(n_tokens)] = np.nan
    if nan_entropy:
        entropy[rng.integers(n_tokens)] = np.nan
    unit = np.repeat(np.arange(len(sizes)), sizes)
    tok = rng.integers(0, n_tokens, unit.size)
    perm = rng.permutation(unit.size)
    tok, unit = tok[perm], unit[perm]
    got = unit_confidences(log_p, entropy, tok, unit, len(sizes))
    for u, size in enumerate(sizes):
        assert got["num_tokens"][u] == size
        lp, h = log_p[tok[unit == u]], entropy[tok[unit == u]]
        if size == 0 or np.isnan(lp).any():
            for name in CONFIDENCE_NAMES[:7]:
                assert math.isnan(got[name][u]), name
        else:
            total = 0.0
            for x in lp:  # pair order
                total += x
            assert got["log_probability_sum"][u] == total
            assert got["max_log_probability"][u] == lp.max()
            ordered = np.sort(lp)
            median = (np.exp(ordered[(size - 1) // 2]) + np.exp(ordered[size // 2])) / 2
            assert got["median_probability"][u] == median
            assert got["median_probability"][u] == pytest.approx(np.median(np.exp(lp)), rel=1e-12)
        if size == 0 or np.isnan(h).any():
            assert math.isnan(got["max_entropy"][u]) and math.isnan(got["mean_entropy"][u])
        else:
            assert got["max_entropy"][u] == h.max()
            assert got["mean_entropy"][u] == pytest.approx(h.mean(), rel=1e-12)
