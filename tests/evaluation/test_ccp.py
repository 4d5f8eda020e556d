"""Claim-conditioned probability (docs/confidence.md §4.6) against a slow reference that substitutes each
alternative into the whole window and compares the evaluator's own keys, and against hand-computed cases of
the scoring stage per task; ``trace.reasoning_tokens`` (§4.7)."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import polars as pl
import pytest
from helpers.ccp_cases import EVERY_PIECE, PIECES, ccp_inputs, first_response_ccp
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.evaluation import UnitRule, normalize_unit, token_vocabulary, unit_ccp
from saltbench.inference.records import PAD_ID, GenerationRecord, TokenScores, records_to_frame
from saltbench.stages.scoring import score_generations, token_unit_pairs


def reference_ccp(
    text: str,
    tokens: list[tuple[int, float, list[tuple[int, float]]]],
    span: tuple[int, int],
    rule: UnitRule,
    known: dict[int, str],
    top_k: int,
) -> float:
    """Π_t CCP_t by substitution into the whole window, one token and one alternative at a time."""
    offsets = np.cumsum([0] + [len(PIECES[i]) for i, _, _ in tokens])
    members, _ = token_unit_pairs(offsets[:-1], len(text), np.array([span[0]]), np.array([span[1]]))
    if members.size == 0:
        return math.nan
    product = 1.0
    for t in members.tolist():
        token_id, chosen, stored = tokens[t]
        alternatives = [(i, lp) for i, lp in stored if not math.isnan(lp) and i != token_id][: top_k - 1]
        if not alternatives:
            return math.nan
        logits = np.array([chosen] + [lp for _, lp in alternatives])
        p = np.exp(logits - logits.max())
        p /= p.sum()
        start, end = min(span[0], offsets[t]), max(span[1], offsets[t + 1])
        key = normalize_unit(text[start:end], rule)
        same = total = p[0]
        for (alt, _), weight in zip(alternatives, p[1:], strict=True):
            if alt not in known:
                continue
            total += weight
            substituted = text[start : offsets[t]] + known[alt] + text[offsets[t + 1] : end]
            same += weight if normalize_unit(substituted, rule) == key else 0.0
        product *= same / total
    return product


_logprob = st.floats(-6.0, -0.01)
_stored = st.lists(
    st.tuples(st.integers(0, len(PIECES) + 1), _logprob | st.just(math.nan)), min_size=1, max_size=5
)
_token = st.tuples(st.integers(0, len(PIECES) - 1), _logprob, _stored)


@settings(max_examples=150, deadline=None)
@given(
    responses=st.lists(st.lists(_token, min_size=1, max_size=10), min_size=1, max_size=3),
    strips=st.lists(st.booleans(), min_size=3, max_size=3),
    top_k=st.integers(2, 5),
    data=st.data(),
)
def test_ccp_equals_the_substitution_reference(responses, strips, top_k, data):
    if data.draw(st.booleans()):  # a response choosing every piece: every alternative's text is known
        responses = [*responses, EVERY_PIECE]
    tokens = ccp_inputs(responses, (strips * 2)[: len(responses)], top_k)
    known = {i: PIECES[i] for i in tokens.ids.tolist()}
    spans, unit_rows, token_parts, unit_parts = [], [], [], []
    base = 0
    for row, text in enumerate(tokens.texts):
        n_tokens = len(responses[row])
        for _ in range(data.draw(st.integers(0, 3))):
            if not text:
                break
            start = data.draw(st.integers(0, len(text) - 1))
            spans.append((start, data.draw(st.integers(start + 1, len(text)))))
            unit_rows.append(row)
            offsets = tokens.offsets[base : base + n_tokens]
            t, _ = token_unit_pairs(offsets, len(text), np.array([spans[-1][0]]), np.array([spans[-1][1]]))
            token_parts.append(t + base)
            unit_parts.append(np.full(t.size, len(spans) - 1))
        base += n_tokens
    if not spans:
        return
    got = unit_ccp(
        tokens,
        np.concatenate(token_parts),
        np.concatenate(unit_parts),
        (np.array([s for s, _ in spans]), np.array([e for _, e in spans])),
        len(spans),
        top_k=top_k,
    )
    for u, (span, row) in enumerate(zip(spans, unit_rows, strict=True)):
        rule = UnitRule(None if tokens.strip_spaces[row] else " ", None)
        expected = reference_ccp(tokens.texts[row], responses[row], span, rule, known, top_k)
        assert got[u] == pytest.approx(expected, abs=1e-12, nan_ok=True), (u, span, tokens.texts[row])
    assert np.all((got[~np.isnan(got)] >= 0) & (got[~np.isnan(got)] <= 1 + 1e-12))


_CR, _LF, _EMPTY, _STAR, _SPACE, _A, _B = 8, 7, 11, 5, 3, 0, 1
_UNKNOWN = (len(PIECES), -3.0)
"""An alternative whose text is never chosen (left out, but the token has a stored top-k)."""
CORNER_CASES = [
    # a kept "\r" left of a token "\n" whose alternative "" keeps the CRLF pair's key; and mirrored
    [
        (_A, -0.5, [_UNKNOWN]),
        (_CR, -0.3, [_UNKNOWN]),
        (_LF, -0.2, [(_EMPTY, -1.0), (_B, -2.0), _UNKNOWN]),
        (_B, -0.1, [_UNKNOWN]),
    ],
    [
        (_A, -0.5, [_UNKNOWN]),
        (_CR, -0.3, [(_EMPTY, -1.0), (_LF, -1.5), _UNKNOWN]),
        (_LF, -0.2, [_UNKNOWN]),
        (_B, -0.1, [_UNKNOWN]),
    ],
    # stars and spaces between the kept character and the token; whitespace only on one side
    [
        (_CR, -0.3, [_UNKNOWN]),
        (_STAR, -0.2, [_UNKNOWN]),
        (_SPACE, -0.2, [_UNKNOWN]),
        (_LF, -0.4, [(_EMPTY, -1.0), (_SPACE, -2.0), _UNKNOWN]),
    ],
    # only a star left of the token: strip still reaches it; a space after "\r" (kept only by DNA's rule)
    [
        (_STAR, -0.2, [_UNKNOWN]),
        (_SPACE, -0.3, [(_EMPTY, -0.9), _UNKNOWN]),
        (_A, -0.1, [(_SPACE, -1.2), _UNKNOWN]),
    ],
    [
        (_A, -0.1, [_UNKNOWN]),
        (_CR, -0.3, [_UNKNOWN]),
        (_SPACE, -0.2, [_UNKNOWN]),
        (_LF, -0.4, [(_EMPTY, -1.0), _UNKNOWN]),
        (_A, -0.1, [_UNKNOWN]),
    ],
    [
        (_SPACE, -0.1, [(_A, -1.0), (_EMPTY, -0.5), _UNKNOWN]),
        (_A, -0.2, [(_SPACE, -0.7), _UNKNOWN]),
        (_SPACE, -0.3, [(_STAR, -0.6), _UNKNOWN]),
    ],
]


@pytest.mark.parametrize("responses", [[case] for case in CORNER_CASES])
@pytest.mark.parametrize("strip", [False, True])
def test_ccp_corner_cases_over_every_span(responses, strip):
    """CRLF pairs across the token's edges, stars and removable spaces: every span of each text (a second
    response chooses every piece, so that every alternative's text is known)."""
    responses = [*responses, EVERY_PIECE]
    tokens = ccp_inputs(responses, [strip, strip], 4)
    text = tokens.texts[0]
    spans = [(s, e) for s in range(len(text)) for e in range(s + 1, len(text) + 1)]
    got = first_response_ccp(tokens, len(responses[0]), spans, 4)
    known = {i: PIECES[i] for i in tokens.ids.tolist()}
    rule = UnitRule(None if strip else " ", None)
    expected = [reference_ccp(text, responses[0], span, rule, known, 4) for span in spans]
    np.testing.assert_allclose(got, expected, atol=1e-12)


