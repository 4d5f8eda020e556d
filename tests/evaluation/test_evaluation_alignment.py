"""Dynamic alignment: every example of SALT_FACTS §4.6, and the vectorised DP against a plain loop."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from evaluation_helpers import task
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.evaluation import align_units, dynamic_pairs, evaluate
from saltbench.evaluation._alignment import score_table

DNA = task("dna")


def statuses(ev):
    return [c.status for c in ev.comparisons]


@pytest.mark.parametrize(
    ("response", "reference", "pairs"),
    [
        (["4", "5", "7"], ["5", "4", "5", "7"], [(None, "5"), ("4", "4"), ("5", "5"), ("7", "7")]),
        (["A", "X", "C"], ["A", "B", "C"], [("A", "A"), ("X", "B"), ("C", "C")]),
        (["A", "B"], ["B", "A"], [("A", None), ("B", "B"), (None, "A")]),
        (["A", "A"], ["A"], [("A", None), ("A", "A")]),
        (["X", "Y", "A"], ["A", "B", "C"], [("X", None), ("Y", None), ("A", "A"), (None, "B"), (None, "C")]),
        (["A", "DK", "C"], ["A", "B", "C"], [("A", "A"), ("DK", "B"), ("C", "C")]),
        ([], ["A", "B"], [(None, "A"), (None, "B")]),
        (["A", "B"], [], [("A", None), ("B", None)]),
        ([], [], []),
    ],
)
def test_alignment_examples(response, reference, pairs):
    assert align_units(response, reference, DNA) == pairs


def test_internal_missing_enters_the_precision_denominator():
    strict = evaluate("4 5 7", "5 4 5 7", DNA)
    assert statuses(strict) == ["incorrect", "incorrect", "incorrect", "missing"]
    assert strict.metrics["recall"] == 0
    dyn = evaluate("4 5 7", "5 4 5 7", DNA, alignment="dynamic")
    assert statuses(dyn) == ["missing", "correct", "correct", "correct"]
    m = dyn.metrics
    assert m["precision"] == m["recall"] == 3 / 4
    assert m["num_internal_missing"] == 1 and m["num_precision_units"] == 4
    assert m["dynamic_alignment"] is True


def test_trailing_missing_is_not_internal():
    m = evaluate("TCT CGA TTC", "TCT CGA TTC CGG", DNA, alignment="dynamic").metrics
    assert m["precision"] == 1.0 and m["recall"] == 3 / 4
    assert m["num_internal_missing"] == 0 and m["num_precision_units"] == 3


def test_leading_omission_strict_versus_dynamic():
    assert evaluate("CGA TTC CGG", "TCT CGA TTC CGG", DNA).metrics["precision"] == 0
    dyn = evaluate("CGA TTC CGG", "TCT CGA TTC CGG", DNA, alignment="dynamic")
    assert statuses(dyn) == ["missing", "correct", "correct", "correct"]
    assert dyn.metrics["precision"] == 3 / 4


def test_redundant_then_missing():
    dyn = evaluate("AAA GGG TCT", "TCT CGA", DNA, alignment="dynamic")
    assert statuses(dyn) == ["redundant", "redundant", "correct", "missing"]
    assert dyn.metrics["precision"] == pytest.approx(1 / 3) and dyn.metrics["num_internal_missing"] == 0


def test_dk_aligned_diagonally_is_selective():
    dyn = evaluate("A DK C", "A B C", DNA, alignment="dynamic")
    assert statuses(dyn) == ["correct", "selective", "correct"]


def test_dk_never_matches_even_a_dk_reference():
    assert statuses(evaluate("DK", "DK", DNA, alignment="dynamic")) == ["selective"]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"match_score": 0}, "match_score"), ({"mismatch_penalty": -1}, "mismatch_penalty"), ({"gap_penalty": -0.5}, "gap_penalty")],
)
def test_bad_scores_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        align_units(["A"], ["A"], DNA, **kwargs)


def naive_alignment(resp, ref, ms=2, mp=1, gp=1):
    """Textbook Needleman–Wunsch with explicit move records (ties: diagonal > up > left)."""
    G, R = len(ref), len(resp)
    S = [[0.0] * (R + 1) for _ in range(G + 1)]
    move = [[""] * (R + 1) for _ in range(G + 1)]
    for j in range(1, R + 1):
        S[0][j], move[0][j] = -gp * j, "left"
    for i in range(1, G + 1):
        S[i][0], move[i][0] = -gp * i, "up"
        for j in range(1, R + 1):
            hit = resp[j - 1] == ref[i - 1] and resp[j - 1] != "DK"
            options = [
                (S[i - 1][j - 1] + (ms if hit else -mp), "diag"),
                (S[i - 1][j] - gp, "up"),
                (S[i][j - 1] - gp, "left"),
            ]
            best = max(v for v, _ in options)
            S[i][j], move[i][j] = next((v, m) for v, m in options if v == best)
    pairs = []
    i, j = G, R
    while i or j:
        m = move[i][j]
        if m == "diag":
            i, j = i - 1, j - 1
            pairs.append((j, i))
        elif m == "up":
            i -= 1
            pairs.append((-1, i))
        else:
            j -= 1
            pairs.append((j, -1))
    return pairs[::-1], S


units = st.lists(st.sampled_from(["A", "B", "C", "DK"]), max_size=9)


@settings(max_examples=300, deadline=None)
@given(resp=units, ref=st.none() | units,
       scores=st.sampled_from([(2, 1, 1), (1, 0, 0), (3, 2, 1), (1.5, 0.5, 0.25), (2, 1, 0)]))
def test_vectorised_dp_equals_plain_loop(resp, ref, scores):
    ref = list(resp) if ref is None else ref  # identical sequences take a shortcut
    expected, table = naive_alignment(resp, ref, *scores)
    got = dynamic_pairs(resp, [u == "DK" for u in resp], ref, *scores)
    assert list(zip(*got)) == expected
    if resp and ref:
        matches = np.array([[r == x and x != "DK" for x in resp] for r in ref])
        np.testing.assert_array_equal(score_table(matches, *scores), np.array(table))


def test_every_alignment_covers_both_sequences_in_order():
    for resp, ref in itertools.product(itertools.product("AB", repeat=3), itertools.product("AB", repeat=2)):
        ridx, gidx = dynamic_pairs(list(resp), [False] * 3, list(ref))
        assert [i for i in ridx if i >= 0] == [0, 1, 2]
        assert [i for i in gidx if i >= 0] == [0, 1]
        assert all(a >= 0 or b >= 0 for a, b in zip(ridx, gidx))
