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
Log-probabilities are float32 ``log_softmax`` over the full vocabulary; the greedy continuation carries
the same statistics as the inference stage (top-k, entropy; :class:`~saltbench.inference.GenerationRecord`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from saltbench.inference import GenerationRecord, PromptCache, TokenScores, eos_token_ids, token_texts
from saltbench.inference._logit_stats import score_logits
from saltbench.inference.generation import forward, model_device, new_cache, pad_token_id

FinishReason = Literal["eos", "stop", "length"]
StopRule = Callable[[int, Sequence[int]], bool]
"""``stop(row, generated_token_ids)`` → ``True`` once the row has generated enough."""

CHUNK_TOKENS = 256
"""Block columns per forward call (bounds the attention scores of one call); the last call covers at least
the ``max(t) + 1`` columns whose logits are kept."""


@dataclass(frozen=True, eq=False)
class ForcedContinuation:
    """Teacher-forced log-probabilities of one row's target, and the greedy continuation of its prefix.

    ``target_logprobs[j]`` = ``log p(y_j | prompt, x, y_<j)``; ``generation`` continues after
    ``prompt + x`` (``y`` not in its context).
    ``finish_reason``: ``eos``, ``stop`` (the stop rule) or ``length`` (the budget); the record itself says
    ``length`` for ``stop`` (its schema knows no other reason).
    """

    target_logprobs: np.ndarray
    generation: GenerationRecord
    finish_reason: FinishReason


def _chosen_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``log_softmax(logits)[target]`` in float32, [B, W] from logits [B, W, V] and targets [B, W]."""
    logits = logits.float()
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def _greedy(
    model: Any,
    tokenizer: Any,
    logits: torch.Tensor,
    past: Any,
    mask: torch.Tensor,
    next_positions: torch.Tensor,
    *,
    max_new_tokens: int,
    top_k: int,
    stop: StopRule | None,
) -> list[tuple[TokenScores, FinishReason]]:
    """Greedy decoding of B rows with early stopping and row retirement.

    Returns, per row, the scores of its generated tokens and its finish reason.
    """
    device = logits.device
    b = logits.shape[0]
    eos = torch.tensor(eos_token_ids(model, tokenizer), dtype=torch.long, device=device)
    active = torch.arange(b, device=device)
    generated: list[list[int]] = [[] for _ in range(b)]
    reason: list[FinishReason] = ["length"] * b
    steps: list[tuple[torch.Tensor, Any]] = []  # (rows, scores) per step
    positions = next_positions.clone()
    for step in range(max_new_tokens):
        scores = score_logits(logits, None, top_k)
        steps.append((active.cpu(), scores))
        rows = active.tolist()
        ids = scores.token_ids.tolist()
        is_eos = torch.isin(scores.token_ids, eos).tolist()
        done = []
        for j, (r, t) in enumerate(zip(rows, ids)):
            generated[r].append(t)
            if is_eos[j]:
                reason[r] = "eos"
            elif stop is not None and stop(r, generated[r]):
                reason[r] = "stop"
            done.append(reason[r] != "length")
        if step == max_new_tokens - 1 or all(done):
            break
        keep = torch.tensor([not d for d in done], device=device)
        next_ids = scores.token_ids
        if not bool(keep.all()):
            index = torch.nonzero(keep).squeeze(1)
            past.batch_select_indices(index)
            mask, positions, active, next_ids = mask[index], positions[index], active[index], next_ids[index]
        mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
        logits = forward(model, next_ids[:, None], mask, positions[:, None], past)[:, -1]
        positions = positions + 1
    if not steps:
        return [(TokenScores.empty(top_k), "length") for _ in range(b)]
    # regroup the per-step rows into one sequence per row (stable sort keeps the step order)
    row_of = torch.cat([rows for rows, _ in steps]).numpy()
    order = np.argsort(row_of, kind="stable")
    bounds = np.searchsorted(row_of[order], np.arange(b + 1))

    def flat(name: str) -> np.ndarray:
        return torch.cat([getattr(s, name).cpu() for _, s in steps]).numpy()[order]

    token_ids, chosen = flat("token_ids").astype(np.int32), flat("chosen").astype(np.float32)
    topk_ids, topk_lp = flat("topk_ids").astype(np.int32), flat("topk_logprobs").astype(np.float32)
    entropy = flat("entropy").astype(np.float32)
    out = []
    for r in range(b):
        sl = slice(bounds[r], bounds[r + 1])
        row_scores = TokenScores(token_ids[sl], chosen[sl], topk_ids[sl], topk_lp[sl], entropy[sl])
        out.append((row_scores, reason[r]))
    return out


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
    device = model_device(model)
    b, p = len(rows), len(prompt)
    n_x = torch.tensor([len(x) for x, _ in rows], dtype=torch.long)
    n_y = torch.tensor([len(y) for _, y in rows], dtype=torch.long)
    width = int((n_x + n_y).max())
    if width == 0:
        raise ValueError("every row has an empty prefix and an empty target; nothing to run")
    start = width - n_x - n_y  # first column of row r's prefix
    block = torch.full((b, width), pad_token_id(model, tokenizer), dtype=torch.long)
    for r, (x, y) in enumerate(rows):
        ids = [int(t) for t in (*x, *y)]
        if ids:
            block[r, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
    columns = torch.arange(width)[None]
    real = columns >= start[:, None]
    ones = torch.ones(b, p, dtype=torch.long)
    forced_mask = torch.cat([ones, real.long()], dim=1).to(device)
    decode_mask = torch.cat([ones, (real & (columns < (width - n_y)[:, None])).long()], dim=1).to(device)
    positions = (p + (columns - start[:, None]).clamp_min(0)).to(device)
    block = block.to(device)
    keep = int(n_y.max()) + 1  # logits of the last `keep` columns: last prefix token and the target tokens
    cuts = list(range(0, width, chunk_tokens))
    if len(cuts) > 1 and width - cuts[-1] < keep:
        cuts.pop()  # the last call must cover every kept column

    with torch.inference_mode():
        if cache is not None:
            past = copy.deepcopy(cache.past_key_values)
            if b > 1:
                past.batch_repeat_interleave(b)
            prompt_logits = cache.next_logits[None].expand(b, -1)
        else:
            past = new_cache(model)
            prompt_block = torch.tensor([prompt] * b, dtype=torch.long, device=device)
            prompt_positions = torch.arange(p, device=device)[None].expand(b, -1)
            prompt_mask = torch.ones_like(prompt_block)
            prompt_logits = forward(model, prompt_block, prompt_mask, prompt_positions, past)[:, -1]
        for lo, hi in zip(cuts, [*cuts[1:], width]):
            last_call = hi == width
            logits = forward(
                model,
                block[:, lo:hi],
                forced_mask[:, : p + hi],
                positions[:, lo:hi],
                past,
                min(keep, hi - lo) if last_call else 1,
            )
        # logits[:, c] follows block column width - keep + c (c = 0 … keep-1); with an empty prefix the
        # logits after the prefix are the prompt's own
        logits = logits.float()
        if keep > logits.shape[1]:  # fewer block columns than kept ones (an empty prefix in a tiny block)
            logits = torch.cat([logits.new_zeros(b, keep - logits.shape[1], logits.shape[2]), logits], dim=1)
        k_y = n_y.max().item()
        col = (keep - 1 - n_y).to(device)  # the column after row r's last prefix token
        rows_index = torch.arange(b, device=device)
        after_prefix = logits[rows_index, col]
        empty = (n_x == 0).to(device)
        after_prefix = torch.where(empty[:, None], prompt_logits.float(), after_prefix)
        offsets = torch.arange(max(k_y, 1), device=device)
        idx = (col[:, None] + offsets[None]).clamp_max(keep - 1)  # column predicting target token j
        picked = logits[rows_index[:, None], idx]  # [B, max t, V]
        picked[:, 0] = after_prefix
        target_cols = (width - n_y.to(device))[:, None] + offsets[None]
        targets = block[rows_index[:, None], target_cols.clamp_max(width - 1)]
        target_lp = _chosen_logprobs(picked, targets).cpu().numpy().astype(np.float64)
        del logits, picked

        decoded: list[tuple[TokenScores, FinishReason]] = (
            _greedy(
                model,
                tokenizer,
                after_prefix,
                past,
                decode_mask,
                (p + n_x).to(device),
                max_new_tokens=max_new_tokens,
                top_k=top_k,
                stop=stop,
            )
            if max_new_tokens > 0
            else [(TokenScores.empty(top_k), "length")] * b
        )
    results = []
    for r, ((x, y), (gen, finish)) in enumerate(zip(rows, decoded)):
        texts = token_texts(tokenizer, gen.token_ids, context_ids=[*prompt, *map(int, x)]) if len(gen) else []
        record = GenerationRecord.from_scores(
            gen, texts, finish_reason="eos" if finish == "eos" else "length", num_prompt_tokens=p + len(x)
        )
        results.append(ForcedContinuation(target_lp[r, : len(y)].copy(), record, finish))
    return results


__all__ = ["CHUNK_TOKENS", "FinishReason", "ForcedContinuation", "StopRule", "force_and_continue"]