# -- hand-computed cases through the scoring stage --------------------------------------------------------

FENCE = "********"


def _record(
    tokens: list[tuple[str, float, list[tuple[str, float]]]], vocab: dict[str, int]
) -> GenerationRecord:
    """A record from (text, probability, [(alternative text, probability)]) tokens; ids from ``vocab``."""
    ids = [vocab.setdefault(text, len(vocab)) for text, _, _ in tokens]
    k = 20
    topk_ids = np.full((len(tokens), k), PAD_ID, np.int32)
    topk = np.full((len(tokens), k), np.nan, np.float32)
    for t, (_, p, alternatives) in enumerate(tokens):
        topk_ids[t, 0], topk[t, 0] = ids[t], math.log(p)
        for j, (alt, q) in enumerate(alternatives, start=1):
            topk_ids[t, j], topk[t, j] = vocab.setdefault(alt, len(vocab)), math.log(q)
        if not alternatives:  # a structural token: one unlisted alternative keeps the top-k stored
            topk_ids[t, 1], topk[t, 1] = 99_999, math.log1p(-min(p, 0.999999))
    chosen = np.log(np.array([p for _, p, _ in tokens], dtype=np.float32))
    scores = TokenScores(
        np.array(ids, np.int32), chosen, topk_ids, topk, np.full(len(tokens), 0.5, np.float32)
    )
    return GenerationRecord.from_scores(
        scores, [t for t, _, _ in tokens], finish_reason="eos", num_prompt_tokens=3
    )


