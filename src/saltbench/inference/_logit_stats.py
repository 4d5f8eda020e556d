"""Per-position log-probability statistics from raw logits (shared by generation and teacher forcing)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from saltbench.inference.records import TokenScores


@dataclass
class StepScores:
    """Statistics of N positions (torch tensors on the model's device)."""

    token_ids: torch.Tensor  # [N] int64
    chosen: torch.Tensor  # [N] float32
    topk_ids: torch.Tensor  # [N, k] int64
    topk_logprobs: torch.Tensor  # [N, k] float32
    entropy: torch.Tensor  # [N] float32


def score_logits(logits: torch.Tensor, chosen_ids: torch.Tensor | None, k: int) -> StepScores:
    """Statistics of the next-token distributions ``logits`` [N, V] (any float dtype).

    ``log p = log_softmax(float32(logits))``; the chosen token is ``chosen_ids`` (teacher forcing) or
    the greedy ``argmax(logits)`` (first index on ties); top-k sorted descending; entropy
    ``H = −Σ p log p`` over the full vocabulary, clamped at 0 against rounding.
    """
    logits = logits.float()
    if chosen_ids is None:
        chosen_ids = logits.argmax(dim=-1)
    logp = torch.log_softmax(logits, dim=-1)
    chosen = logp.gather(-1, chosen_ids.unsqueeze(-1)).squeeze(-1)
    top = logp.topk(min(k, logp.shape[-1]), dim=-1, sorted=True)
    p = logp.exp()
    entropy = -torch.where(p > 0, p * logp, torch.zeros((), dtype=p.dtype, device=p.device)).sum(-1)
    return StepScores(chosen_ids, chosen, top.indices, top.values, entropy.clamp_min(0.0))


def stack_steps(steps: list[StepScores]) -> StepScores:
    """Concatenate per-step statistics of B rows into [B, T] (and [B, T, k]) tensors, moved to CPU."""
    return StepScores(
        token_ids=torch.stack([s.token_ids for s in steps], 1).cpu(),
        chosen=torch.stack([s.chosen for s in steps], 1).cpu(),
        topk_ids=torch.stack([s.topk_ids for s in steps], 1).cpu(),
        topk_logprobs=torch.stack([s.topk_logprobs for s in steps], 1).cpu(),
        entropy=torch.stack([s.entropy for s in steps], 1).cpu(),
    )


def to_token_scores(scores: StepScores, row: int | None, length: int) -> TokenScores:
    """Row ``row`` (or the whole thing when ``row is None``) truncated to ``length`` tokens, as numpy."""

    def take(t: torch.Tensor) -> torch.Tensor:
        return (t if row is None else t[row])[:length]

    return TokenScores(
        token_ids=take(scores.token_ids).numpy().astype(np.int32),
        chosen_logprobs=take(scores.chosen).numpy().astype(np.float32),
        topk_ids=take(scores.topk_ids).numpy().astype(np.int32),
        topk_logprobs=take(scores.topk_logprobs).numpy().astype(np.float32),
        entropy=take(scores.entropy).numpy().astype(np.float32),
    )
