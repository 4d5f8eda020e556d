"""The ``vllm`` backend's model class and loader: one vLLM engine in this process (docs/backends.md §3).
vLLM is imported when a model is loaded, not with this module."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from saltbench.inference.base import DrawSettings, ForcedContinuation, ModelBase, Pair, StopRule
from saltbench.inference.vllm.options import VllmOptions

if TYPE_CHECKING:
    from saltbench.core.vocabulary import DrawSupport
    from saltbench.inference.records import GenerationRecord
    from saltbench.inference.registry import ModelSpec


@dataclass
class VllmModel(ModelBase):
    """One vLLM engine: every request in one continuous batch, a budget per request; the prompt's prefix is
    cached by the engine (``prefix_caching``), so :meth:`prompt_cache` has nothing to do."""

    backend: ClassVar[str] = "vllm"
    continuous_batching: ClassVar[bool] = True
    full_entropy: ClassVar[bool] = False
    draws: ClassVar[DrawSupport] = "seeded"

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]:
        """One greedy record per prompt, in order (one continuous batch)."""
        from saltbench.inference.vllm.engine import generate_vllm

        return generate_vllm(
            self.engine,
            prompts,
            max_new_tokens=self.capped(prompts, budgets),
            top_k=self.top_k,
            max_context=self.spec.max_context,
            progress=progress,
        )

    def sample(
        self,
        prompts: Sequence[str],
        budgets: Sequence[int],
        seeds: Sequence[int],
        settings: DrawSettings,
        *,
        progress: bool = True,
    ) -> list[list[GenerationRecord]]:
        """``settings.n`` draws per prompt, in order (one continuous batch,
        :func:`saltbench.inference.vllm.engine.sample_vllm`)."""
        from saltbench.inference.vllm.engine import sample_vllm

        return sample_vllm(
            self.engine,
            prompts,
            seeds,
            settings,
            max_new_tokens=self.capped(prompts, budgets),
            top_k=self.top_k,
            max_context=self.spec.max_context,
            progress=progress,
        )

    def prompt_cache(self, prompt_ids: Sequence[int]) -> None:
        """Nothing: the engine caches shared prefixes itself."""
        return None

    def force_and_continue(
        self,
        prompt_ids: Sequence[int],
        rows: Sequence[Pair],
        *,
        max_new_tokens: int,
        cache: Any = None,
        stop: StopRule | None = None,
    ) -> list[ForcedContinuation]:
        """:func:`saltbench.inference.vllm.forced.vllm_force_and_continue` on this engine."""
        from saltbench.inference.vllm.forced import vllm_force_and_continue

        return vllm_force_and_continue(
            self.engine, prompt_ids, rows, max_new_tokens=max_new_tokens, top_k=self.top_k, stop=stop
        )


def load(
    model_path: str | Path,
    spec: ModelSpec,
    *,
    batch_size: int,
    top_k: int,
    num_threads: int | None,
    prefix_caching: bool,
    options: VllmOptions,
    whole_prefills: bool = False,
) -> VllmModel:
    """The ``vllm`` backend's loader (entry point ``saltbench.backends:vllm``): an engine over the model at
    ``model_path`` with the entry's engine ``options`` (:class:`VllmOptions`), ``num_threads`` CPU threads
    on a CPU build, prefix caching when asked (the interventions), whole prefills when asked (draws)."""
    from saltbench.inference.vllm.engine import load_vllm

    engine = load_vllm(
        model_path,
        spec,
        options=options,
        num_threads=num_threads,
        prefix_caching=prefix_caching,
        max_logprobs=top_k,
        whole_prefills=whole_prefills,
    )
    return VllmModel(spec, engine.tokenizer, engine, batch_size, top_k)
