"""Batched greedy decoding with per-token log-probabilities, through plain transformers forward passes.

Algorithm of :func:`generate`:

1. Prompts (strings are tokenised by :func:`~saltbench.inference.chat.encode_prompt`) longer than
   ``max_context − max_new_tokens`` become ``finish_reason="error"`` records; the rest are sorted by
   length (longest first, stable) and cut into batches of ``batch_size``; results come back in input order.
2. A batch is left-padded; ``attention_mask`` marks the real tokens and ``position_ids`` count real
   tokens only (``cumsum(mask) − 1``), so every row sees the positions it would see alone.
3. One prefill pass fills a ``DynamicCache`` (only the last position's logits are computed), then one
   pass per new token feeds each row's greedy token at its own next position.
4. At every step the raw logits are turned into float32 ``log_softmax`` statistics
   (:func:`~saltbench.inference._logit_stats.score_logits`) and dropped; a row stops after emitting any
   of the model's EOS ids (the EOS token is kept, with text ``""``) or after ``max_new_tokens``.
   The batch stops when every row has stopped.

On CPU in float32 the tokens do not depend on the batch composition in practice (tested); log-probs
agree with an unbatched run to ~1e-5 (different matrix shapes reorder floating-point sums).
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from saltbench.inference._logit_stats import StepScores, score_logits, stack_steps, to_token_scores
from saltbench.inference.chat import encode_prompt
from saltbench.inference.detokenize import token_texts
from saltbench.inference.records import TOP_K, GenerationRecord

logger = logging.getLogger(__name__)


def eos_token_ids(model: Any, tokenizer: Any) -> list[int]:
    """All EOS ids of the model's generation config (an int or a list); the tokenizer's EOS if none."""
    return generation_config_eos_ids(getattr(model, "generation_config", None), tokenizer)


def generation_config_eos_ids(config: Any, tokenizer: Any) -> list[int]:
    """The EOS ids of a ``GenerationConfig`` (``eos_token_id``: an int or a list), else the tokenizer's."""
    eos = getattr(config, "eos_token_id", None) if config is not None else None
    if eos is None:
        eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        return []
    return sorted({int(e) for e in ([eos] if isinstance(eos, int) else eos)})


def pad_token_id(model: Any, tokenizer: Any) -> int:
    """The id used as filler for padding (never attended to): tokenizer pad, else EOS, else 0."""
    for candidate in (getattr(tokenizer, "pad_token_id", None), *eos_token_ids(model, tokenizer)):
        if candidate is not None:
            return int(candidate)
    return 0


def model_device(model: Any) -> torch.device:
    return next(model.parameters()).device


def _supports_logits_to_keep(model: Any) -> bool:
    cached = getattr(model, "_saltbench_logits_to_keep", None)
    if cached is None:
        cached = "logits_to_keep" in inspect.signature(model.forward).parameters
        try:
            model._saltbench_logits_to_keep = cached
        except AttributeError:  # pragma: no cover - exotic wrappers
            pass
    return bool(cached)


def forward(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    position_ids: torch.Tensor,
    past_key_values: Any,
    keep_last: int | None = 1,
) -> torch.Tensor:
    """One cached forward pass; returns the logits of the last ``keep_last`` positions (all if ``None``)."""
    kwargs: dict[str, Any] = {}
    if keep_last is not None and _supports_logits_to_keep(model):
        kwargs["logits_to_keep"] = keep_last
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        past_key_values=past_key_values,
        use_cache=True,
        **kwargs,
    )
    logits = out.logits
    if keep_last is not None and logits.shape[1] != keep_last:
        logits = logits[:, -keep_last:]
    return logits


def new_cache(model: Any) -> Any:
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:  # older transformers
        return DynamicCache()


