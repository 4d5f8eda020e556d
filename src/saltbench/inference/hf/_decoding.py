"""The greedy decoding core: every transformers forward pass of generation, teacher forcing and the
interventions goes through here (docs/generation.md §6).

A batch of B rows is carried as a :class:`DecodeState` — key/value cache, attention mask over it, each
row's next position id and next-token logits — and moved on by three steps:

* :func:`prefill` — prompts, left-padded, into a fresh cache (:meth:`PromptCache.expand` instead copies
  one prompt encoded once into B rows);
* :func:`force` — teacher forcing: a block of given tokens per row is fed in chunks, the chosen tokens are
  scored, and the state continues after the first ``visible`` tokens of each row (the rest stay in the
  cache, masked out);
* :func:`greedy_decode` — greedy tokens (or tokens a chooser samples: the draws), one forward pass per
  step, until each row emits an EOS id, a stop rule says it is done, or the budget is spent;
* :meth:`DecodeState.repeat` — each row repeated ``n`` times (the draws of a prompt share its prefill).

Layout. Padding columns are masked out and position ids count real tokens only, so every row sees the
positions it would see alone. Forced blocks are ``align="end"`` (left-padded: rows end in the same
column, so when only the last columns are scored the language-model head runs on those alone) or
``align="start"`` (right-padded: every column is scored, chunk by chunk)::

    align="end"     prompt   pad pad x x x y y      (decoding sees prompt + x; y masked out)
    align="start"   prompt   x x x x pad pad pad    (every forced token scored)

Scores. Every position's statistics come from :func:`~saltbench.inference.hf._logit_stats.score_logits`
(float32 ``log_softmax`` of the raw logits); the full-vocabulary logits of a step are dropped once scored.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
import torch

from saltbench.inference.base import Finish, StopRule
from saltbench.inference.hf._logit_stats import StepScores, score_logits
from saltbench.inference.records import TokenScores

Align = Literal["start", "end"]
Chooser = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]
"""``choose(logits [b, V], rows [b], step) -> token ids [b]``: a decoding step's tokens other than greedy."""


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


@dataclass
class DecodeState:
    """B rows ready for their next token. Decoding extends ``past`` in place."""

    logits: torch.Tensor  # [B, V] next-token logits, the model's dtype
    past: Any  # key/value cache of B rows
    mask: torch.Tensor  # [B, L] attention mask over the cache (1 = real token)
    next_positions: torch.Tensor  # [B] position id of each row's next token

    def repeat(self, n: int) -> DecodeState:
        """Each row repeated ``n`` times in place (rows ``r·n … r·n + n − 1`` are copies of row ``r``)."""
        if n == 1:
            return self
        self.past.batch_repeat_interleave(n)
        return DecodeState(
            self.logits.repeat_interleave(n, 0),
            self.past,
            self.mask.repeat_interleave(n, 0),
            self.next_positions.repeat_interleave(n, 0),
        )


@dataclass
class PromptCache:
    """A prompt encoded once: its ids, its key/value cache (batch 1) and the logits that follow it."""

    prompt_ids: tuple[int, ...]
    past_key_values: Any
    next_logits: torch.Tensor  # [V], the model's dtype

    def __len__(self) -> int:
        return len(self.prompt_ids)

    def expand(self, rows: int) -> DecodeState:
        """A state of ``rows`` copies of the prompt (the cache is deep-copied; ``self`` stays valid)."""
        past = copy.deepcopy(self.past_key_values)
        if rows > 1:
            past.batch_repeat_interleave(rows)
        device = self.next_logits.device
        return DecodeState(
            logits=self.next_logits[None].expand(rows, -1),
            past=past,
            mask=torch.ones(rows, len(self), dtype=torch.long, device=device),
            next_positions=torch.full((rows,), len(self), dtype=torch.long, device=device),
        )


@dataclass
class _Layout:
    """Padded rows: ``ids`` [B, W+1] (a spare pad column: the target after the last column), ``mask`` and
    ``positions`` [B, W] (positions count each row's real tokens from 0), each row's first column."""

    ids: torch.Tensor
    mask: torch.Tensor
    positions: torch.Tensor
    start: list[int]
    lengths: list[int]

    @property
    def width(self) -> int:
        return int(self.mask.shape[1])


def _span_mask(start: Sequence[int], count: Sequence[int], width: int) -> torch.Tensor:
    """[B, width] int64: 1 on columns ``start[r] … start[r] + count[r] − 1`` of row ``r``."""
    columns = torch.arange(width)[None]
    first = torch.tensor(list(start), dtype=torch.long)[:, None]
    return (
        (columns >= first) & (columns < first + torch.tensor(list(count), dtype=torch.long)[:, None])
    ).long()


