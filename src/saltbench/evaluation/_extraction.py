"""Fenced-answer extraction (docs/evaluation.md §2), the bad-keyword filter, and the clean answer with its
map back to response offsets (§3.1, §3.6).

A *fence token* is a maximal run of four or more ``*`` characters anywhere in the text (it does not need a
line of its own: ``x ********TCT******** y`` is fenced). Fence tokens are paired by position,
(F0, F1), (F2, F3), ..., and the pairs are tried from the last to the first; see :func:`extract_answer`.

Everything here runs once per response, so nothing is set up per call: the fence pattern and the reduced
keyword lists are built at import.
"""

from __future__ import annotations

import bisect
import itertools
import re
from typing import Literal

from saltbench.core.vocabulary import FENCE_RULES, AnswerStatus, FenceRule, FinishReason, ReasoningFormat
from saltbench.evaluation._reasoning import final_content

BAD_KEYWORDS: tuple[str, ...] = (
    "the answer is",
    "final answer",
    "the final answer is:",
    "the output is:",
    "output:",
    "answer:",
    "final output:",
    "final:",
    "final answer is:",
    "cannot conclude",
    "can't conclude",
    "can not conclude",
    "therefore",
    "thus",
    "hence",
    "answer",
    "output",
    "final",
    "input",
    "these",
    "invalid",
    "with",
    "without",
    "end",
)
"""Lower-case substrings that disqualify a candidate answer region (paper behaviour, docs/evaluation.md §2.3).

This is a bare substring test, so words such as ``weekend`` or ``lavender`` (``end``) also reject a
region (docs/compatibility.md §1.2; switch the filter off with ``keyword_filter=False``).
"""

_MINIMAL_KEYWORDS: tuple[str, ...] = tuple(
    k for k in BAD_KEYWORDS if not any(other != k and other in k for other in BAD_KEYWORDS)
)
"""The keywords that contain no other keyword (``answer`` stands for ``the answer is``, ``answer:``, ...):
a text contains some keyword exactly when it contains one of these."""


def _has_guard_letter(text: str) -> bool:
    """Whether ``text.lower()`` contains ``n``, ``h`` or ``u``, i.e. ``text`` contains one of ``nNhHuU`` (no
    other character lower-cases to a string containing them).

    Every keyword of :data:`_MINIMAL_KEYWORDS` contains one of these letters (any that did not would be
    scanned always), and answers made of digits, punctuation or the DNA bases contain none of them, so
    such answers pass the keyword filter after six single-character scans, without lower-casing.
    """
    return "n" in text or "h" in text or "u" in text or "N" in text or "H" in text or "U" in text


_UNGUARDED = tuple(k for k in _MINIMAL_KEYWORDS if not _has_guard_letter(k))  # none at present

# The maximal runs of >= 4 '*' (leftmost-greedy), written with a literal prefix that `re` searches for.
_FENCE_RE = re.compile(r"\*\*\*\*+")
_NON_STAR = re.compile(r"[^*]+")
_STARS_AND_SPACE = "*" + "".join(chr(c) for c in range(0x3001) if chr(c).isspace())  # str.isspace: < U+3001

NO_ANSWER: tuple[str, int, int] = ("", -1, -1)
"""What :func:`extract_answer` returns when no answer region qualifies."""


def passes_keyword_filter(text: str) -> bool:
    """True when ``text.lower()`` contains none of :data:`BAD_KEYWORDS` (docs/evaluation.md §2.3).

    Only the keywords that contain no other keyword are scanned, and those with a guard letter
    (:func:`_has_guard_letter`) only when the text contains one.
    """
    if _has_guard_letter(text):
        low = text.lower()
        return not any(k in low for k in _MINIMAL_KEYWORDS)
    return not (_UNGUARDED and any(k in text.lower() for k in _UNGUARDED))


def strip_fence_markers(text: str) -> str:
    """Remove every ``*`` character anywhere in ``text``, then strip surrounding whitespace."""
    return text.replace("*", "").strip()


