"""The fast per-response paths and the batch paths (issue #15) against literal readings of
docs/evaluation.md §2–§6 and against ``evaluate`` response by response.

* extraction and the keyword filter (guard letters, reduced keyword list, fence search) against the
  literal rules of §2.2–§2.3;
* the clean answer's offset map (constant shift or asterisk pieces) against §3.1 and §3.6;
* ``dynamic_pairs_many`` (suffix shortcut, memoised tiny tables, batched compiled rows, large problems on
  their own) against the textbook recurrence of §6;
* ``evaluate_many`` against ``evaluate`` on structured responses: fences, keywords, wrong, missing and
  extra units, DK units, empty strings, at every granularity and both alignments.
"""

from __future__ import annotations

import re
import sys

from helpers.evaluation_helpers import assert_batch_equals_single, naive_alignment, task
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import saltbench.evaluation._alignment as alignment_module
import saltbench.evaluation._evaluate as evaluate_module
import saltbench.evaluation._extraction as extraction_module
from saltbench.core.vocabulary import ALIGNMENTS, GRANULARITIES
from saltbench.evaluation import (
    BAD_KEYWORDS,
    METRIC_KEYS,
    dynamic_pairs,
    evaluate,
    evaluate_many,
    extract_answer,
    is_dk,
    normalize_unit,
    passes_keyword_filter,
)
from saltbench.evaluation._alignment import dynamic_pairs_many
from saltbench.evaluation._extraction import CleanText

FENCE = "********"


# -- extraction: literal rules of docs/evaluation.md §2.2–§2.3 ------------------------------------------
def literal_keyword_filter(text: str) -> bool:
    low = text.lower()
    return not any(k in low for k in BAD_KEYWORDS)


