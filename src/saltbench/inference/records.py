"""Per-token generation records and their Parquet frame (one row per sample).

Per generated (or teacher-forced) token ``t`` with raw next-token log-probabilities
``log p_t = log_softmax(logits_t)`` over the whole vocabulary (float32):

* ``chosen_logprobs[t]`` = ``log p_t[token_ids[t]]``;
* ``topk_ids[t]``, ``topk_logprobs[t]`` = the ``k`` (default 20) most likely token ids and their
  log-probabilities, sorted by log-probability descending;
* ``entropy[t]`` = ``−Σ_v p_t[v] log p_t[v]`` over the full vocabulary (nats, in ``[0, log V]``).

Frame schema (:data:`GENERATION_COLUMNS`, the columns after the caller's ``meta`` columns):
``token_ids`` List[Int32], ``token_texts`` List[String], ``token_offsets`` List[Int32],
``chosen_logprob`` List[Float32], ``topk_ids`` List[List[Int32]], ``topk_logprobs`` List[List[Float32]],
``entropy`` List[Float32], ``text`` String, ``finish_reason`` String, ``error`` String (null unless
``finish_reason == "error"``), ``num_prompt_tokens`` Int32, ``num_generated_tokens`` Int32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from saltbench.core.contracts import GENERATION_COLUMNS, GENERATION_META
from saltbench.core.vocabulary import FINISH_REASONS, FinishReason

TOP_K = 20
"""Number of top log-probabilities kept per token (the OpenAI/Gemini API limit, docs/generation.md §2.3)."""

PAD_ID = -(2**31)
"""The id of a padding alternative (a server or file gave fewer than ``k``); its log-probability is NaN."""


@dataclass(frozen=True, eq=False)
class TokenScores:
    """Log-probability statistics of a token sequence (generated or teacher-forced).

    Arrays: ``token_ids`` int32 [T]; ``chosen_logprobs`` float32 [T]; ``topk_ids`` int32 [T, k];
    ``topk_logprobs`` float32 [T, k] (descending per row); ``entropy`` float32 [T].
    """

    token_ids: np.ndarray
    chosen_logprobs: np.ndarray
    topk_ids: np.ndarray
    topk_logprobs: np.ndarray
    entropy: np.ndarray

    def __len__(self) -> int:
        return int(self.token_ids.shape[0])

    @classmethod
    def empty(cls, k: int = TOP_K) -> TokenScores:
        return cls(
            token_ids=np.zeros(0, np.int32),
            chosen_logprobs=np.zeros(0, np.float32),
            topk_ids=np.zeros((0, k), np.int32),
            topk_logprobs=np.zeros((0, k), np.float32),
            entropy=np.zeros(0, np.float32),
        )

    def slice(self, start: int, stop: int | None = None) -> TokenScores:
        """Tokens ``start:stop``."""
        s = slice(start, stop)
        return TokenScores(
            self.token_ids[s],
            self.chosen_logprobs[s],
            self.topk_ids[s],
            self.topk_logprobs[s],
            self.entropy[s],
        )


@dataclass(frozen=True, eq=False)
class GenerationRecord:
    """One generation: its tokens, their texts and offsets, and their log-probability statistics.

    ``text`` is the decoded generation (special tokens skipped, not stripped) and equals
    ``"".join(token_texts)``; ``token_offsets[i]`` is where ``token_texts[i]`` starts in ``text``.
    Token-text rule: a token's text is the characters that become final when it is appended — a
    character split over several byte tokens belongs to the token that completes it (the earlier
    ones get ``""``), special tokens (e.g. the final EOS, which is kept in ``token_ids``) get ``""``.
    ``finish_reason`` is ``"eos"``, ``"length"`` (``max_new_tokens`` reached) or ``"error"`` (then
    ``error`` says why and the token arrays are empty).
    """

    token_ids: np.ndarray
    token_texts: tuple[str, ...]
    token_offsets: np.ndarray
    chosen_logprobs: np.ndarray
    topk_ids: np.ndarray
    topk_logprobs: np.ndarray
    entropy: np.ndarray
    text: str
    finish_reason: FinishReason
    num_prompt_tokens: int
    error: str | None = None

    @property
    def num_generated_tokens(self) -> int:
        return int(self.token_ids.shape[0])

    @property
    def scores(self) -> TokenScores:
        return TokenScores(
            self.token_ids, self.chosen_logprobs, self.topk_ids, self.topk_logprobs, self.entropy
        )

    @classmethod
    def from_scores(
        cls,
        scores: TokenScores,
        token_texts: Sequence[str],
        *,
        finish_reason: FinishReason,
        num_prompt_tokens: int,
    ) -> GenerationRecord:
        texts = tuple(token_texts)
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        offsets = (np.cumsum(lengths) - lengths).astype(np.int32)
        return cls(
            token_ids=scores.token_ids,
            token_texts=texts,
            token_offsets=offsets,
            chosen_logprobs=scores.chosen_logprobs,
            topk_ids=scores.topk_ids,
            topk_logprobs=scores.topk_logprobs,
            entropy=scores.entropy,
            text="".join(texts),
            finish_reason=finish_reason,
            num_prompt_tokens=num_prompt_tokens,
        )

    @classmethod
    def failed(cls, error: str, *, num_prompt_tokens: int, k: int = TOP_K) -> GenerationRecord:
        """A record for a prompt that could not be generated (``finish_reason="error"``)."""
        empty = TokenScores.empty(k)
        return cls(
            token_ids=empty.token_ids,
            token_texts=(),
            token_offsets=np.zeros(0, np.int32),
            chosen_logprobs=empty.chosen_logprobs,
            topk_ids=empty.topk_ids,
            topk_logprobs=empty.topk_logprobs,
            entropy=empty.entropy,
            text="",
            finish_reason="error",
            num_prompt_tokens=num_prompt_tokens,
            error=error,
        )


def _offsets(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=out[1:])
    return out


def _list_array(arrays: Sequence[np.ndarray], dtype: npt.DTypeLike, arrow_type: pa.DataType) -> pa.Array:
    """A list<arrow_type> array from per-row 1-D numpy arrays, built without Python per-element loops."""
    lengths = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=len(arrays))
    values = (
        np.concatenate([np.asarray(a, dtype=dtype).reshape(-1) for a in arrays])
        if arrays
        else np.zeros(0, dtype)
    )
    return pa.ListArray.from_arrays(pa.array(_offsets(lengths)), pa.array(values, type=arrow_type))


def _nested_array(arrays: Sequence[np.ndarray], dtype: npt.DTypeLike, arrow_type: pa.DataType) -> pa.Array:
    """A list<list<arrow_type>> array from per-row 2-D numpy arrays [T_i, k_i]."""
    rows = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=len(arrays))
    inner_lengths = (
        np.concatenate(
            [np.full(a.shape[0], a.shape[1] if a.ndim == 2 else 0, dtype=np.int64) for a in arrays]
        )
        if arrays
        else np.zeros(0, np.int64)
    )
    values = (
        np.concatenate([np.asarray(a, dtype=dtype).reshape(-1) for a in arrays])
        if arrays
        else np.zeros(0, dtype)
    )
    inner = pa.ListArray.from_arrays(pa.array(_offsets(inner_lengths)), pa.array(values, type=arrow_type))
    return pa.ListArray.from_arrays(pa.array(_offsets(rows)), inner)


def records_to_frame(
    records: Sequence[GenerationRecord], meta: Mapping[str, Sequence[Any]] | None = None
) -> pl.DataFrame:
    """One row per record.

    The columns are the ``meta`` columns (each of length ``len(records)``) then
    :data:`GENERATION_COLUMNS`.
    """
    n = len(records)
    meta = dict(meta or {})
    for name, column in meta.items():
        if name in GENERATION_COLUMNS:
            raise ValueError(f"meta column {name!r} clashes with a generation column")
        if len(column) != n:
            raise ValueError(f"meta column {name!r} has {len(column)} values, expected {n} (one per record)")
    texts = [t for r in records for t in r.token_texts]
    text_lengths = np.fromiter((len(r.token_texts) for r in records), dtype=np.int64, count=n)
    columns: dict[str, pa.Array] = {
        "token_ids": _list_array([r.token_ids for r in records], np.int32, pa.int32()),
        "token_texts": pa.ListArray.from_arrays(
            pa.array(_offsets(text_lengths)), pa.array(texts, type=pa.string())
        ),
        "token_offsets": _list_array([r.token_offsets for r in records], np.int32, pa.int32()),
        "chosen_logprob": _list_array([r.chosen_logprobs for r in records], np.float32, pa.float32()),
        "topk_ids": _nested_array([r.topk_ids for r in records], np.int32, pa.int32()),
        "topk_logprobs": _nested_array([r.topk_logprobs for r in records], np.float32, pa.float32()),
        "entropy": _list_array([r.entropy for r in records], np.float32, pa.float32()),
    }
    generation = pl.from_arrow(pa.table(columns))
    assert isinstance(generation, pl.DataFrame)
    generation = generation.with_columns(
        pl.Series("text", [r.text for r in records], dtype=pl.String),
        pl.Series("finish_reason", [r.finish_reason for r in records], dtype=pl.String),
        pl.Series("error", [r.error for r in records], dtype=pl.String),
        pl.Series("num_prompt_tokens", [r.num_prompt_tokens for r in records], dtype=pl.Int32),
        pl.Series("num_generated_tokens", [r.num_generated_tokens for r in records], dtype=pl.Int32),
    ).cast(GENERATION_COLUMNS)  # type: ignore[arg-type]
    if not meta:
        return generation
    types = {
        name: GENERATION_META[name] for name in meta if name in GENERATION_META
    }  # e.g. all-null variant: String
    return pl.DataFrame(meta, schema_overrides=types).hstack(generation)


def _split(flat: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    return [flat[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]


def _list_values(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    array = column.combine_chunks()
    offsets = np.asarray(array.offsets) - array.offsets[0].as_py()
    return np.asarray(array.flatten()), offsets


def frame_to_records(frame: pl.DataFrame) -> list[GenerationRecord]:
    """Rebuild the records from a frame written by :func:`records_to_frame` (meta columns are ignored)."""
    missing = [c for c in GENERATION_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks generation columns {missing}")
    table = frame.select(list(GENERATION_COLUMNS)).cast(GENERATION_COLUMNS).to_arrow()  # type: ignore[arg-type]
    flat: dict[str, list[np.ndarray]] = {}
    for name, dtype in (
        ("token_ids", np.int32),
        ("token_offsets", np.int32),
        ("chosen_logprob", np.float32),
        ("entropy", np.float32),
    ):
        values, offsets = _list_values(table.column(name))
        flat[name] = _split(values.astype(dtype, copy=False), offsets)
    for name, dtype in (("topk_ids", np.int32), ("topk_logprobs", np.float32)):
        outer = table.column(name).combine_chunks()
        outer_offsets = np.asarray(outer.offsets) - outer.offsets[0].as_py()
        inner = outer.flatten()
        values = np.asarray(inner.flatten()).astype(dtype, copy=False)
        inner_offsets = np.asarray(inner.offsets) - inner.offsets[0].as_py()
        widths = np.diff(inner_offsets)
        default_k = int(widths[0]) if len(widths) else TOP_K  # for rows without tokens
        rows = []
        for i in range(len(outer_offsets) - 1):
            lo, hi = outer_offsets[i], outer_offsets[i + 1]
            block = values[inner_offsets[lo] : inner_offsets[hi]]
            k = int(widths[lo]) if hi > lo else default_k
            rows.append(block.reshape(hi - lo, k))
        flat[name] = rows
    token_texts = table.column("token_texts").to_pylist()
    records = []
    for i, row in enumerate(frame.select("text", "finish_reason", "error", "num_prompt_tokens").iter_rows()):
        text, finish_reason, error, num_prompt_tokens = row
        if finish_reason not in FINISH_REASONS:
            raise ValueError(f"row {i}: finish_reason {finish_reason!r} not in {FINISH_REASONS}")
        records.append(
            GenerationRecord(
                token_ids=flat["token_ids"][i],
                token_texts=tuple(token_texts[i]),
                token_offsets=flat["token_offsets"][i],
                chosen_logprobs=flat["chosen_logprob"][i],
                topk_ids=flat["topk_ids"][i],
                topk_logprobs=flat["topk_logprobs"][i],
                entropy=flat["entropy"][i],
                text=text,
                finish_reason=finish_reason,
                num_prompt_tokens=int(num_prompt_tokens),
                error=error,
            )
        )
    return records
