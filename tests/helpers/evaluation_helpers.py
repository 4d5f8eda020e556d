"""Task objects for the evaluation tests, the atom rules docs/tasks.md §1.2/§3.2 expects of them, and the
check that the batch evaluator equals one evaluation per response."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from saltbench.core.vocabulary import GRANULARITIES
from saltbench.evaluation import EvaluateOptions, evaluate, evaluate_many, summarize_units
from saltbench.tasks import get_task

NUMBER = r"[+-]?\d+(?:\.\d+)?"
DK = r"<DK>|<DK|DK>|DK"
ROW = rf"\[\s*{NUMBER}(?:\s*,\s*{NUMBER})*\s*\]|{DK}"
INTERVAL = rf"\[\s*{NUMBER}\s*,\s*{NUMBER}\s*\]|{DK}"

EXPECTED_RULES: dict[tuple[str, str | None], tuple[str | None, str | None]] = {
    ("dna", None): (" ", None),
    ("logic", None): ("\n", None),
    ("matmul", None): (" ", None),  # a regex is declared too, but the delimiter wins
    ("kronecker", None): (" ", None),
    ("words", "colors"): (" ", None),
    ("words", "numbers"): (" ", None),
    ("code", "two_sum"): (",", None),
    ("code", "next_permutation"): (",", None),
    ("code", "rotate_array"): (",", None),
    ("code", "reverse_words"): (" ", None),
    ("code", "edit_distance"): (None, NUMBER),
    ("code", "rotate_matrix"): (None, ROW),
    ("code", "insert_interval"): (None, INTERVAL),
}
"""(slug, variant) -> (delimiter, atom regex that is actually used)."""


def task(slug: str, variant: str | None = None) -> Any:
    """The real task object (``saltbench.tasks.get_task``)."""
    return get_task(slug, variant)


def rule(delimiter: str | None, atom_regex: str | None = None) -> SimpleNamespace:
    """A bare task-like object with the given atom rule."""
    return SimpleNamespace(delimiter=delimiter, atom_regex=atom_regex)


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


def stored(unit: str | None) -> str | None:
    """What the frame stores for a unit: every surrogate code point written as U+FFFD."""
    return None if unit is None else "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in unit)


NO_SPAN = (None, None)
UNIT_ROW = ("unit_index", "status", "response_unit", "reference_unit", "is_correct", "span_start", "span_end")


def assert_batch_equals_single(
    frame: pl.DataFrame,
    responses: Sequence[str],
    references: Sequence[str],
    t: Any,
    alignment: str,
    metric_keys: Sequence[str],
) -> None:
    """Rows, spans and summary metrics of ``evaluate_many``'s ``frame`` are those of ``evaluate`` on each
    response, at every granularity."""
    summary = summarize_units(frame, dynamic_alignment=alignment == "dynamic")
    for i, (response, reference) in enumerate(zip(responses, references, strict=True)):
        for g in GRANULARITIES:
            ev = evaluate(response, reference, t, granularity=g, alignment=alignment)
            rows = frame.filter((pl.col("sample_idx") == i) & (pl.col("granularity") == g))
            expected = [
                (
                    c.index,
                    c.status,
                    stored(c.response_unit),
                    stored(c.reference_unit),
                    c.is_correct,
                    *(ev.response_unit_spans[c.response_index] if c.response_index is not None else NO_SPAN),
                )
                for c in ev.comparisons
            ]
            assert rows.select(UNIT_ROW).rows() == expected, (i, g)
            metrics = summary.filter((pl.col("sample_idx") == i) & (pl.col("granularity") == g))
            if ev.comparisons:
                assert metrics.select(metric_keys).row(0, named=True) == pytest.approx(ev.metrics, abs=1e-12)
            else:
                assert metrics.height == 0


def greedy_units(
    greedy: Sequence[str],
    references: Sequence[str],
    slug: str,
    variant: str | None,
    options: EvaluateOptions,
    ids: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The units table columns that ``draw_consistency`` reads (docs/confidence.md §6–7), for greedy answers
    evaluated by ``evaluate_many`` at every granularity; sample ids ``ids`` (default ``s0, s1, ...``)."""
    frame = evaluate_many(list(greedy), list(references), slug, variant=variant, options=options)
    names = pl.Series(
        list(ids) if ids is not None else [f"s{i}" for i in range(len(greedy))], dtype=pl.String
    )
    return frame.select(
        sample_id=names.gather(frame["sample_idx"]),
        task=pl.lit(slug),
        variant=pl.lit(variant, dtype=pl.String),
        granularity="granularity",
        unit_index="unit_index",
        status="status",
        response_unit="response_unit",
    )