def literal_extract(text: str | None, keyword_filter: bool = True, require_fence: bool = False):
    if not text:
        return ("", -1, -1)
    fences = [m.span() for m in re.finditer(r"\*{4,}", text)]
    if not fences:
        return ("", -1, -1) if require_fence else (text, 0, len(text))

    def qualifies(region: str) -> bool:
        return bool(region.replace("*", "").strip()) and (
            not keyword_filter or literal_keyword_filter(region)
        )

    for k in range(len(fences) // 2 - 1, -1, -1):
        start, end = fences[2 * k][0], fences[2 * k + 1][1]
        if qualifies(text[start:end]):
            return text[start:end], start, end
    if len(fences) % 2 and qualifies(text[fences[-1][0] :]):
        return text[fences[-1][0] :], fences[-1][0], len(text)
    return ("", -1, -1)


TEXT_PIECES = [
    FENCE,
    "****",
    "*****",
    "***",
    "*",
    " ",
    "\n",
    "\r\n",
    "\t",
    "\u00a0",
    "\u3000",
    "TCT",
    "CGA",
    "acgt",
    "5",
    "-3",
    "[1, 2]",
    "DK",
    "p1: True",
    "İ",  # lower-cases to "i" + a combining dot
    "\u212a",  # KELVIN SIGN, lower-cases to "k"
    "ǅ",
    *BAD_KEYWORDS,
    *(k.upper() for k in BAD_KEYWORDS),
    "WeekEnd",
    "tHuS",
    "N",
    "h",
    "U",
]
texts = st.lists(st.sampled_from(TEXT_PIECES) | st.text(max_size=3), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=texts)
def test_keyword_filter_equals_the_literal_substring_test(text):
    assert passes_keyword_filter(text) == literal_keyword_filter(text)


@settings(max_examples=400, deadline=None)
@given(text=st.none() | texts, keyword_filter=st.booleans(), require_fence=st.booleans())
def test_extraction_equals_the_literal_rules(text, keyword_filter, require_fence):
    got = extract_answer(text, keyword_filter=keyword_filter, require_fence=require_fence)
    assert got == literal_extract(text, keyword_filter, require_fence)


def test_guard_letters_are_exactly_the_letters_that_lower_case_to_them():
    """No character other than ``n``/``N`` (``h``/``H``, ``u``/``U``) lower-cases to a string containing
    ``n`` (``h``, ``u``), and every keyword contains one of them: the guard test on the original text is
    exact and no keyword is scanned always."""
    for letter in "nhu":
        found = {
            chr(c)
            for c in range(sys.maxunicode + 1)
            if not 0xD800 <= c <= 0xDFFF and letter in chr(c).lower()
        }
        assert found == {letter, letter.upper()}
    assert extraction_module._UNGUARDED == ()
    assert all(extraction_module._has_guard_letter(k) for k in BAD_KEYWORDS)


def test_stripped_characters_are_the_asterisk_and_every_whitespace_character():
    spaces = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert set(extraction_module._STARS_AND_SPACE) == spaces | {"*"}


# -- the clean answer and its offset map (§3.1, §3.6) --------------------------------------------------
regions = st.lists(
    st.sampled_from(["*", "**", FENCE, " ", "\n", "\u3000", "a", "TCT", "é"]), max_size=12
).map("".join)


@settings(max_examples=300, deadline=None)
@given(region=regions, start=st.integers(0, 50))
def test_clean_text_and_its_offset_map(region, start):
    clean = CleanText(region, start)
    assert clean.clean == region.replace("*", "").strip()
    response = "x" * start + region
    spans = [(p, p + 1) for p in range(len(clean.clean))]  # every clean character on its own
    starts, ends = clean.to_response(([p for p, _ in spans], [q for _, q in spans]))
    assert [response[a:b].replace("*", "") for a, b in zip(starts, ends)] == list(clean.clean)
    if clean.shift is not None:  # a constant shift: the clean text lies unchanged in the response
        assert response[clean.shift : clean.shift + len(clean.clean)] == clean.clean
        assert starts == [clean.shift + p for p in range(len(clean.clean))]


# -- dynamic alignment: every path against the textbook recurrence (§6) ------------------------------
SCORES = [(2, 1, 1), (1, 0, 0), (3, 2, 1), (1.5, 0.5, 0.25), (2, 1, 0), (0.3, 0.1, 0.2), (1, 5, 1)]
keys = st.lists(st.sampled_from(["A", "B", "C", "DK"]), max_size=12)


@st.composite
def problems(draw):
    """A response and a reference, often sharing a suffix or identical (the shortcut's cases)."""
    resp = draw(keys)
    ref = draw(keys)  # a DK reference unit is matched by nothing
    shape = draw(st.sampled_from(["free", "suffix", "identical"]))
    tail = draw(keys)
    if shape == "suffix":
        resp, ref = resp + tail, ref + tail
    elif shape == "identical":
        ref = list(resp)
    return resp, ref


def expected_pairs(resp, ref, scores):
    pairs, _ = naive_alignment(resp, ref, *scores)
    return [i for i, _ in pairs], [j for _, j in pairs]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.lists(problems(), max_size=12),
    scores=st.sampled_from(SCORES),
    route=st.sampled_from(["auto", "split", "large"]),
)
def test_dynamic_pairs_many_equals_the_textbook_recurrence(monkeypatch, batch, scores, route):
    """Any mix of problems in one call; ``split``: several batches, ``large``: every problem on its own."""
    with monkeypatch.context() as patch:
        if route == "split":
            patch.setattr(alignment_module, "BATCH_CELLS", 20)
        elif route == "large":
            patch.setattr(alignment_module, "BATCH_CELLS", 0)
            patch.setattr(alignment_module, "TINY_CELLS", 0)
        got = dynamic_pairs_many([(resp, [u == "DK" for u in resp], ref) for resp, ref in batch], *scores)
    assert got == [expected_pairs(resp, ref, scores) for resp, ref in batch]


def test_memoised_tiny_tables_return_fresh_lists():
    first = dynamic_pairs(["A"], [False], ["B"])
    first[0].append(99)
    assert dynamic_pairs(["A"], [False], ["B"]) == ([0], [0])


def test_a_batch_mixes_shortcuts_tiny_and_filled_tables():
    resp = ["A", "B", "C", "A", "B", "C", "A", "B"]
    ref = ["B", "C", "A", "B", "C", "A", "B", "C"]
    batch = [
        (["A"], ["B"]),  # tiny, memoised
        (resp, ref),  # filled by the kernel
        (ref, ref),  # identical: the suffix shortcut alone
        ([], ref),
        (resp + ["C", "C"], ref + ["C", "C"]),  # a suffix set aside, the rest filled
        (["DK"] * 5, ["A"] * 5),
    ]
    got = dynamic_pairs_many([(r, [u == "DK" for u in r], g) for r, g in batch])
    assert got == [expected_pairs(r, g, (2, 1, 1)) for r, g in batch]


