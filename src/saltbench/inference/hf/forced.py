"""One batched pass per group of interventions: teacher-force prefix + target, then continue from the prefix.

For B rows sharing one prompt of P tokens, row ``r`` has a prefix ``x_r`` (``n`` tokens) and a target
``y_r`` (``t`` tokens: the separator and the reference atom ``a_k``). The block after the prompt is
right-aligned (``W`` = the longest ``n + t``), so every target ends in the last column::

    columns      0 … P−1   P … P+W−n−t−1   … P+W−t−1        P+W−t … P+W−1    greedy tokens …
    forced pass  prompt    pads (mask 0)   x_r (mask 1)     y_r (mask 1)
    decoding     prompt    pads (mask 0)   x_r (mask 1)     y_r (mask 0)     g_1, g_2, … (mask 1)
    position id  0 … P−1                   P … P+n−1        P+n … P+n+t−1    P+n, P+n+1, …

One forward over the block gives, at its last ``max(t) + 1`` columns only (``logits_to_keep``; the
language-model head is not run on the rest of the prefix), the next-token logits right after the
prefix and the teacher-forced log-probability of every target token. Greedy decoding then continues
from the prefix with the target columns masked out, so the greedy tokens see exactly ``prompt + x_r``
and take the positions the target had: the continuation is the one a model produces after the prefix
alone (masked keys get zero attention weight), and the target costs no second pass over the prefix.

Decoding stops for a row at an EOS token, after ``max_new_tokens``, or when ``stop(row, token_ids)``
says the row has written enough (the intervention runner stops once the atoms it scores are complete);
finished rows leave the batch (their cache rows are dropped), so the cost follows the rows still running.

With a :class:`~saltbench.inference.PromptCache` the prompt is encoded once and its key/value cache
copied into the B rows; without one the prompt is encoded for every row (the benchmark baseline).
The passes are those of the decoding core shared with generation and teacher forcing
(:mod:`saltbench.inference.hf._decoding`, docs/generation.md §6): :func:`~._decoding.force` with
``align="end"``, then :func:`~._decoding.greedy_decode` with finished rows dropped.
Log-probabilities are float32 ``log_softmax`` over the full vocabulary; the greedy continuation carries
the same statistics as the inference stage (top-k, entropy; :class:`~saltbench.inference.GenerationRecord`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from saltbench.inference.base import ForcedContinuation, StopRule, eos_token_ids
from saltbench.inference.detokenize import token_texts
from saltbench.inference.hf._decoding import PromptCache, force, greedy_decode, prefill
from saltbench.inference.hf.generation import pad_token_id
from saltbench.inference.records import GenerationRecord

CHUNK_TOKENS = 256
"""Block columns per forward call (bounds the attention scores of one call); the last call covers at least
the ``max(t) + 1`` columns whose logits are kept."""


def force_and_continue(
    model: Any,
    tokenizer: Any,
    prompt_ids: Sequence[int],
    rows: Sequence[tuple[Sequence[int], Sequence[int]]],
    *,
    max_new_tokens: int,
    cache: PromptCache | None = None,
    top_k: int = 20,
    chunk_tokens: int = CHUNK_TOKENS,
    stop: StopRule | None = None,
) -> list[ForcedContinuation]:
    """Teacher-force ``prefix + target`` of every row in one batch and continue greedily after the prefix.

    Args:
        prompt_ids: the prompt tokens shared by all rows (must match ``cache.prompt_ids`` when given).
        rows: ``(prefix_ids, target_ids)`` per row (either may be empty; an empty prefix continues
            right after the prompt).
        max_new_tokens: greedy budget (0: only the forced pass).
        cache: the encoded prompt; ``None`` encodes the prompt once per row.
        stop: optional early-stopping rule ``stop(row_index, generated_ids)``, asked after every token.

    Returns:
        One :class:`ForcedContinuation` per row, in order.
    """
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be >= 1, got {chunk_tokens}")
    prompt = [int(t) for t in prompt_ids]
    if cache is not None and tuple(prompt) != tuple(cache.prompt_ids):
        raise ValueError("prompt_ids differ from the prompt the cache was encoded from")
    if not rows:
        return []
    if not any(len(x) + len(y) for x, y in rows):
        raise ValueError("every row has an empty prefix and an empty target; nothing to run")
    pad = pad_token_id(model, tokenizer)
    with torch.inference_mode():
        state = cache.expand(len(rows)) if cache is not None else prefill(model, [prompt] * len(rows), pad)
        targets, after = force(
            model,
            state,
            [[*x, *y] for x, y in rows],
            pad_id=pad,
            align="end",
            chunk_tokens=chunk_tokens,
            top_k=None,
            scored=[len(y) for _, y in rows],
            visible=[len(x) for x, _ in rows],
        )
        del state
        decoded = greedy_decode(
            model,
            after,
            max_new_tokens=max_new_tokens,
            eos_ids=eos_token_ids(model, tokenizer),
            top_k=top_k,
            stop=stop,
            drop_finished=True,
        )
    results = []
    for (x, _), target, (gen, finish) in zip(rows, targets, decoded):
        context = [*prompt, *map(int, x)]
        texts = token_texts(tokenizer, gen.token_ids, context_ids=context) if len(gen) else []
        record = GenerationRecord.from_scores(
            gen, texts, finish_reason="eos" if finish == "eos" else "length", num_prompt_tokens=len(context)
        )
        results.append(ForcedContinuation(target.chosen_logprobs.astype(np.float64), record, finish))
    return results


__all__ = ["CHUNK_TOKENS", "force_and_continue"]
