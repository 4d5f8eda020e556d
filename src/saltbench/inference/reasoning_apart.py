"""Reasoning that a server or a harness returns apart from the answer, put back where scoring looks for it
(docs/reasoning.md §4, docs/backends.md §9.4).

A reasoning model's record must be its whole output in the model's ``reasoning_format``, so that the answer is
looked for only after the reasoning (:func:`saltbench.evaluation.final_content`) and the thinking is never
scored. A chat server with a reasoning parser (vLLM's ``--reasoning-parser``, hosted reasoning APIs) returns
the reasoning apart instead — in ``message.reasoning`` (vLLM) or ``message.reasoning_content`` (older vLLM,
DeepSeek's API) — and the answer alone as ``content``, while its log-probabilities may cover every
generated token (vLLM) or the answer's only (hosted APIs). :func:`place_reasoning` turns the token texts of
such a response into the record's token texts:

1. the tokens already hold the reasoning in the format (vLLM's log-probabilities cover every generated token,
   ``<think>…</think>`` or the harmony channels included): kept as they are;
2. no answer (a trace cut inside its reasoning): kept as they are — the reasoning never ended;
3. the tokens are the answer alone: the reasoning, wrapped in the format (:func:`wrap_reasoning`), goes in
   front as tokens without log-probabilities;
4. the tokens are reasoning then answer, without the format's markers (special tokens decoded to nothing):
   the markers are written into the texts of the tokens at the reasoning's start and end, so every token
   keeps its log-probability and the token count stays the model's.

Anything else is a :class:`~saltbench.inference.openai.responses.MalformedResponse` naming both texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from saltbench.core.vocabulary import ReasoningFormat
from saltbench.evaluation import final_content

REASONING_WRAPPERS: dict[ReasoningFormat, tuple[str, str]] = {
    "think": ("<think>", "</think>\n\n"),
    "harmony": (
        "<|channel|>analysis<|message|>",
        "<|end|><|start|>assistant<|channel|>final<|message|>",
    ),
}
"""How reasoning returned apart is put in front of the answer, per ``reasoning_format``: the opening and the
closing text around it."""


def wrap_reasoning(reasoning: str, reasoning_format: ReasoningFormat) -> str:
    """``reasoning`` in the model's format, closed, so that what follows it is the final content.

    Examples:
        >>> wrap_reasoning("A pairs with T.", "think")
        '<think>A pairs with T.</think>\\n\\n'
        >>> wrap_reasoning("", "think")  # no reasoning at all: an empty, closed block
        '<think></think>\\n\\n'
    """
    opening, closing = REASONING_WRAPPERS[reasoning_format]
    return opening + reasoning + closing


@dataclass(frozen=True)
class PlacedReasoning:
    """The record's token texts (:func:`place_reasoning`): ``texts``, one per returned token, and ``prefix``,
    the wrapped reasoning to put in front as tokens without log-probabilities (``None``: nothing)."""

    texts: list[str]
    prefix: str | None = None


def place_reasoning(
    texts: Sequence[str], content: str, reasoning: str, reasoning_format: ReasoningFormat
) -> PlacedReasoning | None:
    """The token texts of a response whose ``reasoning`` came apart from its ``content``, made the whole
    output in ``reasoning_format`` (module docstring, cases 1–4); ``None`` when the tokens are neither the
    answer nor reasoning then answer.

    Examples:
        >>> place_reasoning(["<think>", "R", "</think>", "\\n\\n", "TCT"], "TCT", "R", "think").prefix is None
        True
        >>> place_reasoning(["TCT"], "TCT", "R", "think").prefix
        '<think>R</think>\\n\\n'
        >>> place_reasoning(["R", " ok", "\\n\\n", "TCT"], "TCT", "R ok", "think").texts
        ['<think>R', ' ok', '\\n\\n</think>\\n\\n', 'TCT']
    """
    joined = "".join(texts)
    window = final_content(joined, reasoning_format)
    if window is not None and joined[window[0] : window[1]].strip() == content.strip():
        return PlacedReasoning(list(texts))
    if not content.strip() and window is None:
        return PlacedReasoning(list(texts))
    if joined == content:
        return PlacedReasoning(list(texts), wrap_reasoning(reasoning, reasoning_format))
    cut = len(joined) - len(content)
    if joined.endswith(content) and reasoning.strip() in joined[:cut]:
        opening, closing = REASONING_WRAPPERS[reasoning_format]
        return PlacedReasoning(_insert(_insert(list(texts), cut, closing), 0, opening))
    return None


def _insert(texts: list[str], at: int, marker: str) -> list[str]:
    """``texts`` with ``marker`` written at character ``at`` of their concatenation: at the end of the token
    that ends there (at the start of the first token for ``at == 0``), else inside the token that spans it."""
    end = 0
    for i, text in enumerate(texts):
        start, end = end, end + len(text)
        if at == 0 and i == 0:
            texts[0] = marker + text
            return texts
        if start < at <= end:
            texts[i] = text[: at - start] + marker + text[at - start :]
            return texts
    raise ValueError(f"position {at} is beyond the texts ({end} characters)")


__all__ = ["REASONING_WRAPPERS", "PlacedReasoning", "place_reasoning", "wrap_reasoning"]
