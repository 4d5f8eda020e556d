"""Second-pass estimators: the model is shown its own answer and asked about it (docs/confidence.md §8).

Two kinds, each per generation, per line and per atom (where a task's atoms are few):

* **verbalized confidence** — the model is asked for a number from 0 to 100 that its answer (or one line,
  or one item of it) is correct; the reply is parsed strictly (:func:`parse_verbalized`): one number in
  [0, 100], an optional ``%`` and a final full stop, nothing else. Confidence ``= number / 100``, higher =
  more confident. Anything else is a status of its own (``unparsable``, ``out_of_range``, ``empty``), its
  value NaN — never a silent 0 or 1.
* **P(True)** — the model is asked whether its answer (line, item) is correct, to reply True or False; the
  first token of the reply is read, not generated text: ``P(True) = m_T / (m_T + m_F)`` with ``m_T`` and
  ``m_F`` the probability mass of the tokens that spell *true* and *false* among that token's stored
  top-k candidates (:func:`p_true`); higher = more confident. Neither among them: status ``no_true_false``,
  value NaN.

The prompts (:func:`second_pass_instruction`) quote the task's own instruction and the model's extracted
answer; the model's chat template is applied by its backend like any prompt. Their extra cost is one short
generation per unit asked about: the prompt's tokens are scored, ``VERBALIZED_BUDGET`` or 1 tokens generated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from saltbench.core.vocabulary import (
    SECOND_PASS_KINDS,
    SECOND_PASS_STATUSES,
    Granularity,
    SecondPassKind,
    SecondPassStatus,
)

VERBALIZED_BUDGET = 8
"""Tokens a verbalized reply may take: a number, a percent sign, a full stop and an end of turn."""

_SCOPE = {
    "generation": ("the proposed answer", "entirely correct"),
    "line": ("line {index} of the proposed answer, `{unit}`,", "correct"),
    "atom": ("item {index} of the proposed answer, `{unit}`,", "correct"),
}
_QUESTION = {
    "verbalized": "How likely is it that {what} is {how}? "
    "Reply with one number from 0 to 100 and nothing else.",
    "p_true": "Is {what} {how}? Reply True or False.",
}


def second_pass_instruction(
    kind: SecondPassKind,
    instruction: str,
    answer: str,
    *,
    granularity: Granularity = "generation",
    unit: str | None = None,
    index: int | None = None,
) -> str:
    """The instruction of a second pass about ``answer`` (the extracted answer) to the task's ``instruction``;
    for a line or an atom, ``unit`` is its text and ``index`` its 1-based position.

    Example:
        >>> print(second_pass_instruction("p_true", "Complement: ACG", "TGC"))
        Complement: ACG
        <BLANKLINE>
        Proposed answer:
        TGC
        <BLANKLINE>
        Is the proposed answer entirely correct? Reply True or False.
    """
    if kind not in SECOND_PASS_KINDS:
        raise ValueError(f"kind must be one of {SECOND_PASS_KINDS}, got {kind!r}")
    if granularity not in _SCOPE:
        raise ValueError(f"granularity must be one of {tuple(_SCOPE)}, got {granularity!r}")
    what, how = _SCOPE[granularity]
    if granularity != "generation":
        if unit is None or index is None or index < 1:
            raise ValueError(f"a {granularity} question needs its unit text and a 1-based index")
        what = what.format(index=index, unit=unit)
    question = _QUESTION[kind].format(what=what, how=how)
    return f"{instruction.rstrip()}\n\nProposed answer:\n{answer.strip()}\n\n{question}"


_NUMBER = re.compile(r"(?P<number>\d{1,3}(?:\.\d+)?)\s*(?P<percent>%?)\s*\.?")


def parse_verbalized(reply: str) -> tuple[float, SecondPassStatus]:
    """The confidence a verbalized reply states, in [0, 1], and its status (module docstring): the whole
    reply, stripped, must be one number from 0 to 100, with an optional ``%`` and a final full stop.

    Example:
        >>> [parse_verbalized(r) for r in ("85", " 85% ", "100.", "0.5")]
        [(0.85, 'ok'), (0.85, 'ok'), (1.0, 'ok'), (0.005, 'ok')]
        >>> [parse_verbalized(r)[1] for r in ("", "about 80", "80-90", "150", "eighty")]
        ['empty', 'unparsable', 'unparsable', 'out_of_range', 'unparsable']
    """
    text = reply.strip()
    if not text:
        return math.nan, "empty"
    match = _NUMBER.fullmatch(text)
    if match is None:
        return math.nan, "unparsable"
    value = float(match["number"])
    if value > 100:
        return math.nan, "out_of_range"
    return value / 100, "ok"


def true_false_ids(vocabulary: Iterable[tuple[int, str]]) -> tuple[frozenset[int], frozenset[int]]:
    """The token ids whose text, stripped and lower-cased, is ``true`` and ``false`` (``" True"``, ``"True"``,
    ``"true"`` ... each model's tokenizer spells them its own way), from ``(id, decoded text)`` pairs."""
    true, false = set(), set()
    for token_id, text in vocabulary:
        word = text.strip().lower()
        if word == "true":
            true.add(int(token_id))
        elif word == "false":
            false.add(int(token_id))
    return frozenset(true), frozenset(false)


SPELLINGS: dict[str, tuple[str, ...]] = {
    "true": ("True", "true", " True", " true"),
    "false": ("False", "false", " False", " false"),
}
"""How a reply may spell each word (a leading space where the tokenizer joins it to the word)."""


def spelled_first_ids(encode: Callable[[str], Sequence[int]]) -> tuple[frozenset[int], frozenset[int]]:
    """The first token id of each of the :data:`SPELLINGS` of *true* and *false* as ``encode`` (a tokenizer
    without special tokens) writes them, less the ids both words start with: the token a reply commits to
    the word with. A tokenizer with a token for the whole word gives that token; a character-level one gives
    ``T``, ``t`` and ``F``, ``f`` (`` `` starts both, so it is dropped).

    Example:
        >>> true, false = spelled_first_ids(lambda text: [ord(c) for c in text])  # a token per character
        >>> sorted(chr(i) for i in true), sorted(chr(i) for i in false)
        (['T', 't'], ['F', 'f'])
    """
    true, false = ({int(ids[0]) for w in SPELLINGS[word] if len(ids := encode(w))} for word in SPELLINGS)
    return frozenset(true - false), frozenset(false - true)


def p_true(
    chosen_id: int,
    chosen_logprob: float,
    topk_ids: npt.ArrayLike,
    topk_logprobs: npt.ArrayLike,
    true_ids: Sequence[int] | frozenset[int],
    false_ids: Sequence[int] | frozenset[int],
) -> tuple[float, SecondPassStatus]:
    """P(True) of the reply's first token (module docstring): the mass of the ``true_ids`` over that of the
    ``true_ids`` and ``false_ids`` among the chosen token and its top-k candidates (each id counted once;
    absent candidates are NaN log-probabilities).

    Example:
        >>> value, status = p_true(5, math.log(0.6), [7, 9], [math.log(0.2), math.log(0.1)], {5}, {7})
        >>> round(value, 6), status
        (0.75, 'ok')
        >>> p_true(3, math.log(0.9), [4], [math.log(0.05)], {5}, {7})
        (nan, 'no_true_false')
    """
    ids = np.concatenate([[chosen_id], np.asarray(topk_ids, dtype=np.int64).ravel()])
    logprobs = np.concatenate([[chosen_logprob], np.asarray(topk_logprobs, dtype=np.float64).ravel()])
    _, first = np.unique(ids, return_index=True)  # the chosen token may be listed again among the top-k
    ids, probs = ids[first], np.exp(np.nan_to_num(logprobs[first], nan=-np.inf))
    mass_true = float(probs[np.isin(ids, list(true_ids))].sum())
    mass_false = float(probs[np.isin(ids, list(false_ids))].sum())
    if mass_true + mass_false <= 0:
        return math.nan, "no_true_false"
    return mass_true / (mass_true + mass_false), "ok"


__all__ = [
    "SECOND_PASS_KINDS",
    "SECOND_PASS_STATUSES",
    "VERBALIZED_BUDGET",
    "SecondPassKind",
    "SecondPassStatus",
    "SPELLINGS",
    "p_true",
    "parse_verbalized",
    "second_pass_instruction",
    "spelled_first_ids",
    "true_false_ids",
]