class CleanText:
    """The clean answer of a region of a response, with a map from clean offsets to response offsets.

    ``clean = region.replace("*", "").strip()`` (docs/evaluation.md §3.1) where
    ``region = response[region_start:...]``. A clean span ``[p, q)`` maps to the response span from the
    position of clean character ``p`` to the position of clean character ``q - 1`` plus one, so the
    response slice, once its ``*`` are removed, equals ``clean[p:q]`` exactly (asterisks inside a unit are
    inside its span, §3.6).

    A region whose asterisks all lie at its two ends (a fenced answer) is one asterisk-free piece; the map
    is then a constant shift, ``shift`` (the response offset of clean offset 0; ``None`` otherwise), found
    without splitting the region.
    """

    __slots__ = ("clean", "shift", "_lead", "_clean_starts", "_orig_starts")

    def __init__(self, region: str, region_start: int) -> None:
        clean = region.strip(_STARS_AND_SPACE)
        if "*" not in clean:  # one asterisk-free piece: the stripped asterisks were all outside it
            self.clean = clean
            # clean[0] is neither '*' nor whitespace, the only characters before it
            self.shift: int | None = region_start + (region.find(clean[0]) if clean else 0)
            return
        segments = [(m.start(), m.group()) for m in _NON_STAR.finditer(region)]  # asterisk-free pieces
        nostar = "".join(piece for _, piece in segments)
        left = nostar.lstrip()
        self.clean = left.rstrip()
        self.shift = None
        # clean offset + lead = offset in the asterisk-free text, located by bisection
        self._lead = len(nostar) - len(left)
        self._clean_starts = list(itertools.accumulate((len(p) for _, p in segments[:-1]), initial=0))
        self._orig_starts = [region_start + start for start, _ in segments]

    def _position(self, p: int) -> int:
        """Response offset of clean character ``p`` (0 <= p < len(clean)) when the map is not a shift."""
        q = p + self._lead
        k = bisect.bisect_right(self._clean_starts, q) - 1
        return self._orig_starts[k] + q - self._clean_starts[k]

    def to_response(self, spans: tuple[list[int], list[int]]) -> tuple[list[int], list[int]]:
        """Map clean spans (starts, ends) to response spans.

        An empty span maps to an empty span after its left neighbour.
        """
        starts, ends = spans
        if self.shift is not None:  # the response offset of clean offset 0
            b = self.shift
            return [p + b for p in starts], [q + b for q in ends]
        out_starts: list[int] = []
        out_ends: list[int] = []
        for p, q in zip(starts, ends):
            if q > p:
                out_starts.append(self._position(p))
                out_ends.append(self._position(q - 1) + 1)
            else:
                x = self._position(p - 1) + 1 if p > 0 else self._position(0)
                out_starts.append(x)
                out_ends.append(x)
        return out_starts, out_ends


Answer = tuple[str, int, int, CleanText | None]
"""``(region, start, end, clean)``: :func:`extract_answer`'s triple and the region's :class:`CleanText`
(``None`` when there is no answer)."""

_NONE: Answer = (*NO_ANSWER, None)


def _fence_spans(text: str, offset: int = 0) -> list[tuple[int, int]]:
    """The fence tokens of ``text`` as ``(start, end)``, in order, shifted by ``offset``.

    The tokens come from one ``findall`` (strings, no match objects); each is then located with
    ``str.find`` from the end of the previous one. The first occurrence there of ``len(token)`` asterisks is
    the token itself: a run in between would be shorter than four (else it would be a token) and cannot
    hold it, and the token's run is maximal, so the occurrence starts where the run does.
    """
    spans = []
    end = 0
    for token in _FENCE_RE.findall(text):
        start = text.find(token, end)
        end = start + len(token)
        spans.append((start + offset, end + offset))
    return spans


def _line_fences(
    text: str, fences: list[tuple[int, int]], lo: int, hi: int, *, open_at_line_end: bool
) -> list[tuple[int, int]]:
    """The fence tokens the ``line`` rule keeps (docs/compatibility.md §1.3), in order, of the fences of the
    window ``text[lo:hi]``. A fence that starts its line (nothing but whitespace between the line break, or
    the window's edge, and it) is kept. A fence that only ends its line (nothing but whitespace after it) is
    kept as a closing fence — after an odd number of kept fences, as in ``TCT CGA********`` — and, with
    ``open_at_line_end``, also as an opening one (``Here it is: ********`` then the answer's lines)."""
    kept: list[tuple[int, int]] = []
    for start, end in fences:
        line_start = max(text.rfind("\n", lo, start) + 1, lo)
        line_end = text.find("\n", end, hi)
        starts_line = not text[line_start:start].strip()
        ends_line = not text[end : hi if line_end < 0 else line_end].strip()
        if starts_line or (ends_line and (open_at_line_end or len(kept) % 2 == 1)):
            kept.append((start, end))
    return kept


