"""Worked solutions: the scratchpad before a reasoned answer's fenced answer (docs/tiny-models.md §2)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from saltbench.evaluation import evaluate
from saltbench.tasks import TASK_SLUGS, get_task
from saltbench.tasks.base import FENCE
from saltbench.tasks.matrix import format_operands

_ENTRY = re.compile(r"^([-\d*+]+)=(-?\d+)$")


def _matrices(rows: int, cols: int) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.int64, (rows, cols), elements=st.integers(-9, 9))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.data())
def test_matmul_entries_are_sums_of_products(r: int, k: int, c: int, data: st.DataObject) -> None:
    a, b = data.draw(_matrices(r, k)), data.draw(_matrices(k, c))
    task = get_task("matmul")
    text = format_operands(a, b)
    lines = task.worked_solution(text).split("\n")
    assert len(lines) == r
    for i, line in enumerate(lines):
        entries = line.split(" ")
        assert len(entries) == c
        for j, entry in enumerate(entries):
            expr, value = _ENTRY.match(entry).groups()  # type: ignore[union-attr]
            assert expr == "+".join(f"{a[i, m]}*{b[m, j]}" for m in range(k))
            assert int(value) == int(a[i] @ b[:, j])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.data())
def test_kronecker_entries_are_products_in_output_order(
    ra: int, ca: int, rb: int, cb: int, data: st.DataObject
) -> None:
    a, b = data.draw(_matrices(ra, ca)), data.draw(_matrices(rb, cb))
    task = get_task("kronecker")
    worked = task.worked_solution(format_operands(a, b))
    products = [[e.split("=") for e in line.split(" ")] for line in worked.split("\n")]
    kron = np.kron(a, b)
    assert [[int(v) for _, v in row] for row in products] == kron.tolist()
    for row in products:
        for expr, value in row:
            x, y = expr.split("*", 1)
            assert int(x) * int(y) == int(value)


@pytest.mark.parametrize("subject", ["numbers", "months", "weekdays", "colors", "capital_letters"])
def test_words_positions_name_the_word_holding_each_needle(subject: str) -> None:
    task = get_task("words", subject)
    rows = task.generate(20, 3, subjects=[subject], min_words=12, max_words=40, min_needles=1)
    for text, reference in zip(rows["input"], rows["reference"], strict=True):
        worked = task.worked_solution(text)
        if not reference:
            assert worked == "none"
            continue
        words = text.split()
        pairs = [item.split(":", 1) for item in worked.split(" ")]
        assert [needle for _, needle in pairs] == reference.split(" ")
        for position, needle in pairs:
            assert needle.lower() in words[int(position) - 1].lower()


def _sample(slug: str):
    task = get_task(slug)
    rows = task.generate(6, 11)
    return [(get_task(slug, v), x, r) for x, r, v in zip(rows["input"], rows["reference"], rows["variant"])]


@pytest.mark.parametrize("slug", TASK_SLUGS)
def test_reasoned_answer_scores_like_the_answer(slug: str) -> None:
    """The worked solution holds no fence and stands before the fenced answer: every granularity scores
    precision 1, exactly as the plain rendered answer does."""
    for task, inp, ref in _sample(slug):
        worked = task.worked_solution(inp)
        reasoned = task.render_reasoned_answer(inp, ref)
        assert reasoned.endswith(task.render_answer(ref))
        if worked is None:
            assert reasoned == task.render_answer(ref)
            continue
        assert "****" not in worked and FENCE not in worked
        for granularity in ("atom", "line", "generation"):
            result = evaluate(reasoned, ref, slug, variant=task.variant, granularity=granularity)
            assert result.metrics["precision"] == 1.0
