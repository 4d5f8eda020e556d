"""``evaluate_many`` / ``summarize_units`` agree with ``evaluate`` row by row and metric by metric."""

from __future__ import annotations

import polars as pl
import pytest
from helpers.evaluation_helpers import assert_batch_equals_single, stored, task
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.core.vocabulary import ALIGNMENTS, GRANULARITIES
from saltbench.evaluation import METRIC_KEYS, UNITS_SCHEMA, evaluate, evaluate_many, summarize_units

DNA = task("dna")
PIECES = [
    "********",
    "****",
    "*",
    "\n",
    " ",
    ",",
    "[",
    "]",
    "TCT",
    "CGA",
    "DK",
    "5",
    "[1, 2]",
    "p1: True",
    "end",
    "\r\n",
    "\r",
    "\ud800",
    "\udfff",
]
text = st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=25).map("".join)
TASKS = [task("dna"), task("logic"), task("code", "two_sum"), task("code", "rotate_matrix")]


def test_frame_layout_for_a_worked_example():
    frame = evaluate_many(
        ["scratch\n********\nTCT AAA\n********", "A B C"],
        ["TCT CGA", "A B"],
        DNA,
        granularities=("atom", "line"),
    )
    assert frame.schema == pl.Schema(UNITS_SCHEMA)
    atoms = frame.filter(pl.col("granularity") == "atom")
    assert atoms.select(
        "sample_idx", "unit_index", "status", "response_unit", "span_start", "span_end"
    ).rows() == [
        (0, 0, "correct", "TCT", 17, 20),
        (0, 1, "incorrect", "AAA", 21, 24),
        (1, 0, "correct", "A", 0, 1),
        (1, 1, "correct", "B", 2, 3),
        (1, 2, "redundant", "C", 4, 5),
    ]
    assert frame.filter(pl.col("granularity") == "line")["status"].to_list() == ["incorrect", "incorrect"]
    assert frame["is_correct"].to_list() == [s == "correct" for s in frame["status"].to_list()]


def test_missing_units_have_null_spans():
    frame = evaluate_many(["TCT"], ["TCT CGA"], DNA, granularities="atom")
    assert frame.select("status", "response_unit", "span_start").rows() == [
        ("correct", "TCT", 0),
        ("missing", None, None),
    ]


def test_length_mismatch_and_bad_modes_raise():
    with pytest.raises(ValueError, match="same length"):
        evaluate_many(["a"], [], DNA)
    with pytest.raises(ValueError, match="granularity"):
        evaluate_many(["a"], ["a"], DNA, granularities=("atom", "token"))
    with pytest.raises(ValueError, match="alignment"):
        evaluate_many(["a"], ["a"], DNA, alignment="global")


def test_empty_batch():
    frame = evaluate_many([], [], DNA)
    assert frame.height == 0 and frame.schema == pl.Schema(UNITS_SCHEMA)
    assert summarize_units(frame).height == 0


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(st.tuples(text, text), max_size=6),
    which=st.integers(0, len(TASKS) - 1),
    alignment=st.sampled_from(ALIGNMENTS),
)
def test_batch_equals_single_evaluations(pairs, which, alignment):
    t = TASKS[which]
    responses = [r for r, _ in pairs]
    references = [g for _, g in pairs]
    frame = evaluate_many(responses, references, t, alignment=alignment)
    assert_batch_equals_single(frame, responses, references, t, alignment, METRIC_KEYS)


def test_summary_counts_internal_missing_in_dynamic_mode():
    frame = evaluate_many(
        ["4 5 7", "TCT CGA TTC"],
        ["5 4 5 7", "TCT CGA TTC CGG"],
        DNA,
        granularities="atom",
        alignment="dynamic",
    )
    summary = summarize_units(frame, dynamic_alignment=True)
    assert summary.select(
        "sample_idx", "num_internal_missing", "num_precision_units", "precision"
    ).rows() == [
        (0, 1, 4, 0.75),
        (1, 0, 3, 1.0),
    ]


# -- surrogate code points (no UTF-8 encoding) --------------------------------------------------------
SURROGATE_CASES = [
    ("\ud800", "TCT"),
    ("\ud800 TCT", "TCT"),
    ("TCT \ud800", "TCT \ud800"),  # equal surrogates compare equal, as in evaluate
    ("TCT \udc00", "TCT \ud800"),  # different surrogates stay different (not both U+FFFD)
    ("x \udfff\n********\nTCT \ud800\r\nDK\n********", "TCT \ud800\nCGA"),
    ("\ud83d\ude42 [1, \ud800]", "[1, 2]"),  # a surrogate pair written as two code points
]


@pytest.mark.parametrize("which", range(len(TASKS)))
@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_surrogates_get_the_statuses_and_metrics_of_evaluate(which, alignment):
    t = TASKS[which]
    responses = [r for r, _ in SURROGATE_CASES]
    references = [g for _, g in SURROGATE_CASES]
    frame = evaluate_many(responses, references, t, alignment=alignment)
    summary = summarize_units(frame, dynamic_alignment=alignment == "dynamic")
    for i, (response, reference) in enumerate(SURROGATE_CASES):
        for g in GRANULARITIES:
            ev = evaluate(response, reference, t, granularity=g, alignment=alignment)
            rows = frame.filter((pl.col("sample_idx") == i) & (pl.col("granularity") == g))
            assert rows["status"].to_list() == [c.status for c in ev.comparisons]
            spans = [
                ev.response_unit_spans[c.response_index] if c.response_index is not None else (None, None)
                for c in ev.comparisons
            ]
            assert rows.select("span_start", "span_end").rows() == spans

            assert rows["response_unit"].to_list() == [stored(c.response_unit) for c in ev.comparisons]
            assert rows["reference_unit"].to_list() == [stored(c.reference_unit) for c in ev.comparisons]
            metrics = summary.filter((pl.col("sample_idx") == i) & (pl.col("granularity") == g))
            if ev.comparisons:
                assert metrics.select(METRIC_KEYS).row(0, named=True) == pytest.approx(ev.metrics)


def test_surrogate_example():
    frame = evaluate_many(["TCT \udc00 \ud800"], ["TCT \ud800 \ud800"], DNA, granularities="atom")
    assert frame.select("status", "response_unit", "reference_unit", "span_start").rows() == [
        ("correct", "TCT", "TCT", 0),
        ("incorrect", "\ufffd", "\ufffd", 4),
        ("correct", "\ufffd", "\ufffd", 6),
    ]


@pytest.mark.parametrize("reference", [None, 3, b"AGA"])
def test_a_reference_that_is_not_a_string_is_a_type_error(reference):
    """A missing reference is a caller's error, not an empty answer scoring precision 0."""
    with pytest.raises(TypeError, match=rf"reference must be a string, got {type(reference).__name__}"):
        evaluate("AGA GCT", reference, "dna")
    with pytest.raises(TypeError, match="reference must be a string"):
        evaluate_many(["AGA GCT"], [reference], "dna")