def _pad_rows(sequences: Sequence[Sequence[int]], pad_id: int, align: Align, device: torch.device) -> _Layout:
    lengths = [len(s) for s in sequences]
    width = max(lengths, default=0)
    start = [width - n if align == "end" else 0 for n in lengths]
    ids = torch.full((len(sequences), width + 1), pad_id, dtype=torch.long)
    for row, (seq, s) in enumerate(zip(sequences, start)):
        if len(seq):
            ids[row, s : s + len(seq)] = torch.as_tensor([int(t) for t in seq], dtype=torch.long)
    positions = (torch.arange(width)[None] - torch.tensor(start, dtype=torch.long)[:, None]).clamp_min(0)
    mask = _span_mask(start, lengths, width)
    return _Layout(ids.to(device), mask.to(device), positions.to(device), start, lengths)


def prefill(model: Any, sequences: Sequence[Sequence[int]], pad_id: int) -> DecodeState:
    """Encode B non-empty prompts, left-padded, in a fresh cache (logits of the last position only)."""
    layout = _pad_rows(sequences, pad_id, "end", model_device(model))
    past = new_cache(model)
    width = layout.width
    logits = forward(model, layout.ids[:, :width], layout.mask, layout.positions, past)[:, -1]
    return DecodeState(logits, past, layout.mask, layout.positions[:, -1] + 1)


def encode_prompt_cache(model: Any, prompt_ids: Sequence[int]) -> PromptCache:
    """Run the prompt once and keep its key/value cache and next-token logits."""
    ids = [int(t) for t in prompt_ids]
    if not ids:
        raise ValueError("prompt_ids must contain at least one token")
    with torch.inference_mode():
        state = prefill(model, [ids], pad_id=0)
    return PromptCache(tuple(ids), state.past, state.logits[0])


def _score_block(logits: torch.Tensor, targets: torch.Tensor, k: int | None) -> StepScores:
    """Scores of logits [B, W, V] against forced targets [B, W], shaped [B, W(, k)]."""
    b, w, v = logits.shape
    return score_logits(logits.reshape(b * w, v), targets.reshape(b * w), k).reshape(b, w)


def force(
    model: Any,
    state: DecodeState,
    rows: Sequence[Sequence[int]],
    *,
    pad_id: int,
    align: Align,
    chunk_tokens: int,
    top_k: int | None,
    scored: Sequence[int] | None = None,
    visible: Sequence[int] | None = None,
) -> tuple[list[TokenScores], DecodeState]:
    """Teacher forcing: feed ``rows[r]`` after row ``r`` of ``state``, score its forced tokens, and continue.

    Args:
        rows: the forced tokens of each row (any may be empty).
        align: ``"end"``: rows end in the same column; the logits are computed only from the first column
            that predicts a scored token or the continuation (the last call is widened to hold them all,
            earlier calls keep one column). ``"start"``: rows start in the same column and every call
            computes and scores all its columns.
        chunk_tokens: block columns per forward call (bounds ``B × chunk_tokens × V`` logits).
        top_k: statistics of the scored tokens, as :func:`score_logits` (``None``: chosen log-probs only).
        scored: how many trailing tokens of each row are scored (default: all).
        visible: how many leading tokens of each row the continuation sees (default: all); the others stay
            in the cache, masked out, and the continuation takes their positions.

    Returns:
        The scores of each row's ``scored`` tokens (the first from ``state.logits``, the others from the
        column before them) and the state after each row's ``visible`` tokens.
    """
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be >= 1, got {chunk_tokens}")
    device = state.logits.device
    b = len(rows)
    layout = _pad_rows(rows, pad_id, align, device)
    width, ids, start, lengths = layout.width, layout.ids, layout.start, layout.lengths
    n_scored = list(lengths) if scored is None else [int(s) for s in scored]
    n_visible = list(lengths) if visible is None else [int(v) for v in visible]
    mask = torch.cat([state.mask, layout.mask], dim=1)
    positions = state.next_positions[:, None] + layout.positions
    # the first column whose logits are needed: it predicts a scored token or the continuation
    needed = max(0, min(s + min(n - k, v) - 1 for s, n, k, v in zip(start, lengths, n_scored, n_visible)))
    cuts = list(range(0, width, chunk_tokens))
    if align == "end":
        while len(cuts) > 1 and cuts[-1] > needed:
            cuts.pop()  # the last call covers every needed column
    cached = state.mask.shape[1]
    row_index = torch.arange(b, device=device)
    first_tokens = ids[row_index, torch.tensor(start, device=device)]
    parts = [_score_block(state.logits[:, None], first_tokens[:, None], top_k)]  # predicts each row's token 0
    cont_col = torch.tensor([s + v - 1 if v else -1 for s, v in zip(start, n_visible)], device=device)
    next_logits = state.logits.clone()  # after each row's visible tokens (rows with none keep these)
    for lo, hi in zip(cuts, [*cuts[1:], width]):
        first = max(lo, needed)
        logits = forward(
            model, ids[:, lo:hi], mask[:, : cached + hi], positions[:, lo:hi], state.past, max(hi - first, 1)
        )
        if hi > first:  # logits of columns first … hi-1, predicting tokens first+1 … hi
            parts.append(_score_block(logits, ids[:, first + 1 : hi + 1], top_k))
            here = (cont_col >= first) & (cont_col < hi)
            if bool(here.any()):
                picked = logits[row_index, (cont_col - first).clamp(0, hi - first - 1)]
                next_logits = torch.where(here[:, None], picked.to(next_logits.dtype), next_logits)
        del logits
    stats = StepScores.cat(parts, 1)  # [B, S]; slot 0: state.logits, slot 1 + c - needed: column c
    scores = []
    for r in range(b):
        tokens = np.arange(lengths[r] - n_scored[r], lengths[r])
        scores.append(stats.take((r, np.where(tokens == 0, 0, start[r] + tokens - needed))))
    after = DecodeState(
        logits=next_logits,
        past=state.past,
        mask=torch.cat([state.mask, _span_mask(start, n_visible, width).to(device)], dim=1),
        next_positions=state.next_positions + torch.tensor(n_visible, dtype=torch.long, device=device),
    )
    return scores, after