def _scored(
    task: str, answer: list[tuple[str, float, list[tuple[str, float]]]], reference: str, spares: str = "file"
) -> pl.DataFrame:
    """The units of one response (fenced ``answer``) beside a second one that chooses every alternative
    (so that their texts are known, docs/confidence.md §4.6): in the same file (``spares="file"``), in
    another file of the model (``"vocabulary"``), or nowhere (``"none"``)."""
    vocab: dict[str, int] = {}
    fenced = [(FENCE, 0.99, []), ("\n", 0.99, []), *answer, ("\n", 0.99, []), (FENCE, 0.99, [])]
    first = _record(fenced, vocab)
    others = [(text, 0.9, []) for text in vocab if text not in {t for t, _, _ in fenced}]
    second = records_to_frame([_record([(FENCE, 0.99, []), *others], vocab)], {"sample_id": ["s1"]})
    gens = records_to_frame([first], {"sample_id": ["s0"]})
    gens = pl.concat([gens, second]) if spares == "file" else gens
    data = pl.DataFrame({"sample_id": ["s0", "s1"], "variant": [None, None], "reference": [reference] * 2})
    vocabulary = token_vocabulary(second) if spares == "vocabulary" else None
    units = score_generations(gens, data, task, fence_rule="line", vocabulary=vocabulary)
    return units.filter(pl.col("sample_id") == "s0").sort("granularity", "unit_index")


def _ccp(units: pl.DataFrame, granularity: str) -> list[float]:
    return units.filter(pl.col("granularity") == granularity)["topk.ccp"].to_list()


def test_dna_hand_case():
    """TCT: 0.6 + ' TCT' 0.1 (stripped at the atom's edge: equivalent), 'TCA' 0.3 different -> 0.7;
    ' CGA': 0.8 + 'CGA' 0.15 (equivalent for the atom) , ' CGT' 0.05 -> 0.95; the line and the answer keep
    spaces (DNA's delimiter is one space), so 'CGA' there is 'TCTCGA': different -> 0.7 · 0.8."""
    answer = [("TCT", 0.6, [("TCA", 0.3), (" TCT", 0.1)]), (" CGA", 0.8, [("CGA", 0.15), (" CGT", 0.05)])]
    units = _scored("dna", answer, "TCT CGA")
    assert _ccp(units, "atom") == pytest.approx([0.7, 0.95], abs=1e-6)
    assert _ccp(units, "line") == pytest.approx([0.56], abs=1e-6)
    assert _ccp(units, "generation") == pytest.approx([0.56], abs=1e-6)


def test_alternatives_known_from_the_models_other_files():
    """The same DNA case with the alternatives chosen only in another file of the model (the scoring job's
    vocabulary of every task), and chosen nowhere: unknown alternatives are left out, so each token keeps
    CCP 1 unless an alternative with a known text differs."""
    answer = [("TCT", 0.6, [("TCA", 0.3), (" TCT", 0.1)]), (" CGA", 0.8, [("CGA", 0.15), (" CGT", 0.05)])]
    assert _ccp(_scored("dna", answer, "TCT CGA", "vocabulary"), "atom") == pytest.approx(
        [0.7, 0.95], abs=1e-6
    )
    assert _ccp(_scored("dna", answer, "TCT CGA", "none"), "atom") == pytest.approx([1.0, 1.0], abs=1e-6)


def test_matmul_hand_case():
    """'12 5': '1' 0.7 + '*1' 0.2 (asterisks never count) vs '7' 0.1 -> 0.9; '2' 0.75 vs '3' 0.25 -> 0.75;
    ' 5' 0.7 + ' 5 ' 0.1 (stripped) vs ' 6' 0.2 -> 0.8. Atoms 0.675 and 0.8; the line 0.54."""
    answer = [
        ("1", 0.7, [("*1", 0.2), ("7", 0.1)]),
        ("2", 0.75, [("3", 0.25)]),
        (" 5", 0.7, [(" 6", 0.2), (" 5 ", 0.1)]),
    ]
    units = _scored("matmul", answer, "12 5")
    assert _ccp(units, "atom") == pytest.approx([0.675, 0.8], abs=1e-6)
    assert _ccp(units, "line") == pytest.approx([0.675 * 0.8], abs=1e-6)


