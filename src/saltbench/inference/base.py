"""What every inference backend shares, without torch: the contract a loaded model keeps
(:class:`LoadedModel`), the forced continuations of the interventions (:class:`ForcedContinuation`,
:func:`cut_continuation`), and the screening of prompts that cannot fit (:func:`screen_prompts`)
(docs/backends.md §7).

A stage never asks which backend it runs on: it loads a model through
:func:`saltbench.inference.backends.load_backend` and gets a :class:`LoadedModel`, whose methods are the
whole contract:

* :meth:`~LoadedModel.render` — instructions as the model sees them (the registry's chat template, system
  prompt and thinking flag);
* :meth:`~LoadedModel.generate` — one greedy :class:`~saltbench.inference.GenerationRecord` per prompt,
  with a token budget per prompt (capped by the registry's ``max_new_tokens`` rule,
  :meth:`~saltbench.inference.registry.ModelSpec.generation_budget`);
* ``sample(prompts, budgets, seeds, settings)`` (optional; a model class whose ``draws`` class attribute
  is ``"seeded"`` or ``"unseeded"`` has it) — ``settings.n`` sampled records (*draws*) per prompt, the
  prompt's seed in ``seeds`` (:class:`DrawSettings`, docs/generation.md §7);
* :meth:`~LoadedModel.prompt_cache` and :meth:`~LoadedModel.force_and_continue` — the interventions'
  batched pass: teacher-force ``prefix + target`` after one prompt and continue greedily after the prefix
  (docs/interventions.md §5.2).

Attributes a caller may read: ``continuous_batching`` (the engine schedules any number of requests at once,
so callers pass all of them in one call; otherwise in groups of ``batch_size``) and ``full_entropy``
(whether the generations carry the full-vocabulary entropy; vLLM and served models return only the top-k,
so ``full.mean_entropy`` / ``full.max_entropy`` are NaN there, docs/generation.md §3.1).

The transformers, vLLM, served and simulated backends import their types from here, so that a backend
without torch (``openai``, ``vllm_server``, ``simulated``) never imports it for a dataclass.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

import numpy as np

from saltbench.core.seeds import derive_seed
from saltbench.inference.chat import encode_prompt, render_for_spec
from saltbench.inference.records import TOP_K, GenerationRecord, TokenScores

if TYPE_CHECKING:
    from saltbench.inference.registry import ModelSpec

logger = logging.getLogger(__name__)

Pair = tuple[Sequence[int], Sequence[int]]
"""``(prefix_ids, target_ids)`` of one teacher-forced row."""

Finish = Literal["eos", "stop", "length"]
"""Why a row stopped: an EOS id, the stop rule, or the token budget."""

FinishReason = Finish
"""``eos``, ``stop`` (the stop rule) or ``length`` (the budget): a forced continuation's finish reason."""

StopRule = Callable[[int, Sequence[int]], bool]
"""``stop(row, generated_token_ids)`` → ``True`` once the row has generated enough."""


@dataclass(frozen=True)
class DrawSettings:
    """How draws are sampled (``inference.samples``, docs/generation.md §7): ``n`` per prompt, from
    ``softmax(logits / temperature)`` restricted to the nucleus of mass ``top_p``. Draw ``d`` of a prompt
    whose seed is ``s`` is seeded by :func:`draw_seed` ``(s, d)``."""

    n: int
    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if self.n < 1 or not self.temperature > 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"draws need n >= 1, temperature > 0 and top_p in (0, 1], got {self}")


def draw_seed(prompt_seed: int, draw: int) -> int:
    """The seed of draw ``draw`` of a prompt seeded ``prompt_seed``:
    :func:`~saltbench.core.seeds.derive_seed` ``(prompt_seed, draw)``, the same on every backend."""
    return derive_seed(prompt_seed, draw)


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


def cut_continuation(
    scores: TokenScores, eos_ids: Sequence[int], row: int, stop: StopRule | None
) -> tuple[int, FinishReason]:
    """Length and finish reason of a continuation decoded with per-token stopping (EOS, then the rule),
    for engines that cannot ask the rule after every token (vLLM, a server): the continuation is decoded to
    its budget and cut here, which gives the same tokens and finish reason as stopping there."""
    ids = scores.token_ids.tolist()
    eos = set(eos_ids)
    for t, token in enumerate(ids, start=1):
        if token in eos:
            return t, "eos"
        if stop is not None and stop(row, ids[:t]):
            return t, "stop"
    return len(ids), "length"


class LoadedModel(Protocol):
    """A registry model loaded once for many prompt sets (module docstring)."""

    backend: ClassVar[str]
    continuous_batching: ClassVar[bool]
    full_entropy: ClassVar[bool]
    spec: ModelSpec
    tokenizer: Any
    batch_size: int
    top_k: int

    def render(self, instructions: Sequence[str]) -> list[str]: ...

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]: ...

    def prompt_cache(self, prompt_ids: Sequence[int]) -> Any: ...

    def force_and_continue(
        self,
        prompt_ids: Sequence[int],
        rows: Sequence[Pair],
        *,
        max_new_tokens: int,
        cache: Any = None,
        stop: StopRule | None = None,
    ) -> list[ForcedContinuation]: ...


