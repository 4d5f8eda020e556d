"""Batched greedy generation with per-token log-probabilities, through plain transformers forward passes.

Algorithm of :func:`generate` (the decoding itself is the shared core,
:mod:`saltbench.inference.hf._decoding`):

1. Prompts (strings are tokenised by :func:`~saltbench.inference.chat.encode_prompt`) longer than
   ``max_context − max_new_tokens`` become ``finish_reason="error"`` records
   (:func:`~saltbench.inference.base.screen_prompts`, shared by every backend); the rest are sorted by
   length (longest first, stable) and cut into batches of ``batch_size``; results come back in input order.
2. A batch is left-padded; ``attention_mask`` marks the real tokens and ``position_ids`` count real
   tokens only (``cumsum(mask) − 1``), so every row sees the positions it would see alone.
3. One prefill pass fills a ``DynamicCache`` (only the last position's logits are computed), then one
   pass per new token feeds each row's greedy token at its own next position.
4. At every step the raw logits are turned into float32 ``log_softmax`` statistics
   (:func:`~saltbench.inference.hf._logit_stats.score_logits`) and dropped; a row stops after emitting any
   of the model's EOS ids (the EOS token is kept, with text ``""``) or after ``max_new_tokens``.
   Finished rows stay in the batch until every row has stopped.

On CPU in float32 the tokens do not depend on the batch composition in practice (tested); log-probs
agree with an unbatched run to ~1e-5 (different matrix shapes reorder floating-point sums).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import torch

from saltbench.inference.base import eos_token_ids, screen_prompts
from saltbench.inference.detokenize import token_texts
from saltbench.inference.hf._decoding import greedy_decode, prefill
from saltbench.inference.records import TOP_K, GenerationRecord

logger = logging.getLogger(__name__)


def pad_token_id(model: Any, tokenizer: Any) -> int:
    """The id used as filler for padding (never attended to): tokenizer pad, else EOS, else 0."""
    for candidate in (getattr(tokenizer, "pad_token_id", None), *eos_token_ids(model, tokenizer)):
        if candidate is not None:
            return int(candidate)
    return 0


def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str] | Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    batch_size: int = 8,
    top_k: int = TOP_K,
    max_context: int | None = None,
    progress: bool = True,
) -> list[GenerationRecord]:
    """Greedy generations with per-token log-probability statistics, one record per prompt, in input order.

    ``prompts``: rendered prompt strings or token-id lists. ``max_context`` (default: the model
    config's ``max_position_embeddings``) bounds prompt + new tokens; longer prompts give
    ``finish_reason="error"`` records. See the module docstring for the algorithm.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_context is None:
        max_context = getattr(model.config, "max_position_embeddings", None) or 2**31 - 1
    encoded, results = screen_prompts(
        tokenizer, prompts, max_context=max_context, max_new_tokens=max_new_tokens, top_k=top_k
    )
    eos_ids = eos_token_ids(model, tokenizer)
    pad_id = pad_token_id(model, tokenizer)
    runnable = [index for index, record in enumerate(results) if record is None]
    order = sorted(runnable, key=lambda i: -len(encoded[i]))
    bar = _progress_bar(len(order), progress)
    started, produced = time.perf_counter(), 0

    def count(active: int) -> None:
        nonlocal produced
        produced += active
        if bar is not None:
            bar.set_postfix_str(
                f"{produced / max(time.perf_counter() - started, 1e-9):.1f} tok/s", refresh=False
            )

    with torch.inference_mode():
        for lo in range(0, len(order), batch_size):
            batch = order[lo : lo + batch_size]
            decoded = greedy_decode(
                model,
                prefill(model, [encoded[i] for i in batch], pad_id),  # no reference kept here
                max_new_tokens=max_new_tokens,
                eos_ids=eos_ids,
                top_k=top_k,
                on_step=count,
            )
            for (scores, finish), index in zip(decoded, batch):
                results[index] = GenerationRecord.from_scores(
                    scores,
                    token_texts(tokenizer, scores.token_ids, context_ids=encoded[index]),
                    finish_reason="eos" if finish == "eos" else "length",
                    num_prompt_tokens=len(encoded[index]),
                )
            if bar is not None:
                bar.update(len(batch))
    if bar is not None:
        bar.close()
    return [r for r in results if r is not None]


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="sample", desc="generate", dynamic_ncols=True)
