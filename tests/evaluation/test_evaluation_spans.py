"""Unit spans in the original response (fix of docs/compatibility.md §1.5): one span per evaluator unit."""

from __future__ import annotations

import pytest
from helpers.evaluation_helpers import task

from saltbench.evaluation import evaluate


def texts(response, ev):
    return [response[a:b] for a, b in ev.response_unit_spans]


def test_dna_spans_skip_fences_and_reasoning():
    response = "scratch\n********\nTCT AAA\n********"
    ev = evaluate(response, "TCT CGA", task("dna"))
    assert ev.response_unit_spans == ((17, 20), (21, 24))


def test_logic_atoms_have_one_span_per_line():
    response = "think\n********\np1: True\n  p2:  False \n********\n"
    ev = evaluate(response, "p1: True\np2: False\n", task("logic"))
    assert texts(response, ev) == ["p1: True", "p2:  False"]
    assert len(ev.response_unit_spans) == ev.metrics["num_response_units"] == 2


def test_multiline_comma_lists_have_one_span_per_unit():
    response = "********\n[0, 1]\n[2, 3]\n********"
    ev = evaluate(response, "[0, 1]", task("code", "two_sum"))
    assert ev.response_units == ("0", "1]", "[2", "3")
    assert texts(response, ev) == ["0", "1]", "[2", "3"]


def test_bracket_trimming_shrinks_the_span():
    response = "********\n[4, 1, 2, 3]\n********"
    ev = evaluate(response, "[4, 1, 2, 3]", task("code", "rotate_array"))
    assert ev.response_unit_spans[0] == (10, 11) and ev.response_unit_spans[-1] == (19, 20)


def test_asterisks_inside_units_are_inside_spans():
    response = "********\nT*CT **CGA**\n********"
    ev = evaluate(response, "TCT CGA", task("dna"))
    assert ev.response_units == ("TCT", "CGA")
    assert texts(response, ev) == ["T*CT", "CGA"]


@pytest.mark.parametrize(
    ("response", "spans"),
    [("  TCT CGA  ", ((2, 5), (6, 9))), ("x ********TCT CGA******** y", ((10, 13), (14, 17)))],
)
def test_unfenced_and_inline_fenced_spans(response, spans):
    assert evaluate(response, "TCT CGA", task("dna")).response_unit_spans == spans


def test_line_and_generation_spans():
    response = "********\n 5 4 \n6 7 8\n********"
    lines = evaluate(response, "5 4\n5 7", task("matmul"), granularity="line")
    assert texts(response, lines) == ["5 4", "6 7 8"]
    whole = evaluate(response, "5 4\n5 7", task("matmul"), granularity="generation")
    assert texts(response, whole) == ["5 4 \n6 7 8"]


def test_regex_atom_spans():
    response = "********\n[[1, 2], [DK], [3,  4]]\n********"
    ev = evaluate(response, "[[1, 2], [3, 4]]", task("code", "rotate_matrix"))
    assert texts(response, ev) == ["[1, 2]", "DK", "[3,  4]"]


def test_no_answer_has_no_spans():
    ev = evaluate("********\nthe output is TCT\n********", "TCT", task("dna"))
    assert ev.response_unit_spans == ()
