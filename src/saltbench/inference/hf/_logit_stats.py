"""Per-position log-probability statistics from raw logits (docs/generation.md §3.1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from saltbench.inference.records import TokenScores


@dataclass
class StepScores:
    """Statistics of N positions (torch tensors; any leading shape, ``[N]`` below)."""

    token_ids: torch.Tensor  # [N] int64
    chosen: torch.Tensor  # [N] float32
    topk_ids: torch.Tensor  # [N, k] int64
    topk_logprobs: torch.Tensor  # [N, k] float32
    entropy: torch.Tensor  # [N] float32

    @classmethod
    def cat(cls, parts: Sequence[StepScores], dim: int) -> StepScores:
        """The parts concatenated along ``dim`` (positions for [N], rows or positions for [B, W]), on CPU."""
        return cls(
            token_ids=torch.cat([p.token_ids for p in parts], dim).cpu(),
            chosen=torch.cat([p.chosen for p in parts], dim).cpu(),
            topk_ids=torch.cat([p.topk_ids for p in parts], dim).cpu(),
            topk_logprobs=torch.cat([p.topk_logprobs for p in parts], dim).cpu(),
            entropy=torch.cat([p.entropy for p in parts], dim).cpu(),
        )

    def reshape(self, rows: int, columns: int) -> StepScores:
        """Statistics of ``rows × columns`` positions as [rows, columns(, k)]."""
        return StepScores(
            self.token_ids.reshape(rows, columns),
            self.chosen.reshape(rows, columns),
            self.topk_ids.reshape(rows, columns, -1),
            self.topk_logprobs.reshape(rows, columns, -1),
            self.entropy.reshape(rows, columns),
        )

    def take(self, index: Any) -> TokenScores:
        """Positions ``index`` (a numpy index into the position dimensions) of CPU statistics, as numpy
        :class:`TokenScores`."""
        return TokenScores(
            token_ids=self.token_ids.numpy()[index].astype(np.int32),
            chosen_logprobs=self.chosen.numpy()[index].astype(np.float32),
            topk_ids=self.topk_ids.numpy()[index].astype(np.int32),
            topk_logprobs=self.topk_logprobs.numpy()[index].astype(np.float32),
            entropy=self.entropy.numpy()[index].astype(np.float32),
        )


def score_logits(logits: torch.Tensor, chosen_ids: torch.Tensor | None, k: int | None) -> StepScores:
    """Statistics of the next-token distributions ``logits`` [N, V] (any float dtype).

    ``log p = log_softmax(float32(logits))``; the chosen token is ``chosen_ids`` (teacher forcing) or
    the greedy ``argmax(logits)`` (first index on ties); top-k sorted descending; entropy
    ``H = −Σ p log p`` over the full vocabulary, clamped at 0 against rounding.

    ``k=None`` computes the chosen log-probabilities only, as ``logit − logsumexp(logits)`` (no
    log-softmax over the vocabulary, no sort; equal to the full path up to float32 rounding); the
    top-k arrays are then empty (k = 0) and the entropy NaN.
    """
    logits = logits.float()
    if chosen_ids is None:
        chosen_ids = logits.argmax(dim=-1)
    if k is None:
        picked = logits.gather(-1, chosen_ids.unsqueeze(-1)).squeeze(-1)
        chosen = picked - torch.logsumexp(logits, dim=-1)
        n = chosen.shape[0]
        return StepScores(
            chosen_ids,
            chosen,
            chosen_ids.new_zeros(n, 0),
            chosen.new_zeros(n, 0),
            torch.full_like(chosen, float("nan")),
        )
    logp = torch.log_softmax(logits, dim=-1)
    chosen = logp.gather(-1, chosen_ids.unsqueeze(-1)).squeeze(-1)
    top = logp.topk(min(k, logp.shape[-1]), dim=-1, sorted=True)
    p = logp.exp()
    entropy = -torch.where(p > 0, p * logp, torch.zeros((), dtype=p.dtype, device=p.device)).sum(-1)
    return StepScores(chosen_ids, chosen, top.indices, top.values, entropy.clamp_min(0.0))
