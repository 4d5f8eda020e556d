"""Teacher forcing and prompt-cache reuse for many continuations of one prompt.

* :func:`teacher_force` scores a given continuation after a prompt: for continuation token ``j``,
  the statistics of :mod:`saltbench.inference.records` computed from the next-token distribution
  after ``prompt + continuation[:j]``, with the forced token as the chosen one.
* :func:`greedy_continue_many` serves the intervention experiments: one prompt, many (e.g.
  corrupted) answer prefixes; for each prefix it returns the teacher-forced scores of the prefix
  tokens and the greedy continuation after it. With ``reuse_cache=True`` the prompt is encoded once
  (:func:`encode_prompt_cache`) and its key/value cache is copied into every batch of prefixes
  (:func:`continue_from_cache`); with ``reuse_cache=False`` every prefix re-encodes the prompt
  (the baseline of the benchmark). Both give the same tokens.

All of them run the decoding core (:mod:`saltbench.inference.hf._decoding`): :func:`~._decoding.force` with
``align="start"`` on the prefixes, then :func:`~._decoding.greedy_decode`. Layout of a batch of prefixes
(B rows after a shared prompt of P tokens)::

    columns   0 … P−1       P … P+L−1 (L = longest prefix)    P+L, P+L+1, …
    row r     prompt        prefix_r, then pads (masked)      greedy tokens of row r
    position  0 … P−1       P … P+n_r−1                       P+n_r, P+n_r+1, …

Prefix blocks are run in chunks of ``chunk_tokens`` positions so that at most
``B × chunk_tokens × vocabulary`` logits exist at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from saltbench.inference.base import eos_token_ids
from saltbench.inference.chat import encode_prompt
from saltbench.inference.detokenize import token_texts
from saltbench.inference.hf._decoding import (
    DecodeState,
    PromptCache,
    encode_prompt_cache,
    force,
    greedy_decode,
    prefill,
)
from saltbench.inference.hf.generation import pad_token_id
from saltbench.inference.records import TOP_K, GenerationRecord, TokenScores

logger = logging.getLogger(__name__)

CHUNK_TOKENS = 256
"""Default number of teacher-forced positions per forward pass."""

__all__ = [
    "CHUNK_TOKENS",
    "Continuation",
    "PromptCache",
    "continue_from_cache",
    "encode_prompt_cache",
    "greedy_continue_many",
    "teacher_force",
]


@dataclass(frozen=True, eq=False)
class Continuation:
    """Teacher-forced scores of one prefix and the greedy generation that follows it.

    ``generation`` covers the new tokens only (its text is decoded with the prefix as context);
    ``generation.num_prompt_tokens`` = prompt + prefix tokens.
    """

    prefix: TokenScores
    generation: GenerationRecord


def _as_ids(tokenizer: Any, prompt: str | Sequence[int]) -> list[int]:
    ids = encode_prompt(tokenizer, prompt) if isinstance(prompt, str) else [int(t) for t in prompt]
    if not ids:
        raise ValueError("prompt must contain at least one token")
    return ids


def _run_prefixes(
    model: Any,
    tokenizer: Any,
    prompt_ids: Sequence[int],
    state: DecodeState,
    prefixes: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    top_k: int,
    chunk_tokens: int,
) -> list[Continuation]:
    """Score B prefixes after the prompt held by ``state`` (B rows), then continue each greedily."""
    pad = pad_token_id(model, tokenizer)
    scores, after = force(
        model, state, prefixes, pad_id=pad, align="start", chunk_tokens=chunk_tokens, top_k=top_k
    )
    decoded = greedy_decode(
        model, after, max_new_tokens=max_new_tokens, eos_ids=eos_token_ids(model, tokenizer), top_k=top_k
    )
    results = []
    for prefix, forced, (gen, finish) in zip(prefixes, scores, decoded):
        context = [*prompt_ids, *map(int, prefix)]
        record = GenerationRecord.from_scores(
            gen,
            token_texts(tokenizer, gen.token_ids, context_ids=context) if len(gen) else [],
            finish_reason="eos" if finish == "eos" else "length",
            num_prompt_tokens=len(context),
        )
        results.append(Continuation(prefix=forced, generation=record))
    return results


def continue_from_cache(
    model: Any,
    tokenizer: Any,
    cache: PromptCache,
    prefixes: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    top_k: int = TOP_K,
    chunk_tokens: int = CHUNK_TOKENS,
) -> list[Continuation]:
    """Teacher-force each prefix after the cached prompt and continue greedily, all rows in one batch.

    The cache is copied (``cache`` stays valid for further calls). ``max_new_tokens=0`` only scores.
    """
    if not prefixes:
        return []
    with torch.inference_mode():
        return _run_prefixes(
            model,
            tokenizer,
            cache.prompt_ids,
            cache.expand(len(prefixes)),
            prefixes,
            max_new_tokens=max_new_tokens,
            top_k=top_k,
            chunk_tokens=chunk_tokens,
        )


def greedy_continue_many(
    model: Any,
    tokenizer: Any,
    prompt_ids: str | Sequence[int],
    prefixes: Sequence[Sequence[int]],
    max_new_tokens: int,
    reuse_cache: bool = True,
    *,
    batch_size: int = 8,
    top_k: int = TOP_K,
    chunk_tokens: int = CHUNK_TOKENS,
) -> list[Continuation]:
    """For each prefix: teacher-forced prefix scores and the greedy continuation (in input order).

    ``reuse_cache=True`` encodes the prompt once and copies its cache into each batch of
    ``batch_size`` prefixes; ``reuse_cache=False`` re-encodes the prompt for every prefix.
    """
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    ids = _as_ids(tokenizer, prompt_ids)
    cache = encode_prompt_cache(model, ids) if reuse_cache else None
    results: list[Continuation] = []
    for lo in range(0, len(prefixes), batch_size):
        chunk = prefixes[lo : lo + batch_size]
        if cache is not None:
            results.extend(
                continue_from_cache(
                    model,
                    tokenizer,
                    cache,
                    chunk,
                    max_new_tokens=max_new_tokens,
                    top_k=top_k,
                    chunk_tokens=chunk_tokens,
                )
            )
            continue
        with torch.inference_mode():  # re-encode the prompt once per prefix (one row each)
            results.extend(
                _run_prefixes(
                    model,
                    tokenizer,
                    ids,
                    prefill(model, [ids] * len(chunk), pad_token_id(model, tokenizer)),
                    chunk,
                    max_new_tokens=max_new_tokens,
                    top_k=top_k,
                    chunk_tokens=chunk_tokens,
                )
            )
    return results


def teacher_force(
    model: Any,
    tokenizer: Any,
    prompt_text_or_ids: str | Sequence[int],
    continuation_ids: Sequence[int],
    *,
    top_k: int = TOP_K,
    chunk_tokens: int = CHUNK_TOKENS,
) -> TokenScores:
    """Scores of ``continuation_ids`` forced after the prompt (a rendered string or token ids)."""
    ids = _as_ids(tokenizer, prompt_text_or_ids)
    continuation = [int(t) for t in continuation_ids]
    pad = pad_token_id(model, tokenizer)
    with torch.inference_mode():
        state = prefill(model, [ids], pad)
        (scores,), _ = force(
            model, state, [continuation], pad_id=pad, align="start", chunk_tokens=chunk_tokens, top_k=top_k
        )
    return scores
