"""Fenced-answer extraction (docs/evaluation.md §2) and the bad-keyword filter.

A *fence token* is a maximal run of four or more ``*`` characters anywhere in the text (it does not need a
line of its own: ``x ********TCT******** y`` is fenced). Fence tokens are paired by position,
(F0, F1), (F2, F3), ..., and the pairs are tried from the last to the first; see :func:`extract_answer`.
"""

from __future__ import annotations

import re

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

_KEYWORD_RE = re.compile("|".join(re.escape(k) for k in sorted(BAD_KEYWORDS, key=len, reverse=True)))
_FENCE_RE = re.compile(r"\*{4,}")  # leftmost-greedy matching yields exactly the maximal runs of >= 4 '*'

NO_ANSWER: tuple[str, int, int] = ("", -1, -1)
"""What :func:`extract_answer` returns when no answer region qualifies."""


def passes_keyword_filter(text: str) -> bool:
    """True when ``text.lower()`` contains none of :data:`BAD_KEYWORDS`."""
    return _KEYWORD_RE.search(text.lower()) is None


def strip_fence_markers(text: str) -> str:
    """Remove every ``*`` character anywhere in ``text``, then strip surrounding whitespace."""
    return text.replace("*", "").strip()


def _acceptable(candidate: str, keyword_filter: bool) -> bool:
    """A candidate region qualifies when it has non-``*``, non-blank content and passes the filter."""
    if not strip_fence_markers(candidate):
        return False
    return not keyword_filter or passes_keyword_filter(candidate)


def extract_answer(
    text: str | None, *, keyword_filter: bool = True, require_fence: bool = False
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

    Examples:
        >>> extract_answer("blah\\n********\\nTCT CGA\\n")
        ('********\\nTCT CGA\\n', 5, 22)
        >>> extract_answer("  TCT CGA  ")
        ('  TCT CGA  ', 0, 11)
        >>> extract_answer("********\\nfinal answer: TCT CGA\\n********")
        ('', -1, -1)
    """
    if not text:
        return NO_ANSWER
    fences = [m.span() for m in _FENCE_RE.finditer(text)]
    if not fences:
        return NO_ANSWER if require_fence else (text, 0, len(text))
    n_pairs = len(fences) // 2
    for k in range(n_pairs - 1, -1, -1):
        start = fences[2 * k][0]
        end = fences[2 * k + 1][1]
        candidate = text[start:end]
        if _acceptable(candidate, keyword_filter):
            return candidate, start, end
    if len(fences) % 2 == 1:
        start = fences[-1][0]
        candidate = text[start:]
        if _acceptable(candidate, keyword_filter):
            return candidate, start, len(text)
    return NO_ANSWER
