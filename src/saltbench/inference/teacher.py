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

Layout of a batch of prefixes (B rows after a shared prompt of P tokens)::

    columns   0 … P−1       P … P+L−1 (L = longest prefix)    P+L, P+L+1, …
    row r     prompt        prefix_r, then pads (masked)      greedy tokens of row r
    position  0 … P−1       P … P+n_r−1                       P+n_r, P+n_r+1, …

Prefix blocks are run in chunks of ``chunk_tokens`` positions so that at most
``B × chunk_tokens × vocabulary`` logits exist at a time.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from saltbench.inference._logit_stats import StepScores, score_logits, to_token_scores
from saltbench.inference.chat import encode_prompt
from saltbench.inference.detokenize import token_texts
from saltbench.inference.generation import (
    eos_token_ids,
    forward,
    greedy_decode,
    model_device,
    new_cache,
    pad_token_id,
)
from saltbench.inference.records import TOP_K, GenerationRecord, TokenScores

logger = logging.getLogger(__name__)

CHUNK_TOKENS = 256
"""Default number of teacher-forced positions per forward pass."""


@dataclass
class PromptCache:
    """A prompt encoded once: its ids, its key/value cache (batch 1) and the logits that follow it."""

    prompt_ids: tuple[int, ...]
    past_key_values: Any
    next_logits: torch.Tensor  # [V], the model's dtype

    def __len__(self) -> int:
        return len(self.prompt_ids)


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


def encode_prompt_cache(model: Any, prompt_ids: Sequence[int]) -> PromptCache:
    """Run the prompt once and keep its key/value cache and next-token logits."""
    ids = [int(t) for t in prompt_ids]
    if not ids:
        raise ValueError("prompt_ids must contain at least one token")
    device = model_device(model)
    with torch.inference_mode():
        past = new_cache(model)
        input_ids = torch.tensor([ids], dtype=torch.long, device=device)
        mask = torch.ones_like(input_ids)
        positions = torch.arange(len(ids), device=device)[None]
        logits = forward(model, input_ids, mask, positions, past)[0, -1]
    return PromptCache(tuple(ids), past, logits)


def _expand_cache(cache: PromptCache, rows: int) -> Any:
    """A private copy of the prompt cache repeated for ``rows`` rows (the original is untouched)."""
    past = copy.deepcopy(cache.past_key_values)
    if rows > 1:
        past.batch_repeat_interleave(rows)
    return past


def _concat_steps(parts: list[StepScores]) -> StepScores:
    return StepScores(
        token_ids=torch.cat([p.token_ids for p in parts], 1).cpu(),
        chosen=torch.cat([p.chosen for p in parts], 1).cpu(),
        topk_ids=torch.cat([p.topk_ids for p in parts], 1).cpu(),
        topk_logprobs=torch.cat([p.topk_logprobs for p in parts], 1).cpu(),
        entropy=torch.cat([p.entropy for p in parts], 1).cpu(),
    )


def _score_rows(logits: torch.Tensor, targets: torch.Tensor, k: int) -> StepScores:
    """Scores of logits [B, W, V] against forced targets [B, W], reshaped back to [B, W(, k)]."""
    b, w, v = logits.shape
    s = score_logits(logits.reshape(b * w, v), targets.reshape(b * w), k)
    return StepScores(
        s.token_ids.reshape(b, w),
        s.chosen.reshape(b, w),
        s.topk_ids.reshape(b, w, -1),
        s.topk_logprobs.reshape(b, w, -1),
        s.entropy.reshape(b, w),
    )