class Continued(NamedTuple):
    """One row's greedy continuation: its tokens' statistics and why it stopped."""

    scores: TokenScores
    finish: Finish


def greedy_decode(
    model: Any,
    state: DecodeState,
    *,
    max_new_tokens: int,
    eos_ids: Sequence[int],
    top_k: int,
    stop: StopRule | None = None,
    drop_finished: bool = False,
    on_step: Callable[[int], None] | None = None,
    choose: Chooser | None = None,
) -> list[Continued]:
    """Greedy continuation of the B rows of ``state``, one :class:`Continued` per row (in order); with
    ``choose`` (the draws), each step's tokens are ``choose(logits, batch rows of the cache rows, step)``.

    A row stops after an EOS id (kept as its last token), when ``stop(row, generated_ids)`` says so
    (asked after every non-EOS token), or after ``max_new_tokens``; the batch stops when every row has.
    ``drop_finished=True`` drops finished rows from the cache (the cost follows the rows still running);
    otherwise they keep being fed and their extra tokens are discarded. ``on_step(n)``: rows still running.
    """
    logits, past, mask, positions = state.logits, state.past, state.mask, state.next_positions.clone()
    del state  # the caller's prompt logits are released after the first step
    device, b = logits.device, logits.shape[0]
    k = min(top_k, logits.shape[-1])
    eos = torch.tensor(list(eos_ids), dtype=torch.long, device=device)
    rows = torch.arange(b, device=device)  # the batch row of each cache row
    running = torch.ones(b, dtype=torch.bool, device=device)
    generated: list[list[int]] = [[] for _ in range(b)]
    stopped = [False] * b  # rows the stop rule ended
    steps: list[tuple[torch.Tensor, torch.Tensor, StepScores]] = []  # (rows, running, scores) per step
    next_ids = rows  # the tokens fed at the next step (set at the end of each step)
    for step in range(max_new_tokens):
        if step:  # feed the previous step's tokens; its logits were released before this forward pass
            logits = forward(model, next_ids[:, None], mask, positions[:, None], past)[:, -1]
            positions = positions + 1
        scores = score_logits(logits, None if choose is None else choose(logits, rows, step), top_k)
        del logits
        steps.append((rows, running, scores))
        if on_step is not None:
            on_step(int(running.sum()))
        done = torch.isin(scores.token_ids, eos) & running
        if stop is not None:
            is_done, live = done.tolist(), running.tolist()
            for j, (r, t) in enumerate(zip(rows.tolist(), scores.token_ids.tolist())):
                if live[j]:
                    generated[r].append(t)
                    if not is_done[j] and stop(r, generated[r]):
                        stopped[r] = is_done[j] = True
            done = torch.tensor(is_done, device=device)
        running = running & ~done
        if step == max_new_tokens - 1 or not bool(running.any()):
            break
        next_ids = scores.token_ids
        if drop_finished and not bool(running.all()):
            index = torch.nonzero(running).squeeze(1)
            past.batch_select_indices(index)
            mask, positions, rows, running, next_ids = (
                mask[index],
                positions[index],
                rows[index],
                running[index],
                next_ids[index],
            )
        mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
    if not steps:
        return [Continued(TokenScores.empty(k), "length") for _ in range(b)]
    # regroup the per-step rows into one sequence per row (a stable sort keeps the step order)
    row_of = torch.cat([r for r, _, _ in steps]).cpu().numpy()
    kept = np.flatnonzero(torch.cat([lv for _, lv, _ in steps]).cpu().numpy())  # tokens of running rows
    order = kept[np.argsort(row_of[kept], kind="stable")]
    bounds = np.searchsorted(row_of[order], np.arange(b + 1))
    flat = StepScores.cat([s for _, _, s in steps], 0)
    eos_set = {int(e) for e in eos_ids}
    out = []
    for r in range(b):
        scores_r = flat.take(order[bounds[r] : bounds[r + 1]])
        last = int(scores_r.token_ids[-1]) if len(scores_r) else None
        finish: Finish = "eos" if last in eos_set else "stop" if stopped[r] else "length"
        out.append(Continued(scores_r, finish))
    return out
