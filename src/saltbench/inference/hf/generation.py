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
from collections.abc import Callable, Sequence
from typing import Any

import torch

from saltbench.inference.base import DrawSettings, draw_seed, eos_token_ids, screen_prompts
from saltbench.inference.detokenize import token_texts
from saltbench.inference.hf._decoding import Chooser, greedy_decode, model_device, prefill
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
    batches = _Batches(model, tokenizer, prompts, max_new_tokens, batch_size, top_k, max_context)
    return [draws[0] for draws in batches.run(1, None, progress)]


def sample(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str] | Sequence[Sequence[int]],
    seeds: Sequence[int],
    settings: DrawSettings,
    *,
    max_new_tokens: int,
    batch_size: int = 8,
    top_k: int = TOP_K,
    max_context: int | None = None,
    progress: bool = True,
) -> list[list[GenerationRecord]]:
    """``settings.n`` draws per prompt (docs/generation.md §7), in input order: as :func:`generate`, but each
    batch of ``max(1, batch_size // n)`` prompts is prefilled once and repeated ``n`` times, and each row's
    tokens are sampled (:func:`~saltbench.inference.hf._sampling.sample_tokens`) from the uniforms of its
    seed ``draw_seed(seeds[i], d)``, so a draw does not depend on the batch. A prompt that cannot run gives
    ``n`` error records."""
    from saltbench.inference.hf._sampling import row_uniforms, sample_tokens

    if len(seeds) != len(prompts):
        raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts")
    batches = _Batches(
        model, tokenizer, prompts, max_new_tokens, max(1, batch_size // settings.n), top_k, max_context
    )

    def chooser(batch: Sequence[int]) -> Chooser:
        row_seeds = [draw_seed(seeds[i], d) for i in batch for d in range(settings.n)]
        uniforms = row_uniforms(row_seeds, max_new_tokens).to(model_device(model))

        def choose(logits: torch.Tensor, rows: torch.Tensor, step: int) -> torch.Tensor:
            return sample_tokens(logits, uniforms[rows, step], settings.temperature, settings.top_p)

        return choose

    return batches.run(settings.n, chooser, progress)


class _Batches:
    """The screened prompts of :func:`generate` / :func:`sample`, decoded in batches (longest first)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        prompts: Sequence[str] | Sequence[Sequence[int]],
        max_new_tokens: int,
        batch_size: int,
        top_k: int,
        max_context: int | None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_context is None:
            max_context = getattr(model.config, "max_position_embeddings", None) or 2**31 - 1
        self.encoded, self.failed = screen_prompts(
            tokenizer, prompts, max_context=max_context, max_new_tokens=max_new_tokens, top_k=top_k
        )
        self.model, self.tokenizer, self.budget, self.top_k = model, tokenizer, max_new_tokens, top_k
        self.batch_size = batch_size

    def run(
        self, n: int, chooser: Callable[[Sequence[int]], Chooser] | None, progress: bool
    ) -> list[list[GenerationRecord]]:
        """``n`` records per prompt (rows ``n`` copies of each prompt's prefill; ``chooser(batch)`` picks
        the tokens of a batch's rows, greedy without one)."""
        model, encoded = self.model, self.encoded
        results = [[r] * n if r is not None else [] for r in self.failed]
        order = sorted((i for i, r in enumerate(self.failed) if r is None), key=lambda i: -len(encoded[i]))
        bar = _progress_bar(len(order), progress)
        started, produced = time.perf_counter(), 0

        def count(active: int) -> None:
            nonlocal produced
            produced += active
            if bar is not None:
                bar.set_postfix_str(
                    f"{produced / max(time.perf_counter() - started, 1e-9):.1f} tok/s", refresh=False
                )

        eos_ids, pad_id = eos_token_ids(model, self.tokenizer), pad_token_id(model, self.tokenizer)
        with torch.inference_mode():
            for lo in range(0, len(order), self.batch_size):
                batch = order[lo : lo + self.batch_size]
                decoded = greedy_decode(
                    model,
                    prefill(model, [encoded[i] for i in batch], pad_id).repeat(n),  # no reference kept here
                    max_new_tokens=self.budget,
                    eos_ids=eos_ids,
                    top_k=self.top_k,
                    on_step=count,
                    choose=None if chooser is None else chooser(batch),
                )
                for row, (scores, finish) in enumerate(decoded):
                    index = batch[row // n]
                    results[index].append(
                        GenerationRecord.from_scores(
                            scores,
                            token_texts(self.tokenizer, scores.token_ids, context_ids=encoded[index]),
                            finish_reason="eos" if finish == "eos" else "length",
                            num_prompt_tokens=len(encoded[index]),
                        )
                    )
                if bar is not None:
                    bar.update(len(batch))
        if bar is not None:
            bar.close()
        return results


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="sample", desc="generate", dynamic_ncols=True)