# -- evaluate_many equals evaluate on structured responses ------------------------------------------
TASKS = {
    "dna": task("dna"),
    "logic": task("logic"),
    "matmul": task("matmul"),
    "two_sum": task("code", "two_sum"),
    "rotate_matrix": task("code", "rotate_matrix"),
}
codon = st.text(alphabet="ACGT", min_size=3, max_size=3)
integer = st.integers(-20, 20).map(str)
REFERENCES = {
    "dna": st.lists(codon, min_size=1, max_size=25).map(" ".join),
    "logic": st.lists(
        st.builds(lambda i, v: f"p{i}: {v}", st.integers(1, 9), st.sampled_from(["True", "False"])),
        min_size=1,
        max_size=6,
    ).map("\n".join),
    "matmul": st.lists(st.lists(integer, min_size=2, max_size=3).map(" ".join), min_size=1, max_size=4).map(
        "\n".join
    ),
    "two_sum": st.lists(integer, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
    "rotate_matrix": st.lists(st.lists(integer, min_size=2, max_size=2), min_size=1, max_size=3).map(
        lambda m: "[" + ", ".join("[" + ", ".join(r) + "]" for r in m) + "]"
    ),
}
WRAPS = [
    "{body}",  # unfenced
    "Let me think.\n" + FENCE + "\n{body}\n" + FENCE,
    FENCE + "\n{body}\n" + FENCE + "\nnotes\n" + FENCE + "\nthe answer is\n" + FENCE,  # last pair rejected
    "scratch " + FENCE + "\n{body}",  # one fence
    FENCE + "\nfinal: {body}\n" + FENCE,  # keyword: no answer
    "Therefore:\r\n" + FENCE + "\r\n{body}\r\n" + FENCE + "\r\n",
    "",
]


@st.composite
def response_for(draw, reference: str):
    """The reference's tokens with wrong, missing, extra and DK tokens, in one of the fence formats."""
    lines = []
    for line in reference.split("\n"):
        tokens = []
        for token in line.split(" "):
            action = draw(st.sampled_from(["keep"] * 6 + ["wrong", "drop", "extra", "dk"]))
            if action == "keep":
                tokens.append(token)
            elif action == "wrong":
                tokens.append(token[::-1] + "7")
            elif action == "extra":
                tokens += [token, draw(st.sampled_from(["TCT", "9", "p3: True", token]))]
            elif action == "dk":
                tokens.append(draw(st.sampled_from(["DK", "<dk>", "[DK]"])))
        lines.append(" ".join(tokens))
    if draw(st.booleans()):
        lines += draw(st.lists(st.sampled_from(["AAA GGG", "p9: False", "1 2"]), max_size=2))
    wrap = draw(st.sampled_from(WRAPS))
    return wrap.format(body="\n".join(lines))


@st.composite
def batches(draw):
    name = draw(st.sampled_from(sorted(TASKS)))
    references = draw(st.lists(REFERENCES[name], min_size=1, max_size=10))
    responses = [draw(response_for(r)) for r in references]
    if draw(st.booleans()):  # empty strings on either side
        responses.append("")
        references.append(draw(REFERENCES[name] | st.just("")))
    return name, responses, references


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=batches(), alignment=st.sampled_from(ALIGNMENTS), chunk=st.sampled_from([256, 1, 3]))
def test_evaluate_many_equals_evaluate_on_structured_responses(monkeypatch, batch, alignment, chunk):
    """Rows, spans and metrics of the batch path are those of ``evaluate``, in any chunking of the batch."""
    name, responses, references = batch
    t = TASKS[name]
    with monkeypatch.context() as patch:
        patch.setattr(evaluate_module, "CHUNK", chunk)
        frame = evaluate_many(responses, references, t, alignment=alignment)
    assert_batch_equals_single(frame, responses, references, t, alignment, METRIC_KEYS)


@settings(max_examples=60, deadline=None)
@given(batch=batches(), granularity=st.sampled_from(GRANULARITIES))
def test_dynamic_evaluate_pairs_are_the_textbook_pairs_of_its_units(batch, granularity):
    """``evaluate``'s dynamic pairs are the textbook pairs of its units' comparison keys (§4.1), DK units
    never matching (§4.2)."""
    name, responses, references = batch
    t = TASKS[name]
    for response, reference in zip(responses, references):
        ev = evaluate(response, reference, t, granularity=granularity, alignment="dynamic")
        never = "\x00never"  # a key no reference unit has
        resp_keys = [never if is_dk(u) else normalize_unit(u, t) for u in ev.response_units]
        ref_keys = [normalize_unit(u, t) for u in ev.reference_units]
        got = [
            (
                -1 if c.response_index is None else c.response_index,
                -1 if c.reference_index is None else c.reference_index,
            )
            for c in ev.comparisons
        ]
        assert got == naive_alignment(resp_keys, ref_keys)[0]