def greedy_decode(
    model: Any,
    logits: torch.Tensor,
    past_key_values: Any,
    attention_mask: torch.Tensor,
    next_positions: torch.Tensor,
    *,
    max_new_tokens: int,
    eos_ids: Sequence[int],
    top_k: int = TOP_K,
    on_step: Callable[[int], None] | None = None,
) -> tuple[StepScores, torch.Tensor, torch.Tensor]:
    """Greedy continuation of B rows whose next-token logits [B, V] are ``logits``.

    ``attention_mask`` [B, L] covers the cache; ``next_positions`` [B] is each row's next position id.
    Returns the stacked statistics [B, T] (T = steps run), each row's number of tokens and whether it
    stopped at EOS. ``on_step(n)`` is called with the number of rows still running at each step.
    """
    device = logits.device
    batch = logits.shape[0]
    eos = torch.tensor(list(eos_ids), dtype=torch.long, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    lengths = torch.full((batch,), max_new_tokens, dtype=torch.long, device=device)
    positions = next_positions.clone()
    steps: list[StepScores] = []
    for step in range(max_new_tokens):
        if step:  # feed the previous step's tokens; its logits were released before this forward pass
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones(batch, 1)], dim=1)
            logits = forward(
                model, steps[-1].token_ids[:, None], attention_mask, positions[:, None], past_key_values
            )[:, -1]
            positions = positions + 1
        scores = score_logits(logits, None, top_k)
        del logits
        steps.append(scores)
        if on_step is not None:
            on_step(int((~finished).sum()))
        hit = torch.isin(scores.token_ids, eos) & ~finished
        lengths = torch.where(hit, step + 1, lengths)
        finished |= hit
        if step == max_new_tokens - 1 or bool(finished.all()):
            break
    return stack_steps(steps), lengths.cpu(), finished.cpu()


def _left_pad(
    sequences: Sequence[Sequence[int]], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """input_ids, attention_mask and position_ids [B, L] for left-padded sequences."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        if seq:
            ids[row, width - len(seq) :] = torch.as_tensor(list(seq), dtype=torch.long)
            mask[row, width - len(seq) :] = 1
    positions = (mask.cumsum(1) - 1).clamp_min(0)
    return ids.to(device), mask.to(device), positions.to(device)


def screen_prompts(
    tokenizer: Any,
    prompts: Sequence[str] | Sequence[Sequence[int]],
    *,
    max_context: int,
    max_new_tokens: int,
    top_k: int = TOP_K,
) -> tuple[list[list[int]], list[GenerationRecord | None]]:
    """Token ids of every prompt, and an ``error`` record for each one that cannot be generated.

    A prompt cannot run when it is empty or longer than ``max_context − max_new_tokens``; its slot in
    the second list holds a :meth:`GenerationRecord.failed` (logged as a warning), the others ``None``.
    Shared by every backend, so they reject the same prompts with the same message.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    raw_ids = [p if not isinstance(p, str) else encode_prompt(tokenizer, p) for p in prompts]
    encoded = [[int(t) for t in ids] for ids in raw_ids]
    limit = max_context - max_new_tokens
    results: list[GenerationRecord | None] = [None] * len(encoded)
    for index, ids in enumerate(encoded):
        if not ids:
            error = "empty prompt"
        elif len(ids) > limit:
            error = (
                f"prompt has {len(ids)} tokens; max_context {max_context} - max_new_tokens {max_new_tokens} "
                f"leaves room for {max(limit, 0)}"
            )
        else:
            continue
        results[index] = GenerationRecord.failed(error, num_prompt_tokens=len(ids), k=top_k)
        logger.warning("prompt %d not generated: %s", index, error)
    return encoded, results


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
    device = model_device(model)
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
            ids, mask, positions = _left_pad([encoded[i] for i in batch], pad_id, device)
            past = new_cache(model)
            scores, lengths, hit_eos = greedy_decode(
                model,
                forward(model, ids, mask, positions, past)[:, -1],  # no reference kept here
                past,
                mask,
                positions[:, -1] + 1,
                max_new_tokens=max_new_tokens,
                eos_ids=eos_ids,
                top_k=top_k,
                on_step=count,
            )
            del past
            for row, index in enumerate(batch):
                token_scores = to_token_scores(scores, row, int(lengths[row]))
                results[index] = GenerationRecord.from_scores(
                    token_scores,
                    token_texts(tokenizer, token_scores.token_ids, context_ids=encoded[index]),
                    finish_reason="eos" if bool(hit_eos[row]) else "length",
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