def _run_prefixes(
    model: Any,
    tokenizer: Any,
    prompt_ids: Sequence[int],
    next_logits: torch.Tensor,
    past: Any,
    prefixes: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    top_k: int,
    chunk_tokens: int,
) -> list[Continuation]:
    """Score B prefixes after a prompt whose cache ``past`` already has B rows, then continue greedily."""
    device = next_logits.device
    rows, prompt_len = len(prefixes), len(prompt_ids)
    lengths = torch.tensor([len(p) for p in prefixes], dtype=torch.long)
    width = int(lengths.max()) if rows else 0
    pad = pad_token_id(model, tokenizer)
    block = torch.full((rows, width + 1), pad, dtype=torch.long)  # one spare column for targets
    for r, prefix in enumerate(prefixes):
        if len(prefix):
            block[r, : len(prefix)] = torch.as_tensor([int(t) for t in prefix], dtype=torch.long)
    block = block.to(device)
    block_mask = (torch.arange(width)[None] < lengths[:, None]).long().to(device)
    mask = torch.cat([torch.ones(rows, prompt_len, dtype=torch.long, device=device), block_mask], dim=1)
    positions = (prompt_len + torch.arange(width, device=device))[None].expand(rows, width)
    last = (lengths - 1).to(device)

    parts = [_score_rows(next_logits[:, None], block[:, :1], top_k)]  # predicts prefix token 0
    first = (
        next_logits.clone()
    )  # next-token logits after each full prefix (rows with an empty prefix keep these)
    for lo in range(0, width, chunk_tokens):
        hi = min(lo + chunk_tokens, width)
        logits = forward(model, block[:, lo:hi], mask[:, : prompt_len + hi], positions[:, lo:hi], past, None)
        parts.append(_score_rows(logits, block[:, lo + 1 : hi + 1], top_k))  # predicts tokens lo+1 … hi
        ends_here = (last >= lo) & (last < hi)
        if bool(ends_here.any()):
            index = (last - lo).clamp(0, hi - lo - 1)
            picked = logits[torch.arange(rows, device=device), index]
            first = torch.where(ends_here[:, None], picked.to(first.dtype), first)
        del logits
    prefix_scores = _concat_steps(parts)

    if max_new_tokens > 0:
        generated, gen_lengths, hit_eos = greedy_decode(
            model,
            first,
            past,
            mask,
            (prompt_len + lengths).to(device),
            max_new_tokens=max_new_tokens,
            eos_ids=eos_token_ids(model, tokenizer),
            top_k=top_k,
        )
    results = []
    for r, prefix in enumerate(prefixes):
        scores = to_token_scores(prefix_scores, r, len(prefix))
        if max_new_tokens > 0:
            gen = to_token_scores(generated, r, int(gen_lengths[r]))
            record = GenerationRecord.from_scores(
                gen,
                token_texts(tokenizer, gen.token_ids, context_ids=[*prompt_ids, *map(int, prefix)]),
                finish_reason="eos" if bool(hit_eos[r]) else "length",
                num_prompt_tokens=prompt_len + len(prefix),
            )
        else:
            record = GenerationRecord.from_scores(
                TokenScores.empty(scores.topk_ids.shape[1]),
                [],
                finish_reason="length",
                num_prompt_tokens=prompt_len + len(prefix),
            )
        results.append(Continuation(prefix=scores, generation=record))
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
        past = _expand_cache(cache, len(prefixes))
        logits = cache.next_logits[None].expand(len(prefixes), -1)
        return _run_prefixes(
            model,
            tokenizer,
            cache.prompt_ids,
            logits,
            past,
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
    device = model_device(model)
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
            past = new_cache(model)
            input_ids = torch.tensor([ids] * len(chunk), dtype=torch.long, device=device)
            positions = torch.arange(len(ids), device=device)[None].expand(len(chunk), -1)
            logits = forward(model, input_ids, torch.ones_like(input_ids), positions, past)[:, -1]
            results.extend(
                _run_prefixes(
                    model,
                    tokenizer,
                    ids,
                    logits,
                    past,
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
    cache = encode_prompt_cache(model, ids)
    with torch.inference_mode():
        result = _run_prefixes(
            model,
            tokenizer,
            ids,
            cache.next_logits[None],
            cache.past_key_values,
            [continuation],
            max_new_tokens=0,
            top_k=top_k,
            chunk_tokens=chunk_tokens,
        )
    return result[0].prefix
