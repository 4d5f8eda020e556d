"""The interventions' forced-prefix pass through vLLM (same results as :mod:`saltbench.inference.hf.forced`,
other engine).

For one prompt (``P`` tokens) and rows ``(x_r, y_r)`` — an answer prefix and the target (separator and
reference atom) — one engine call serves every row with two requests each:

* **continuation**: prompt ``prompt + x_r``, greedy, ``max_new_tokens``, top-k log-probabilities; with
  the engine's prefix caching (:func:`saltbench.inference.load_vllm` with ``prefix_caching=True``) the
  prompt's key/value blocks are computed once and reused by every row of the sample;
* **target**: prompt ``prompt + x_r + y_r``, one new token, ``prompt_logprobs=0`` — the teacher-forced
  ``log p(y_j | prompt, x_r, y_<j)`` are the prompt log-probabilities at positions ``P+n … P+n+t−1``.
  vLLM would not read the prefix cache for a request with prompt log-probabilities (cached positions
  get none); we let it (``skip_reading_prefix_cache=False``) because only the last ``t`` positions are
  needed: vLLM fills them whenever fewer than ``P+n`` tokens came from the cache (checked with the
  request's ``num_cached_tokens``; a request that hit more is run again without the cache).

The prompt alone is run first (one token), so its key/value blocks are cached before the rows' requests
are scheduled together — otherwise every row of the first engine step would encode the prompt itself.

vLLM cannot ask a Python rule after every token, so the stop rule of the transformers path is applied
afterwards: the continuation is cut at the first token after which ``stop(row, ids)`` holds (or at an
EOS), which gives the same tokens and finish reason as stopping there; the engine's extra tokens up to
``max_new_tokens`` are discarded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from saltbench.inference.base import ForcedContinuation, StopRule, cut_continuation
from saltbench.inference.detokenize import token_texts
from saltbench.inference.records import GenerationRecord, TokenScores
from saltbench.inference.vllm.engine import (
    VllmEngine,
    completion_scores,
    prompt_token_logprobs,
    sampling_params,
)

log = logging.getLogger(__name__)


def vllm_force_and_continue(
    engine: VllmEngine,
    prompt_ids: Sequence[int],
    rows: Sequence[tuple[Sequence[int], Sequence[int]]],
    *,
    max_new_tokens: int,
    top_k: int = 20,
    stop: StopRule | None = None,
) -> list[ForcedContinuation]:
    """:func:`saltbench.inference.hf.forced.force_and_continue` through vLLM (module docstring)."""
    from vllm.inputs import TokensPrompt

    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    prompt = [int(t) for t in prompt_ids]
    if not rows:
        return []
    continue_params = (
        sampling_params(engine, max_tokens=max_new_tokens, logprobs=top_k) if max_new_tokens else None
    )
    target_params = sampling_params(engine, max_tokens=1, prompt_logprobs=0, skip_reading_prefix_cache=False)
    engine.llm.generate(
        [TokensPrompt(prompt_token_ids=prompt)], sampling_params(engine, max_tokens=1), use_tqdm=False
    )  # caches the prompt's blocks
    requests: list[Any] = []
    params: list[Any] = []
    target_len: dict[int, int] = {}  # request index -> target tokens
    for x, y in rows:
        if continue_params is not None:
            requests.append(TokensPrompt(prompt_token_ids=[*prompt, *map(int, x)]))
            params.append(continue_params)
        if len(y):
            requests.append(TokensPrompt(prompt_token_ids=[*prompt, *map(int, x), *map(int, y)]))
            params.append(target_params)
            target_len[len(requests) - 1] = len(y)
    outputs = engine.llm.generate(requests, params, use_tqdm=False) if requests else []
    for i, length in target_len.items():
        if outputs[i].num_cached_tokens >= len(requests[i]["prompt_token_ids"]) - length:
            log.debug(
                "target request %d: %d tokens from the prefix cache cover the target; run again without it",
                i,
                outputs[i].num_cached_tokens,
            )
            (outputs[i],) = engine.llm.generate(
                [requests[i]], sampling_params(engine, max_tokens=1, prompt_logprobs=0), use_tqdm=False
            )
    outputs = iter(outputs)
    results = []
    for r, (x, y) in enumerate(rows):
        context = [*prompt, *map(int, x)]
        if continue_params is not None:
            scores = completion_scores(next(outputs).outputs[0], top_k)
            length, finish = cut_continuation(scores, engine.eos_ids, r, stop)
            scores = scores.slice(0, length)
        else:
            scores, finish = TokenScores.empty(top_k), "length"
        target = (
            prompt_token_logprobs(next(outputs).prompt_logprobs, len(context), len(y))
            if len(y)
            else np.zeros(0)
        )
        texts = token_texts(engine.tokenizer, scores.token_ids, context_ids=context) if len(scores) else []
        record = GenerationRecord.from_scores(
            scores,
            texts,
            finish_reason="eos" if finish == "eos" else "length",
            num_prompt_tokens=len(context),
        )
        results.append(ForcedContinuation(target.astype(np.float64), record, finish))
    return results
