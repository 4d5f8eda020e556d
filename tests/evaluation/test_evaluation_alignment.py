"""Dynamic alignment: every example of docs/evaluation.md §6, the vectorised DP and its compact traceback
against a plain loop, and a 1 MB response with bounded memory."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import polars as pl
import pytest
from helpers.evaluation_helpers import naive_alignment, task
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import saltbench.evaluation._alignment as alignment_module
from saltbench.evaluation import align_units, dynamic_pairs, evaluate, evaluate_many, summarize_units
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
    [
        ({"match_score": 0}, "match_score"),
        ({"mismatch_penalty": -1}, "mismatch_penalty"),
        ({"gap_penalty": -0.5}, "gap_penalty"),
    ],
)
def test_bad_scores_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        align_units(["A"], ["A"], DNA, **kwargs)


units = st.lists(st.sampled_from(["A", "B", "C", "DK"]), max_size=9)


@settings(max_examples=300, deadline=None)
@given(
    resp=units,
    ref=st.none() | units,
    scores=st.sampled_from([(2, 1, 1), (1, 0, 0), (3, 2, 1), (1.5, 0.5, 0.25), (2, 1, 0)]),
)
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


# -- exactness of the compact traceback (bit planes, chunks, checkpointed blocks, score scaling) ------
@pytest.fixture
def force_sizes(monkeypatch):
    """``force(block, chunk, n_resp, packed)``: blocks of ``block`` rows, filled ``chunk`` rows at a time,
    planes packed 8 cells per byte or kept as booleans."""

    def force(block, chunk, n_resp, packed):
        monkeypatch.setattr(alignment_module, "_block_rows", lambda n_ref, n: block)
        monkeypatch.setattr(alignment_module, "WORK_BUDGET", (3 * n_resp + 1) * chunk)
        monkeypatch.setattr(alignment_module, "UNPACKED_CELLS", 0 if packed else 2**20)
        monkeypatch.setattr(alignment_module, "BATCH_CELLS", 0)  # every problem on its own
        monkeypatch.setattr(alignment_module, "TINY_CELLS", 0)

    return force


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    resp=st.lists(st.sampled_from(["A", "B", "C", "DK"]), max_size=14),
    ref=st.lists(st.sampled_from(["A", "B", "C"]), max_size=14),
    block=st.integers(1, 5),
    chunk=st.integers(1, 3),
    packed=st.booleans(),
    scores=st.sampled_from([(2, 1, 1), (1, 0, 0), (3, 2, 1), (1.5, 0.5, 0.25), (0.3, 0.1, 0.2)]),
)
def test_blocks_and_chunks_equal_plain_loop(force_sizes, resp, ref, block, chunk, packed, scores):
    """Any block size (the traceback recomputes each block from its checkpoint) and any chunk size give
    the textbook path; ``(0.3, 0.1, 0.2)`` has no exact integer form and takes the float rows."""
    force_sizes(block, chunk, len(resp), packed)
    expected, _ = naive_alignment(resp, ref, *scores)
    assert list(zip(*dynamic_pairs(resp, [u == "DK" for u in resp], ref, *scores))) == expected


def test_block_size_follows_the_budget(monkeypatch):
    assert alignment_module._block_rows(260, 500_000) == 260  # 33 MB of planes: one block
    monkeypatch.setattr(alignment_module, "DIRECTION_BUDGET", 1000)
    assert alignment_module._block_rows(200, 3000) == 80  # ceil(sqrt(32 * 200)) rows per block
    rng = np.random.default_rng(0)
    resp = rng.choice(list("ABCD"), 3000).tolist()
    ref = rng.choice(list("ABCD"), 200).tolist()
    blocked = dynamic_pairs(resp, [False] * 3000, ref)
    monkeypatch.setattr(alignment_module, "DIRECTION_BUDGET", 2**40)
    assert blocked == dynamic_pairs(resp, [False] * 3000, ref)


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ((2, 1, 1), ((2, 1, 1), 1)),
        ((1.5, 0.5, 0.25), ((6, 2, 1), 4)),
        ((2, 1, 0), ((2, 1, 0), 1)),
        ((0.1, 1, 1), None),
        ((float("inf"), 1, 1), None),
        ((2**52, 1, 1), None),
    ],
)
def test_integer_scores(scores, expected):
    assert alignment_module.integer_scores(*scores, n_steps=10) == expected


# -- a 1 MB response: exact result, bounded memory --------------------------------------------------
def _traced_peak(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


MEMORY_CAP = 500 * 2**20


@pytest.mark.slow
def test_one_megabyte_response_against_kronecker_reference():
    """500,000 units "1" against a 260-unit reference without a "1": the old full int64 table needed
    3.2 GB (traced); the bit planes need 33 MB. The optimum pairs every reference unit diagonally with a
    mismatch (-1 each, cheaper than two gaps) and the traceback from the end takes the diagonal first,
    so the last 260 response units are incorrect and the others redundant."""
    kron = task("kronecker")
    reference = kron.generate(1, seed=0)["reference"][0]
    n_ref = len(reference.split())
    assert "1" not in reference.split()
    response = "1 " * 500_000
    assert len(response) == 1_000_000
    ev, peak = _traced_peak(lambda: evaluate(response, reference, kron, alignment="dynamic"))
    assert peak < MEMORY_CAP, f"traced peak {peak / 2**20:.0f} MB"
    n_resp = 500_000
    assert statuses(ev) == ["redundant"] * (n_resp - n_ref) + ["incorrect"] * n_ref
    assert [c.response_index for c in ev.comparisons] == list(range(n_resp))
    assert [c.reference_index for c in ev.comparisons[-n_ref:]] == list(range(n_ref))
    m = ev.metrics
    assert (m["num_correct"], m["num_redundant"], m["num_missing"]) == (0, n_resp - n_ref, 0)
    assert m["precision"] == m["recall"] == 0
    assert ev.response_unit_spans[-1] == (999_998, 999_999)


@pytest.mark.slow
def test_one_megabyte_response_containing_the_dna_reference():
    """The DNA reference inside 1 MB of noise (``evaluate_many``): every reference unit is found."""
    reference = DNA.generate(1, seed=0)["reference"][0]
    codons = reference.split()
    pad = "1 " * 249_900
    response = pad + reference + " " + pad
    frame, peak = _traced_peak(
        lambda: evaluate_many([response], [reference], DNA, granularities="atom", alignment="dynamic")
    )
    assert peak < MEMORY_CAP, f"traced peak {peak / 2**20:.0f} MB"
    summary = summarize_units(frame, dynamic_alignment=True).row(0, named=True)
    assert summary["num_correct"] == summary["num_reference_units"] == len(codons)
    assert len(response) > 999_000
    assert summary["recall"] == 1.0 and summary["num_redundant"] == 2 * 249_900
    correct = frame.filter(pl.col("status") == "correct")
    assert correct["span_start"].to_list()[0] == len(pad)
    assert [response[a:b] for a, b in correct.select("span_start", "span_end").rows()] == codons
