"""Property tests: robustness on arbitrary text, self-scoring references, span faithfulness, and the fast
single-character split against a literal reading of docs/evaluation.md §3 (lines: universal newlines)."""

from __future__ import annotations

import re

import pytest
from helpers.evaluation_helpers import rule, task
from hypothesis import given, settings
from hypothesis import strategies as st

import saltbench.evaluation._units as units_module
from saltbench.core.vocabulary import ALIGNMENTS, GRANULARITIES, STATUSES
from saltbench.evaluation import METRIC_KEYS, decompose, evaluate

TASKS = {
    "dna": task("dna"),
    "logic": task("logic"),
    "matmul": task("matmul"),
    "kronecker": task("kronecker"),
    "words": task("words", "colors"),
    "two_sum": task("code", "two_sum"),
    "edit_distance": task("code", "edit_distance"),
    "rotate_matrix": task("code", "rotate_matrix"),
    "insert_interval": task("code", "insert_interval"),
    "reverse_words": task("code", "reverse_words"),
}

PIECES = [
    "********",
    "****",
    "*********",
    "***",
    "*",
    "**",
    "\n",
    " ",
    "  ",
    "\t",
    "\r\n",
    ",",
    ", ",
    "[",
    "]",
    "TCT",
    "CGA",
    "DK",
    "<dk>",
    "DK>",
    "p1: True",
    "p12:False",
    "5",
    "-3.5",
    "[1, 2]",
    "[3,4]",
    "red",
    "answer",
    "end",
    "\u00a0",
    "\u2028",
    "\x1c",
    "é",
    "漢字",
    "🙂",
    "\x00",
    "\r",
    "\r\r\n",
    "\ud800",
]
messy_text = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=40).map("".join)
any_text = st.one_of(st.text(), messy_text, st.just(""), st.text(alphabet="*", max_size=30))
FAST = settings(max_examples=150, deadline=None)


@FAST
@given(
    response=any_text,
    reference=any_text,
    name=st.sampled_from(sorted(TASKS)),
    granularity=st.sampled_from(GRANULARITIES),
    alignment=st.sampled_from(ALIGNMENTS),
    keyword_filter=st.booleans(),
    require_fence=st.booleans(),
)
def test_never_raises_and_statuses_are_valid(
    response, reference, name, granularity, alignment, keyword_filter, require_fence
):
    ev = evaluate(
        response,
        reference,
        TASKS[name],
        granularity=granularity,
        alignment=alignment,
        keyword_filter=keyword_filter,
        require_fence=require_fence,
    )
    assert {c.status for c in ev.comparisons} <= set(STATUSES)
    m = ev.metrics
    assert list(m) == list(METRIC_KEYS)
    n_resp, n_ref = len(ev.response_units), len(ev.reference_units)
    assert m["num_response_units"] == n_resp and m["num_reference_units"] == n_ref
    assert [c.response_unit for c in ev.comparisons if c.response_unit is not None] == list(ev.response_units)
    assert [c.reference_unit for c in ev.comparisons if c.reference_unit is not None] == list(
        ev.reference_units
    )
    if alignment == "strict":
        assert len(ev.comparisons) == max(n_resp, n_ref) and m["num_internal_missing"] == 0
    for key in ("precision", "recall", "slot_coverage", "hallucination_score"):
        assert m[key] >= 0
    assert m["precision"] <= 1 and m["recall"] <= 1
    assert m["num_correct"] + m["num_redundant"] + m["num_selective"] + m["num_missing"] <= len(
        ev.comparisons
    )
    if ev.fence_start >= 0:
        assert response[ev.fence_start : ev.fence_end] == ev.fenced_response


def test_huge_and_degenerate_inputs():
    dna = TASKS["dna"]
    huge = "TCT " * 50_000
    ev = evaluate(f"********\n{huge}\n********", huge, dna)
    assert ev.metrics["precision"] == 1.0 and len(ev.comparisons) == 50_000
    for text in ["*" * 10_000, "\n" * 1000, "*" * 3, "** * ** ****", "\u2028\u2029\x85"]:
        for alignment in ALIGNMENTS:
            assert evaluate(text, "TCT", dna, alignment=alignment).metrics["recall"] == 0
    big_dyn = evaluate("TCT " * 2000, "TCT " * 1500, dna, alignment="dynamic")
    assert big_dyn.metrics["num_correct"] == 1500 and big_dyn.metrics["num_redundant"] == 500


# -- a reference fed back fenced scores 1 everywhere -----------------------------------------------
codon = st.text(alphabet="ACGT", min_size=3, max_size=3)
integer = st.integers(-99, 99).map(str)
number = integer | st.floats(-50, 50, allow_nan=False).map(lambda x: f"{x:.1f}")
color = st.sampled_from(["red", "blue", "green", "yellow", "black", "white", "orange", "purple"])
logic_line = st.builds(lambda i, v: f"p{i}: {v}", st.integers(1, 40), st.sampled_from(["True", "False"]))


