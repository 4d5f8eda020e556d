"""One imported response, the error every refusal raises, and the conversion of a response into a generation
record (docs/backends.md §9.4).

Every format reader returns :class:`ImportedResponse` objects; :func:`to_record` turns one into the
:class:`~saltbench.inference.records.GenerationRecord` a backend would have written:

* **Tokens.** ``token_texts`` must concatenate to ``text``. A response with log-probabilities must have its
  tokens; a response without any (``logprobs is None``) may omit them, and its whole text is then one token.
* **Token ids.** Given ids are kept. Without them, ids are *negative string ids* as the ``openai`` backend
  records them: within one response equal token strings (chosen tokens first, then the alternatives row by
  row) get ``-(n + 1)``, ``n`` their order of first appearance — so the chosen token is recognised among its
  alternatives (``topk_ids == token_ids``, docs/confidence.md §2.1).
* **Alternatives.** Each token's alternatives are kept in the order given (most likely first), truncated to
  ``k`` and padded to ``k`` with id :data:`~saltbench.inference.records.PAD_ID` (also the id of a token
  without an id of its own: the reasoning put back in front) and log-probability NaN ("absent"), as the
  ``openai`` backend pads. The authors' normaliser puts the chosen token first among them; that order is kept.
* **No log-probabilities.** ``logprobs is None``: every chosen log-probability is NaN, and the scoring stage
  gives every unit of the response a NaN confidence (accuracy only).
* **Reasoning apart.** ``reasoning`` (the reasoning a harness returned apart from the answer) is put back in
  front of the text in the model's ``reasoning_format`` (``<think>…</think>\\n\\n``, or gpt-oss's analysis
  channel then the final channel's header) as one token without log-probabilities, so the reasoning rules
  of docs/reasoning.md apply to it; the answer's tokens keep their log-probabilities. Empty reasoning
  returned apart (``""``) means the text is already the final content: an empty closed block goes in front
  (``<think></think>\\n\\n``), unless the text holds the format's markers itself. ``None`` (nothing
  returned apart): the text is the whole output as the model wrote it, reasoning inline.
* The full-vocabulary entropy is NaN unless given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import polars as pl

from saltbench.core.vocabulary import FINISH_REASONS, FinishReason, ReasoningFormat
from saltbench.inference.reasoning_apart import REASONING_WRAPPERS, wrap_reasoning
from saltbench.inference.records import PAD_ID, TOP_K, GenerationRecord

REASONING_MARKERS: dict[ReasoningFormat, tuple[str, ...]] = {
    "think": ("<think>", "</think>"),
    "harmony": ("<|channel|>", "<|start|>", "<|message|>"),
}
"""Texts that show a response holds its reasoning inline, per ``reasoning_format`` (then empty reasoning
returned apart adds nothing in front of it)."""


class GenerationsFileError(ValueError):
    """An imported file refused: the message names the file, where in it (a line, a record, a sample) and
    what is wrong."""

    def __init__(self, path: object, where: str, reason: str) -> None:
        self.path, self.where, self.reason = str(path), where, reason
        super().__init__(f"{self.path}: {where}: {reason}" if where else f"{self.path}: {reason}")


_Refuse = Callable[[str], GenerationsFileError]
"""Makes the error that refuses one response, from the reason."""


@dataclass(frozen=True, eq=False)
class ImportedResponse:
    """One response as a file holds it, before it is matched to a dataset row.

    ``where``: its place in the file for messages (``line 12``, ``payload.results[3]``, ``sample 7 epoch
    1``). ``sample_id``, ``prompt`` and/or ``task_input`` (the row's ``input``; ``input_task`` a task name
    that narrows it) identify its dataset row; ``style`` its prompt style (may be ``None``). Per token
    (``T`` tokens): ``token_texts``; ``token_ids`` (int, or ``None``: negative string ids); ``logprobs`` (the
    chosen token's, ``None``: the response has no log-probabilities; a NaN entry: that token has none);
    ``top_logprobs`` / ``top_ids`` / ``top_tokens``: each token's alternatives, most likely first (ragged);
    ``entropy`` (``None``: NaN). ``draws``: sampled answers to the same prompt the file carries beside it
    (docs/backends.md §9.7), each a response of its own (no identity: its parent's), in draw order.
    """

    where: str
    text: str
    sample_id: str | None = None
    prompt: str | None = None
    style: str | None = None
    finish_reason: FinishReason = "eos"
    error: str | None = None
    num_prompt_tokens: int = 0
    reasoning: str | None = None
    token_texts: Sequence[str] | None = None
    token_ids: Sequence[int] | None = None
    logprobs: Sequence[float | None] | np.ndarray | None = None
    top_logprobs: Sequence[Sequence[float | None]] | None = None
    top_ids: Sequence[Sequence[int]] | None = None
    top_tokens: Sequence[Sequence[str]] | None = None
    entropy: Sequence[float | None] | np.ndarray | None = None
    task_input: str | None = None
    input_task: str | None = None
    draws: tuple[ImportedResponse, ...] = ()

    @property
    def has_logprobs(self) -> bool:
        """Whether the response carries log-probabilities (an error row counts as carrying them)."""
        return self.logprobs is not None or self.finish_reason == "error"


def floats(values: Sequence[float | None] | np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """``values`` as a 1-D float array, ``None`` (JSON ``null``) as NaN; converted in one call (polars parses
    a list holding nulls)."""
    if isinstance(values, np.ndarray):
        return values.astype(dtype, copy=False)
    try:
        return np.asarray(values, dtype=dtype)
    except (TypeError, ValueError):
        return pl.Series(values, dtype=pl.Float64, strict=False).fill_null(np.nan).to_numpy().astype(dtype)


def ragged(rows: Sequence[Sequence[object]], k: int, dtype: type, fill: object) -> np.ndarray:
    """Rows of different lengths as a ``(len(rows), k)`` array: each row's first ``k`` values, padded with
    ``fill`` (no Python loop over the values: one flat conversion, one scatter).

    Example:
        >>> ragged([[1.0, 2.0], [3.0], []], 2, np.float32, np.nan).tolist()
        [[1.0, 2.0], [3.0, nan], [nan, nan]]
    """
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    out: np.ndarray = np.full((len(rows), k), fill, dtype=dtype)
    if not lengths.sum():
        return out
    flat_list: list[Any] = list(chain.from_iterable(rows))
    flat = (
        floats(flat_list, dtype) if np.issubdtype(dtype, np.floating) else np.asarray(flat_list, dtype=dtype)
    )
    row = np.repeat(np.arange(len(rows)), lengths)
    column = np.arange(flat.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    keep = column < k
    out[row[keep], column[keep]] = flat[keep]
    return out


def string_ids(
    tokens: Sequence[str], alternatives: Sequence[Sequence[str]], k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Negative string ids (module docstring) of the chosen tokens ``(T,)`` and of their first ``k``
    alternatives ``(T, k)``, padding :data:`PAD_ID`; first appearance counted over the chosen tokens, then
    the alternatives row by row.

    Example:
        >>> ids, top = string_ids(["a", "b", "a"], [["a", "c"], ["b"], ["c", "a"]], 2)
        >>> ids.tolist(), top.tolist()
        ([-1, -2, -1], [[-1, -3], [-2, -2147483648], [-3, -1]])
    """
    lengths = np.fromiter(map(len, alternatives), dtype=np.int64, count=len(alternatives))
    strings = np.array([*tokens, *chain.from_iterable(alternatives)], dtype=object)
    if not strings.size:
        return np.zeros(0, np.int32), np.full((0, k), PAD_ID, np.int32)
    _, first, inverse = np.unique(strings.astype(str), return_index=True, return_inverse=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    ids = -(rank[inverse.reshape(-1)] + 1)
    chosen = ids[: len(tokens)].astype(np.int32)
    top = np.full((len(tokens), k), PAD_ID, np.int32)
    row = np.repeat(np.arange(len(alternatives)), lengths)
    column = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    keep = column < k
    top[row[keep], column[keep]] = ids[len(tokens) :][keep]
    return chosen, top


def to_record(
    response: ImportedResponse, *, path: object, k: int = TOP_K, reasoning: ReasoningFormat | None = None
) -> GenerationRecord:
    """The generation record of ``response`` (module docstring); :class:`GenerationsFileError` (naming
    ``path`` and the response's place) when its parts do not fit together."""

    def refuse(reason: str) -> GenerationsFileError:
        return GenerationsFileError(path, response.where, reason)

    if response.finish_reason not in FINISH_REASONS:
        raise refuse(f"finish_reason {response.finish_reason!r} is not one of {list(FINISH_REASONS)}")
    if response.finish_reason == "error":
        return _error_record(response, k, refuse)
    texts = _token_texts(response, refuse)
    chosen = _per_token(response.logprobs, len(texts), "log-probabilities", refuse)
    if np.any(chosen > 0):
        raise refuse(f"a log-probability above 0 (token {int(np.argmax(chosen > 0))})")
    top = _alternative_logprobs(response, len(texts), k, refuse)
    ids, top_ids = _token_ids(response, texts, k, refuse)
    entropy = _per_token(response.entropy, len(texts), "entropies", refuse)
    if _puts_reasoning_back(response, reasoning):
        texts = [_wrapped_reasoning(response.reasoning or "", reasoning, refuse), *texts]
        ids = np.concatenate([[PAD_ID], ids]).astype(np.int32)
        chosen = np.concatenate([[np.nan], chosen]).astype(np.float32)
        top = np.vstack([np.full((1, k), np.nan, np.float32), top])
        top_ids = np.vstack([np.full((1, k), PAD_ID, np.int32), top_ids])
        entropy = np.concatenate([[np.nan], entropy]).astype(np.float32)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return GenerationRecord(
        token_ids=ids,
        token_texts=tuple(texts),
        token_offsets=(np.cumsum(lengths) - lengths).astype(np.int32),
        chosen_logprobs=chosen,
        topk_ids=top_ids,
        topk_logprobs=top,
        entropy=entropy,
        text="".join(texts),
        finish_reason=response.finish_reason,
        num_prompt_tokens=response.num_prompt_tokens,
    )


def _error_record(response: ImportedResponse, k: int, refuse: _Refuse) -> GenerationRecord:
    """The record of an error row (``finish_reason`` error), which must have no text and no tokens."""
    if response.text or response.token_texts:
        raise refuse("an error row (finish_reason error) has no text and no tokens")
    return GenerationRecord.failed(
        "error (imported)" if response.error is None else response.error,
        num_prompt_tokens=response.num_prompt_tokens,
        k=k,
    )


def _token_texts(response: ImportedResponse, refuse: _Refuse) -> list[str]:
    """The response's token texts (its whole text as one token when it has neither tokens nor
    log-probabilities); refused unless they join to the text."""
    texts = response.token_texts
    if texts is None:
        if response.logprobs is not None:
            raise refuse("log-probabilities without the tokens they belong to (give the token texts)")
        texts = [response.text] if response.text else []
    texts = list(texts)
    if "".join(texts) != response.text:
        joined = "".join(texts)
        raise refuse(f"the token texts join to {joined[:60]!r}…, the text is {response.text[:60]!r}…")
    return texts


def _per_token(
    values: Sequence[float | None] | np.ndarray | None, count: int, noun: str, refuse: _Refuse
) -> np.ndarray:
    """``values`` as one float32 per token (all NaN when not given); refused unless there are ``count``."""
    array = np.full(count, np.nan, np.float32) if values is None else floats(values)
    if array.shape != (count,):
        raise refuse(f"{array.size} {noun} for {count} tokens")
    return array


def _alternative_logprobs(response: ImportedResponse, count: int, k: int, refuse: _Refuse) -> np.ndarray:
    """Each token's first ``k`` alternative log-probabilities ``(T, k)``, padded with NaN; refused unless
    the alternatives are given for every token or for none."""
    top_logprobs = response.top_logprobs
    if top_logprobs is not None and len(top_logprobs) != count:
        raise refuse(f"alternatives for {len(top_logprobs)} tokens, the response has {count} tokens")
    return ragged(top_logprobs or [[]] * count, k, np.float32, np.nan)


def _token_ids(
    response: ImportedResponse, texts: Sequence[str], k: int, refuse: _Refuse
) -> tuple[np.ndarray, np.ndarray]:
    """The ids of the chosen tokens ``(T,)`` and of their first ``k`` alternatives ``(T, k)``: the ids given,
    else negative string ids (:func:`string_ids`); refused when the ids do not fit the tokens."""
    count = len(texts)
    if response.token_ids is not None or response.top_ids is not None:
        if response.token_ids is None or len(response.token_ids) != count:
            raise refuse("token_ids must give one id per token when ids are given")
        ids = np.asarray(response.token_ids, dtype=np.int32)
        top_id_rows = response.top_ids if response.top_ids is not None else [[]] * count
        if not _fits_alternatives(top_id_rows, count, response.top_logprobs):
            raise refuse("top_ids must give one id per alternative log-probability")
        return ids, ragged(top_id_rows, k, np.int32, PAD_ID)
    alternatives = response.top_tokens if response.top_tokens is not None else [[]] * count
    if not _fits_alternatives(alternatives, count, response.top_logprobs):
        raise refuse("top_tokens must give one token per alternative log-probability")
    return string_ids(texts, alternatives, k)


def _fits_alternatives(
    rows: Sequence[Sequence[object]], count: int, top_logprobs: Sequence[Sequence[float | None]] | None
) -> bool:
    """Whether ``rows`` has one row per token, each as long as that token's alternative log-probabilities
    (when those are given)."""
    return not (
        len(rows) != count
        or (top_logprobs is not None and list(map(len, rows)) != list(map(len, top_logprobs)))
    )


def _puts_reasoning_back(response: ImportedResponse, reasoning: ReasoningFormat | None) -> bool:
    """Whether a reasoning block goes in front of the response's text (module docstring): reasoning returned
    apart, or — for a model with a ``reasoning_format`` — empty reasoning returned apart (``""``) in front of
    a text without the format's markers (:data:`REASONING_MARKERS`), which is then the final content. No
    reasoning returned (``None``): the text is the output as the model wrote it."""
    if response.reasoning is None:
        return False
    if response.reasoning:
        return True
    return reasoning is not None and not any(m in response.text for m in REASONING_MARKERS[reasoning])


def _wrapped_reasoning(reasoning_text: str, reasoning: ReasoningFormat | None, refuse: _Refuse) -> str:
    """The reasoning returned apart, wrapped in the model's reasoning format (the text of the token put in
    front); refused when the model declares no reasoning format."""
    if reasoning is None:
        raise refuse(
            "reasoning is given apart from the text, but the model declares no reasoning_format "
            "(set think or harmony in the model registry)"
        )
    return wrap_reasoning(reasoning_text, reasoning)


__all__ = [
    "PAD_ID",
    "REASONING_WRAPPERS",
    "GenerationsFileError",
    "ImportedResponse",
    "floats",
    "ragged",
    "string_ids",
    "to_record",
]