class SamplingModel(LoadedModel, Protocol):
    """A loaded model that also samples draws (docs/generation.md §7)."""

    def sample(
        self,
        prompts: Sequence[str],
        budgets: Sequence[int],
        seeds: Sequence[int],
        settings: DrawSettings,
        *,
        progress: bool = True,
    ) -> list[list[GenerationRecord]]: ...


def sampling_model(model: LoadedModel) -> SamplingModel:
    """``model`` as a :class:`SamplingModel`.

    Raises:
        TypeError: its class has no ``sample`` method (a backend that cannot sample: the configuration
            check refuses such a run before any job, so this is a backend plugin's mistake).
    """
    if not callable(getattr(model, "sample", None)):
        raise TypeError(
            f"model {model.spec.name!r} on backend {model.backend!r} has no sample method: it cannot draw "
            "(inference.samples)"
        )
    typed: SamplingModel = model  # type: ignore[assignment]
    return typed


@dataclass
class ModelBase:
    """What a backend's model class may start from: the registry entry, the tokenizer, the engine and the
    decoding settings, the registry's rendering (:meth:`render`) and budget rule (:meth:`capped`)."""

    spec: ModelSpec
    tokenizer: Any
    engine: Any
    batch_size: int
    top_k: int

    def render(self, instructions: Sequence[str]) -> list[str]:
        """The prompts as the model sees them (the registry's chat template, system prompt, thinking flag)."""
        return render_for_spec(self.tokenizer, instructions, self.spec)

    def capped(self, prompts: Sequence[str], budgets: Sequence[int]) -> list[int]:
        """One budget per prompt, capped by the registry's rule
        (:meth:`~saltbench.inference.registry.ModelSpec.generation_budget`)."""
        if len(budgets) != len(prompts):
            raise ValueError(f"{len(budgets)} budgets for {len(prompts)} prompts")
        return [self.spec.generation_budget(b) for b in budgets]


# -- prompts that cannot run, and where a generation ends ------------------------------------------------


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


def per_prompt_budgets(max_new_tokens: int | Sequence[int], n: int) -> list[int]:
    """``max_new_tokens`` as one budget per prompt (``n`` prompts); every budget must be >= 1."""
    budgets = [max_new_tokens] * n if isinstance(max_new_tokens, int) else [int(b) for b in max_new_tokens]
    if len(budgets) != n:
        raise ValueError(f"{len(budgets)} max_new_tokens values for {n} prompts")
    if any(b < 1 for b in budgets):
        raise ValueError(f"max_new_tokens must be >= 1, got {min(budgets)}")
    return budgets


def screen_prompts(
    tokenizer: Any,
    prompts: Sequence[str] | Sequence[Sequence[int]],
    *,
    max_context: int,
    max_new_tokens: int | Sequence[int],
    top_k: int = TOP_K,
) -> tuple[list[list[int]], list[GenerationRecord | None]]:
    """Token ids of every prompt, and an ``error`` record for each one that cannot be generated.

    A prompt cannot run when it is empty or longer than ``max_context − max_new_tokens`` (one budget for
    all prompts, or one per prompt); its slot in the second list holds a :meth:`GenerationRecord.failed`
    (logged as a warning), the others ``None``. Shared by every backend, so they reject the same prompts
    with the same message.
    """
    budgets = per_prompt_budgets(max_new_tokens, len(prompts))
    raw_ids = [p if not isinstance(p, str) else encode_prompt(tokenizer, p) for p in prompts]
    encoded = [[int(t) for t in ids] for ids in raw_ids]
    results: list[GenerationRecord | None] = [None] * len(encoded)
    for index, (ids, budget) in enumerate(zip(encoded, budgets, strict=True)):
        limit = max_context - budget
        if not ids:
            error = "empty prompt"
        elif len(ids) > limit:
            error = (
                f"prompt has {len(ids)} tokens; max_context {max_context} - max_new_tokens {budget} "
                f"leaves room for {max(limit, 0)}"
            )
        else:
            continue
        results[index] = GenerationRecord.failed(error, num_prompt_tokens=len(ids), k=top_k)
        logger.warning("prompt %d not generated: %s", index, error)
    return encoded, results


__all__ = [
    "DrawSettings",
    "Finish",
    "FinishReason",
    "ForcedContinuation",
    "LoadedModel",
    "ModelBase",
    "Pair",
    "SamplingModel",
    "StopRule",
    "cut_continuation",
    "draw_seed",
    "eos_token_ids",
    "generation_config_eos_ids",
    "per_prompt_budgets",
    "sampling_model",
    "screen_prompts",
]
