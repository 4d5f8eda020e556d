"""Strict comparison and the metrics dictionary: the worked examples of docs/evaluation.md §5, §7–8."""

from __future__ import annotations

import pytest
from helpers.evaluation_helpers import task

from saltbench.evaluation import METRIC_KEYS, evaluate

DNA = task("dna")
MATMUL = task("matmul")


def statuses(ev):
    return [c.status for c in ev.comparisons]


def test_dna_one_right_one_wrong():
    ev = evaluate("scratch\n********\nTCT AAA\n********", "TCT CGA", DNA)
    assert statuses(ev) == ["correct", "incorrect"]
    assert ev.metrics["precision"] == ev.metrics["recall"] == ev.metrics["accuracy"] == 0.5
    assert ev.fenced_response == "********\nTCT AAA\n********"
    assert (ev.fence_start, ev.fence_end) == (8, 33)
    assert ev.clean_response == "TCT AAA"
    assert ev.response_units == ("TCT", "AAA") and ev.reference_units == ("TCT", "CGA")
    assert [c.is_correct for c in ev.comparisons] == [True, False]
    assert [c.index for c in ev.comparisons] == [0, 1]


def test_matrix_at_three_granularities():
    response, reference = "********\n5 4\n6 7 8\n********", "5 4\n5 7"
    ev = evaluate(response, reference, MATMUL)
    assert statuses(ev) == ["correct", "correct", "incorrect", "correct", "redundant"]
    m = ev.metrics
    assert m["precision"] == 3 / 5 and m["recall"] == 3 / 4
    assert m["slot_coverage"] == m["coverage"] == 1.0
    assert m["num_redundant"] == 1 and m["num_redundant"] / m["num_response_units"] == 0.2
    line = evaluate(response, reference, MATMUL, granularity="line")
    assert line.response_units == ("5 4", "6 7 8") and line.reference_units == ("5 4", "5 7")
    assert line.metrics["precision"] == 0.5
    assert evaluate(response, reference, MATMUL, granularity="generation").metrics["precision"] == 0


def test_surplus_units_are_redundant():
    ev = evaluate("A B C", "A B", DNA)
    assert statuses(ev) == ["correct", "correct", "redundant"]
    assert ev.metrics["num_redundant"] == ev.metrics["num_extra"] == 1
    assert ev.metrics["hallucination_score"] == 0.5
    assert ev.comparisons[2].reference_unit is None and ev.comparisons[2].reference_index is None


def test_selective_units():
    ev = evaluate("TCT DK <dk> AAA DK", "TCT CGA AAA GGG", DNA)
    assert statuses(ev) == ["correct", "selective", "selective", "incorrect", "redundant"]
    m = ev.metrics
    assert m["precision"] == 0.2 and m["recall"] == 0.25
    assert m["accuracy"] == 0.5 and m["accuracy_include_extra"] == pytest.approx(1 / 3)
    assert m["slot_coverage"] == 1.0
    assert m["num_selective"] == 2 and m["num_present_aligned_slots"] == 4


def test_missing_only_at_the_tail_in_strict_mode():
    ev = evaluate("TCT", "TCT CGA TTC", DNA)
    assert statuses(ev) == ["correct", "missing", "missing"]
    assert ev.metrics["num_missing"] == 2 and ev.metrics["num_internal_missing"] == 0
    assert ev.metrics["precision"] == 1.0 and ev.metrics["recall"] == pytest.approx(1 / 3)
    assert ev.comparisons[1].response_unit is None and ev.comparisons[1].response_index is None


def test_empty_against_empty_is_all_zero():
    m = evaluate("", "", DNA).metrics
    assert set(m) == set(METRIC_KEYS)
    assert all(m[k] == 0 for k in METRIC_KEYS)
    assert m["dynamic_alignment"] is False


def test_no_answer_against_reference_is_all_missing():
    ev = evaluate("********\nthe answer is TCT\n********", "TCT CGA", DNA)
    assert ev.fenced_response == "" and (ev.fence_start, ev.fence_end) == (-1, -1)
    assert statuses(ev) == ["missing", "missing"]
    assert ev.metrics["precision"] == 0 and ev.metrics["num_precision_units"] == 0


def test_metric_keys_are_complete_and_typed():
    m = evaluate("TCT", "TCT", DNA).metrics
    assert list(m) == list(METRIC_KEYS)
    assert all(isinstance(m[k], int) for k in METRIC_KEYS if k.startswith("num_"))
    assert all(isinstance(m[k], float) for k in ("precision", "recall", "accuracy", "coverage"))


def test_reference_goes_through_asterisk_removal():
    assert evaluate("TCT", "**TCT**\n", DNA).metrics["precision"] == 1.0


@pytest.mark.parametrize(("name", "value"), [("granularity", "word"), ("alignment", "fuzzy")])
def test_unknown_modes_raise_naming_the_argument(name, value):
    with pytest.raises(ValueError, match=name):
        evaluate("TCT", "TCT", DNA, **{name: value})


def test_evaluate_resolves_slugs():
    ev = evaluate("********\n[0, 1]\n********", "[0, 1]", "code", variant="two_sum")
    assert ev.response_units == ("0", "1") and ev.metrics["precision"] == 1.0
    assert evaluate("p1:True", "p1: True", "logic").metrics["precision"] == 1.0