def _paired(
    text: str, fences: list[tuple[int, int]], lo: int, hi: int, keyword_filter: bool, require_fence: bool
) -> tuple[Answer, AnswerKind]:
    """The answer of the final content ``text[lo:hi]`` given its fence tokens (docs/evaluation.md §2.2): the
    pairs from the last to the first, then the unpaired last fence to ``hi``; the whole window when there is
    no fence (unless ``require_fence``)."""
    if not fences:
        if require_fence or lo == hi:
            return _NONE, "none"
        window = text[lo:hi]
        return (window, lo, hi, CleanText(window, lo)), "unfenced"
    k = len(fences) - 2 - len(fences) % 2  # the opening fence of the last pair
    while k >= 0:  # the pairs, from the last to the first
        answer = _qualified(text, fences[k][0], fences[k + 1][1], keyword_filter)
        if answer is not None:
            return answer, "pair"
        k -= 2
    if len(fences) % 2:  # then the unpaired last fence, to the end of the final content
        answer = _qualified(text, fences[-1][0], hi, keyword_filter)
        if answer is not None:
            return answer, "trailing"
    return _NONE, "none"


def _qualified(text: str, start: int, end: int, keyword_filter: bool) -> Answer | None:
    """The candidate region ``text[start:end]`` with its clean text when it qualifies (docs/evaluation.md
    §2.2): something is left after deleting every ``*`` and stripping, and, if filtered, no keyword."""
    candidate = text[start:end]
    clean = CleanText(candidate, start)
    if clean.clean and (not keyword_filter or passes_keyword_filter(candidate)):
        return candidate, start, end, clean
    return None


def check_fence_rule(fence_rule: object) -> FenceRule:
    """``fence_rule`` if it is one of :data:`~saltbench.core.vocabulary.FENCE_RULES`."""
    if fence_rule not in FENCE_RULES:
        raise ValueError(f"fence_rule must be one of {', '.join(FENCE_RULES)}, got {fence_rule!r}")
    return fence_rule


AnswerKind = Literal["pair", "trailing", "unfenced", "none", "unfinished"]
"""How :func:`locate_answer` found the answer: between a pair of fences; after the unpaired last fence to
the end of the final content; the whole unfenced final content; nothing qualifies; the reasoning never
ended (no final content)."""


def locate_answer(
    text: str | None,
    keyword_filter: bool = True,
    require_fence: bool = False,
    reasoning: ReasoningFormat | None = None,
    fence_rule: FenceRule = "positional",
) -> tuple[Answer, AnswerKind]:
    """:func:`find_answer`, with how the answer was found (:data:`AnswerKind`)."""
    if not text:
        return _NONE, "none"
    lo, hi = 0, len(text)
    if reasoning is not None:
        bounds = final_content(text, reasoning)
        if bounds is None:
            return _NONE, "unfinished"
        lo, hi = bounds
    window = text if (lo, hi) == (0, len(text)) else text[lo:hi]
    fences = _fence_spans(window, lo) if "****" in window else []
    if fence_rule == "positional":
        return _paired(text, fences, lo, hi, keyword_filter, require_fence)
    # the line rule: fences that start a line open and close, fences that end one only close; a fence that
    # ends a line may open one too where that gives a pair, or where it is the only fence there is
    # (a response with a fence is never read as unfenced; docs/compatibility.md §1.3)
    strict = _line_fences(text, fences, lo, hi, open_at_line_end=False)
    found = _paired(text, strict, lo, hi, keyword_filter, require_fence)
    if found[1] != "pair":
        loose = _line_fences(text, fences, lo, hi, open_at_line_end=True)
        if loose != strict:
            other = _paired(text, loose, lo, hi, keyword_filter, require_fence)
            if other[1] == "pair" or not strict:
                return other
    return found