def _matrix(rows, cols):
    return st.lists(st.lists(integer, min_size=cols, max_size=cols), min_size=rows, max_size=rows)


matrix = st.integers(1, 6).flatmap(lambda r: st.integers(1, 8).flatmap(lambda c: _matrix(r, c)))
REFERENCES = {
    "dna": st.lists(codon, min_size=1, max_size=60).map(" ".join),
    "logic": st.lists(logic_line, min_size=1, max_size=20).map(lambda ls: "\n".join(ls) + "\n"),
    "matmul": matrix.map(lambda m: "\n".join(" ".join(r) for r in m)),
    "kronecker": matrix.map(lambda m: "\n".join(" ".join(r) for r in m)),
    "words": st.lists(color, min_size=1, max_size=30).map(" ".join),
    "two_sum": st.lists(integer, min_size=0, max_size=2).map(lambda xs: "[" + ", ".join(xs) + "]"),
    "edit_distance": st.integers(0, 12).map(str),
    "rotate_matrix": matrix.map(lambda m: "[" + ", ".join("[" + ", ".join(r) + "]" for r in m) + "]"),
    "insert_interval": st.lists(st.tuples(number, number), min_size=1, max_size=12).map(
        lambda ivs: "[" + ", ".join(f"[{a}, {b}]" for a, b in ivs) + "]"
    ),
    "reverse_words": st.lists(
        st.text(alphabet="abcxyzABC'", min_size=1, max_size=8), min_size=1, max_size=10
    ).map(" ".join),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_fenced_reference_scores_one(name, data):
    reference = data.draw(REFERENCES[name])
    response = f"some reasoning\n********\n{reference}\n********"
    for granularity in GRANULARITIES:
        for alignment in ALIGNMENTS:
            m = evaluate(
                response, reference, TASKS[name], granularity=granularity, alignment=alignment
            ).metrics
            assert (m["precision"], m["recall"]) == (1.0, 1.0), (granularity, alignment)


# -- spans ------------------------------------------------------------------------------------------
class split_path:
    """Force the regex (huge threshold) or the numpy (threshold 0) splitting path."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold

    def __enter__(self) -> None:
        self.saved = units_module.NUMPY_MIN_CHARS
        units_module.NUMPY_MIN_CHARS = self.threshold

    def __exit__(self, *exc: object) -> None:
        units_module.NUMPY_MIN_CHARS = self.saved


PATHS = [0, 10**9]


@pytest.mark.parametrize("threshold", PATHS)
@settings(max_examples=200, deadline=None)
@given(response=any_text, name=st.sampled_from(sorted(TASKS)), granularity=st.sampled_from(GRANULARITIES))
def test_spans_locate_each_unit_in_the_response(threshold, response, name, granularity):
    with split_path(threshold):
        ev = evaluate(response, "", TASKS[name], granularity=granularity, keyword_filter=False)
    assert len(ev.response_unit_spans) == len(ev.response_units)
    previous_end = ev.fence_start
    for unit, (start, end) in zip(ev.response_units, ev.response_unit_spans):
        assert response[start:end].replace("*", "") == unit
        assert ev.fence_start <= previous_end <= start <= end <= ev.fence_end
        previous_end = end


# -- the fast single-character split equals the literal rule ----------------------------------------
def literal_lines(clean: str) -> list[str]:
    """Lines under universal newlines: ``\\r\\n``, a lone ``\\r`` and ``\\n`` each end a line."""
    return re.split(r"\r\n|\r|\n", clean)


def literal_atoms(text: str, delimiter: str) -> list[str]:
    clean = text.replace("*", "").strip()
    lines = [line.strip() for line in literal_lines(clean)]
    atoms = [p.strip() for line in lines if line for p in line.split(delimiter)]
    atoms = [a for a in atoms if a]
    if atoms and atoms[0].startswith("[") and not atoms[0].endswith("]"):
        atoms[0] = atoms[0][1:]
    if atoms and atoms[-1].endswith("]") and not atoms[-1].startswith("["):
        atoms[-1] = atoms[-1][:-1]
    return atoms


@pytest.mark.parametrize("threshold", PATHS)
@settings(max_examples=200, deadline=None)
@given(text=any_text, delimiter=st.sampled_from([" ", ",", "\n", "\t", "|", ";;", ", "]))
def test_delimiter_split_matches_literal_rule(threshold, text, delimiter):
    with split_path(threshold):
        assert decompose(text, rule(delimiter), "atom") == literal_atoms(text, delimiter)


@pytest.mark.parametrize("threshold", PATHS)
@settings(max_examples=150, deadline=None)
@given(text=any_text)
def test_lines_match_literal_rule(threshold, text):
    clean = text.replace("*", "").strip()
    with split_path(threshold):
        assert decompose(text, rule(" "), "line") == [s.strip() for s in literal_lines(clean) if s.strip()]
    assert decompose(text, rule(" "), "generation") == ([clean] if clean else [])
