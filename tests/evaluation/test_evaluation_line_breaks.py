"""Line breaks are universal newlines: ``\\r\\n`` and a lone ``\\r`` end a line like ``\\n``, at every
granularity, in ``evaluate`` and ``evaluate_many`` alike, while unit spans keep indexing the original
response."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from helpers.evaluation_helpers import rule, task

from saltbench.core.vocabulary import ALIGNMENTS, GRANULARITIES
from saltbench.evaluation import (
    METRIC_KEYS,
    decompose,
    evaluate,
    evaluate_many,
    normalize_unit,
    summarize_units,
)
from saltbench.stages.scoring import token_unit_pairs
from saltbench.tasks import TASK_SLUGS, get_task

BREAKS = {"crlf": "\r\n", "cr": "\r"}


def _cases() -> list[tuple[str, object, str]]:
    """(name, task, reference) for every task and variant: two generated references each."""
    cases = []
    for slug in TASK_SLUGS:
        frame = get_task(slug).generate(28 if slug in ("code", "words") else 2, seed=0)
        seen: dict[str | None, int] = {}
        for variant, reference in zip(frame["variant"], frame["reference"]):
            if seen.get(variant, 0) == 2:
                continue
            seen[variant] = seen.get(variant, 0) + 1
            name = slug if variant is None else f"{slug}/{variant}"
            cases.append((name, get_task(slug, variant), reference))
    return cases


CASES = _cases()
CASE_IDS = [f"{n}-{k}" for k, (n, _, _) in enumerate(CASES)]
MULTILINE = [(n, t, r) for n, t, r in CASES if "\n" in r.strip()]


NO_FILTER = {"keyword_filter": False}  # generated Words answers can contain "end" (lavender), §10.2


def fenced(answer: str, newline: str = "\n") -> str:
    return f"some reasoning{newline}********{newline}{answer}{newline}********{newline}"


def test_cases_cover_every_task_and_variant():
    names = {n for n, _, _ in CASES}
    assert {"dna", "logic", "matmul", "kronecker"} <= names
    assert sum(n.startswith("code/") for n in names) == 7 and sum(n.startswith("words/") for n in names) == 7
    assert {n.split("/")[0] for n, _, _ in MULTILINE} >= {"logic", "matmul", "kronecker"}


@pytest.mark.parametrize("brk", sorted(BREAKS))
@pytest.mark.parametrize("alignment", ALIGNMENTS)
@pytest.mark.parametrize(("name", "t", "reference"), CASES, ids=CASE_IDS)
def test_reference_with_other_line_breaks_scores_like_lf(name, t, reference, alignment, brk):
    """The reference rendered with CRLF (or CR) line breaks, as response or as reference or both, gets
    precision = recall = 1 and exactly the metrics of the LF rendering, at every granularity."""
    other = reference.replace("\n", BREAKS[brk])
    for g in GRANULARITIES:
        kwargs = {"granularity": g, "alignment": alignment, **NO_FILTER}
        base = evaluate(fenced(reference), reference, t, **kwargs).metrics
        assert (base["precision"], base["recall"]) == (1.0, 1.0)
        other_fenced = fenced(other, BREAKS[brk])
        pairs = [
            (fenced(other), reference),
            (other_fenced, reference),
            (fenced(reference), other),
            (other_fenced, other),
            (other, other),
        ]
        for response, ref in pairs:
            m = evaluate(response, ref, t, **kwargs).metrics
            assert m == base, (name, g, repr(response), repr(ref))


@pytest.mark.parametrize("brk", sorted(BREAKS))
@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_batch_path_treats_line_breaks_like_evaluate(alignment, brk):
    by_task: dict[str, list[tuple[object, str]]] = {}
    for name, t, reference in CASES:
        by_task.setdefault(name, []).append((t, reference))
    for name, items in by_task.items():
        t = items[0][0]
        references = [r for _, r in items]
        others = [r.replace("\n", BREAKS[brk]) for r in references]
        responses = [fenced(o, BREAKS[brk]) for o in others] + [fenced(r) for r in references]
        frame = evaluate_many(responses, references + others, t, alignment=alignment, **NO_FILTER)
        summary = summarize_units(frame, dynamic_alignment=alignment == "dynamic")
        assert summary.height == 3 * len(responses)
        assert summary.filter((pl.col("precision") != 1) | (pl.col("recall") != 1)).height == 0, name
        for i, (response, reference) in enumerate(zip(responses, references + others)):
            for g in GRANULARITIES:
                ev = evaluate(response, reference, t, granularity=g, alignment=alignment, **NO_FILTER)
                rows = frame.filter((pl.col("sample_idx") == i) & (pl.col("granularity") == g))
                expected = [
                    (c.status, c.response_unit, *ev.response_unit_spans[c.response_index])
                    for c in ev.comparisons
                ]
                assert rows.select("status", "response_unit", "span_start", "span_end").rows() == expected
                got = summary.filter((pl.col("sample_idx") == i) & (pl.col("granularity") == g))
                assert got.select(METRIC_KEYS).row(0, named=True) == pytest.approx(ev.metrics)


def _lf_to_other_offset(lf_text: str, brk: str) -> np.ndarray:
    """Offset in ``lf_text.replace("\\n", brk)`` of each offset ``0 .. len`` of ``lf_text``."""
    newlines = np.cumsum([0] + [ch == "\n" for ch in lf_text])
    return np.arange(len(lf_text) + 1) + (len(brk) - 1) * newlines


@pytest.mark.parametrize("brk", sorted(BREAKS))
@pytest.mark.parametrize(("name", "t", "reference"), MULTILINE, ids=[n for n, _, _ in MULTILINE])
def test_spans_index_the_original_response(name, t, reference, brk):
    """Spans of a CRLF/CR response are the LF spans moved by the extra characters before them, each span
    slices its unit out of the original response, and ``evaluate_many`` reports the same spans."""
    lf = fenced(reference.replace("\n", " *\n"))  # asterisks too, so the clean-offset map is non-trivial
    other = lf.replace("\n", BREAKS[brk])
    move = _lf_to_other_offset(lf, BREAKS[brk])
    frame = evaluate_many([other], [reference], t)
    for g in GRANULARITIES:
        ev_lf = evaluate(lf, reference, t, granularity=g)
        ev = evaluate(other, reference, t, granularity=g)
        assert ev.metrics == ev_lf.metrics
        moved = tuple((int(move[a]), int(move[b])) for a, b in ev_lf.response_unit_spans)
        assert ev.response_unit_spans == moved
        for unit, (a, b) in zip(ev.response_units, ev.response_unit_spans):
            assert other[a:b].replace("*", "") == unit
        if g != "generation":
            assert ev.response_units == ev_lf.response_units
        else:
            assert ev.response_units == (ev_lf.response_units[0].replace("\n", BREAKS[brk]),)
        rows = frame.filter(pl.col("granularity") == g)
        assert rows.select("span_start", "span_end").rows() == list(ev.response_unit_spans)


@pytest.mark.parametrize("brk", sorted(BREAKS))
def test_scoring_maps_tokens_to_units_in_the_original_text(brk):
    """With one token per character, the tokens ``token_unit_pairs`` assigns to a unit spell the unit."""
    reference = "p1: True\np2: False\np3: True"
    response = fenced(reference.replace("\n", BREAKS[brk]), BREAKS[brk])
    frame = evaluate_many([response], [reference], "logic", granularities="atom")
    offsets = np.arange(len(response))
    starts, ends = frame["span_start"].to_numpy(), frame["span_end"].to_numpy()
    tok, unit = token_unit_pairs(offsets, len(response), starts, ends)
    spelled = ["".join(response[k] for k in tok[unit == u]) for u in range(frame.height)]
    assert spelled == frame["response_unit"].to_list() == reference.split("\n")


def test_line_break_rules():
    dna = rule(" ")
    assert decompose("TCT CGA\r\nAAA\rGGG\n\rCCC", dna, "atom") == ["TCT", "CGA", "AAA", "GGG", "CCC"]
    assert decompose("TCT CGA\r\nAAA\rGGG", dna, "line") == ["TCT CGA", "AAA", "GGG"]
    assert decompose("TCT CGA\r\nAAA\r", dna, "generation") == ["TCT CGA\r\nAAA"]
    assert decompose("p1: True\rp2: False", task("logic"), "atom") == ["p1: True", "p2: False"]
    assert decompose("[1, 2]\r\n[3, 4]", task("code", "rotate_matrix"), "atom") == ["[1, 2]", "[3, 4]"]
    assert normalize_unit("5 4\r\n6 7\r8", dna) == "5 4\n6 7\n8"
    assert normalize_unit("p1: True\r\np2: False", task("logic")) == "p1:True\np2:False"
    # a CRLF is one line break, not two: the blank line between rows still differs at generation level
    assert evaluate("5 4\r\n6 7", "5 4\n6 7", dna, granularity="generation").metrics["precision"] == 1.0
    assert evaluate("5 4\r\n\r\n6 7", "5 4\n6 7", dna, granularity="generation").metrics["precision"] == 0.0
    assert evaluate("5 4\r\r6 7", "5 4\n\n6 7", dna, granularity="generation").metrics["precision"] == 1.0