def find_answer(
    text: str | None,
    keyword_filter: bool = True,
    require_fence: bool = False,
    reasoning: ReasoningFormat | None = None,
    fence_rule: FenceRule = "positional",
) -> Answer:
    """:func:`extract_answer` together with the answer's :class:`CleanText` (computed once, while checking
    that the region qualifies)."""
    return locate_answer(text, keyword_filter, require_fence, reasoning, fence_rule)[0]


def response_status(
    text: str | None,
    finish_reason: FinishReason | str,
    *,
    keyword_filter: bool = True,
    require_fence: bool = False,
    reasoning: ReasoningFormat | None = None,
    fence_rule: FenceRule = "positional",
) -> AnswerStatus:
    """What a response holds (docs/reasoning.md §2), from its text and its ``finish_reason``:

    * ``error`` — an error row (``finish_reason == "error"``);
    * ``answered`` — a fenced answer in the final content: between a pair of fences, or after a last
      unpaired fence when the model ended by itself;
    * ``truncated`` — the budget was reached (``finish_reason == "length"``) before a complete answer:
      inside the reasoning, before any fence, or after an opening fence;
    * ``no_fence`` — the model ended without a fenced answer (unfenced text, a reasoning it never closed,
      or no qualifying region).

    Examples:
        >>> response_status("<think>A pairs with", "length", reasoning="think")
        'truncated'
        >>> response_status("********\\nTCT\\n********", "length")
        'answered'
        >>> response_status("TCT CGA", "eos")
        'no_fence'
    """
    if finish_reason == "error":
        return "error"
    _, kind = locate_answer(text, keyword_filter, require_fence, reasoning, fence_rule)
    if kind == "pair" or (kind == "trailing" and finish_reason != "length"):
        return "answered"
    return "truncated" if finish_reason == "length" else "no_fence"


def extract_answer(
    text: str | None,
    *,
    keyword_filter: bool = True,
    require_fence: bool = False,
    reasoning: ReasoningFormat | None = None,
    fence_rule: FenceRule = "positional",
) -> tuple[str, int, int]:
    """Find the answer region of a response: ``(region, start, end)`` with ``region == text[start:end]``.

    Rules (paper-compatible, docs/evaluation.md §2.2), with F the fence tokens in order:

    * ``None`` or ``""`` → ``("", -1, -1)``.
    * ``|F| = 0`` → the whole text, unchanged, as ``(text, 0, len(text))`` — no keyword filter
      (docs/compatibility.md §1.1). With ``require_fence=True`` (our fix of §1.1) an unfenced response
      has no answer: ``("", -1, -1)``.
    * ``|F| = 1`` → from that fence to the end of the text, if it qualifies.
    * ``|F| >= 2`` → pairs ``(F0, F1), (F2, F3), ...`` tried from the last pair to the first; a pair's
      region runs from the opening fence's start to the closing fence's end (fences included). The first
      qualifying region wins. If none does and ``|F|`` is odd, the unpaired last fence is tried as in the
      one-fence case.

    A region *qualifies* when, after deleting every ``*`` and stripping, it is non-empty and (with
    ``keyword_filter=True``) its lower-cased text contains none of :data:`BAD_KEYWORDS`.

    ``reasoning`` (a model's reasoning format, docs/reasoning.md §1): the rules apply to the final content
    after the reasoning only ("the text" above), offsets staying those of the whole response; a reasoning
    that never ends leaves no answer. ``fence_rule="line"``: only the fence tokens that start a line, or end
    a line and close a kept fence, are in F, so a fence quoted in prose is none; where that gives no pair, F
    also takes the fences that end a line when that gives a pair or when F would be empty without them
    (docs/compatibility.md §1.3).

    Examples:
        >>> extract_answer("blah\\n********\\nTCT CGA\\n")
        ('********\\nTCT CGA\\n', 5, 22)
        >>> extract_answer("  TCT CGA  ")
        ('  TCT CGA  ', 0, 11)
        >>> extract_answer("********\\nfinal answer: TCT CGA\\n********")
        ('', -1, -1)
        >>> thought = "<think>print '********' first</think>\\n"
        >>> extract_answer(thought + "********\\nTCT\\n********", reasoning="think")
        ('********\\nTCT\\n********', 38, 59)
    """
    region, start, end, _ = find_answer(text, keyword_filter, require_fence, reasoning, fence_rule)
    return region, start, end