def test_words_hand_case():
    """Keys are case-sensitive: 'Red' differs from 'red'; a leading space at the line's start is stripped."""
    answer = [("red", 0.5, [("Red", 0.3), (" red", 0.2)]), (" blue", 0.9, [(" blues", 0.1)])]
    units = _scored("words", answer, "red blue")
    assert _ccp(units, "atom") == pytest.approx([0.7, 0.9], abs=1e-6)
    assert _ccp(units, "generation") == pytest.approx([0.63], abs=1e-6)


def test_logic_hand_case_removes_spaces():
    """Logic's delimiter is a newline, so keys drop spaces: ' True' and 'True' are the same unit."""
    answer = [("p1:", 0.9, [("p2:", 0.1)]), (" True", 0.6, [("True", 0.3), (" False", 0.1)])]
    units = _scored("logic", answer, "p1: True")
    assert _ccp(units, "atom") == pytest.approx([0.9 * 0.9], abs=1e-6)


def test_ccp_is_nan_without_stored_alternatives_or_known_units():
    """An imported response without top-k (every alternative absent) has NaN ccp; so do units without
    tokens (missing units)."""
    vocab: dict[str, int] = {}
    record = _record(
        [(FENCE, 0.99, []), ("\n", 0.99, []), ("TCT", 0.9, []), ("\n", 0.99, []), (FENCE, 0.99, [])], vocab
    )
    bare = dataclasses.replace(
        record,
        topk_ids=np.full_like(record.topk_ids, PAD_ID),
        topk_logprobs=np.full_like(record.topk_logprobs, np.nan),
    )
    gens = records_to_frame([bare], {"sample_id": ["s0"]})
    data = pl.DataFrame({"sample_id": ["s0"], "variant": [None], "reference": ["TCT CGA"]})
    units = score_generations(gens, data, "dna", fence_rule="line")
    assert units["topk.ccp"].is_nan().all()
    assert units.filter(pl.col("status") == "missing").height == 1


# -- trace.reasoning_tokens ------------------------------------------------------------------------------


def _think_frames(text: str, chosen_nan_before: int = 0):
    pieces = re.findall(r"\s*\S+|\s+", text)
    vocab: dict[str, int] = {}
    record = _record([(piece, 0.9, []) for piece in pieces], vocab)
    if chosen_nan_before:
        chosen = record.chosen_logprobs.copy()
        chosen[:chosen_nan_before] = np.nan
        record = dataclasses.replace(record, chosen_logprobs=chosen)
    gens = records_to_frame([record], {"sample_id": ["s0"]})
    return gens, pl.DataFrame({"sample_id": ["s0"], "variant": [None], "reference": ["TCT CGA"]})


THINKING = f"<think>\nTCT pairs with AGA, so the answer is TCT.\n</think>\n\n{FENCE}\nTCT CGA\n{FENCE}"


def test_reasoning_tokens_on_a_think_response():
    """The tokens before the final content, on the generation unit only; NaN at atom and line."""
    gens, data = _think_frames(THINKING)
    units = score_generations(gens, data, "dna", reasoning="think", fence_rule="line")
    expected = len(re.findall(r"\s*\S+|\s+", THINKING[: THINKING.index("</think>") + len("</think>")]))
    generation = units.filter(pl.col("granularity") == "generation")
    assert generation["trace.reasoning_tokens"].to_list() == [float(expected)]
    assert generation["num_reasoning_tokens"].to_list() == [expected]
    assert units.filter(pl.col("granularity") != "generation")["trace.reasoning_tokens"].is_nan().all()
    assert not units.filter(pl.col("granularity") == "atom")["topk.ccp"].is_nan().any()


def test_reasoning_tokens_nan_without_a_format_or_a_logged_trace():
    gens, data = _think_frames(THINKING)
    assert score_generations(gens, data, "dna", fence_rule="line")["trace.reasoning_tokens"].is_nan().all()
    gens, data = _think_frames(THINKING, chosen_nan_before=2)  # a trace put back as text (imports)
    units = score_generations(gens, data, "dna", reasoning="think", fence_rule="line")
    assert units["trace.reasoning_tokens"].is_nan().all()
