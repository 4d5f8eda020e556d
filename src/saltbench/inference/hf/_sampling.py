"""Seeded multinomial token choice for the draws of the ``hf`` backend (docs/generation.md §7).

Each row (one draw of one prompt) owns a stream of uniforms ``u_0, u_1, …`` from its own seed
(``numpy.random.default_rng(seed).random(budget)``), drawn before decoding, so a draw's tokens depend on its
seed and the model's logits only — not on the batch it runs in, the shard or the rows beside it. At step
``t`` the row's token is found by inverse transform sampling:

``q = softmax(logits / temperature)`` (float64); with ``top_p < 1`` the tokens are sorted by ``q``
(descending) and only the shortest prefix whose mass reaches ``top_p`` is kept; the token is the first
whose cumulative mass exceeds ``u_t × (kept mass)``. The recorded log-probabilities stay those of the
model (temperature 1, full vocabulary), exactly as greedy records them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def row_uniforms(seeds: Sequence[int], steps: int) -> torch.Tensor:
    """[B, steps] float64 uniforms in [0, 1), row ``r`` from ``default_rng(seeds[r])``."""
    if not seeds:
        return torch.zeros(0, steps, dtype=torch.float64)
    return torch.from_numpy(np.stack([np.random.default_rng(int(s)).random(steps) for s in seeds]))


NUCLEUS_CANDIDATES = 1024
"""With ``top_p < 1``, the nucleus is looked for among a row's this many most likely tokens first (a
partial sort); a row whose candidates hold less than ``top_p`` of the mass is sorted whole — same tokens
either way."""


def sample_tokens(
    logits: torch.Tensor, uniforms: torch.Tensor, temperature: float, top_p: float
) -> torch.Tensor:
    """One token id per row of ``logits`` [B, V], chosen by ``uniforms`` [B] (module docstring)."""
    scaled = logits.double() / temperature
    if top_p >= 1.0:
        return _inverse_transform(torch.softmax(scaled, dim=-1), uniforms)
    log_z = torch.logsumexp(scaled, dim=-1, keepdim=True)
    top = scaled.topk(min(NUCLEUS_CANDIDATES, scaled.shape[-1]), dim=-1, sorted=True)
    probs = (top.values - log_z).exp()
    tokens = top.indices.gather(-1, _inverse_transform(_nucleus(probs, top_p), uniforms)[:, None])[:, 0]
    short = torch.nonzero(probs.sum(-1) < top_p).squeeze(1)
    if short.numel():  # the candidates hold too little mass: sort these rows whole
        ordered, order = (scaled[short] - log_z[short]).exp().sort(dim=-1, descending=True, stable=True)
        pick = _inverse_transform(_nucleus(ordered, top_p), uniforms[short])
        tokens[short] = order.gather(-1, pick[:, None])[:, 0]
    return tokens


def _nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Probabilities [B, K] sorted descending, zero after the shortest prefix whose mass reaches ``top_p``."""
    before = probs.cumsum(-1) - probs  # mass of the more likely tokens
    return torch.where(before < top_p, probs, torch.zeros((), dtype=probs.dtype, device=probs.device))


def _inverse_transform(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Per row, the first position whose cumulative mass exceeds ``u × (row mass)`` (never a position
    without mass)."""
    cumulative = probs.cumsum(-1)
    target = (uniforms.to(cumulative) * cumulative[:, -1]).unsqueeze(-1)
    pick = torch.searchsorted(cumulative, target, right=True).squeeze(-1)
    last = (probs > 0).long().cumsum(-1).argmax(-1)  # the last position with mass: rounding never passes it
    return torch.minimum(pick, last)
