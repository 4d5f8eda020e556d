"""The ``hf`` backend's model class and loader: transformers forward passes in this process
(docs/backends.md §3). torch and transformers are imported when a model is loaded, not with this module."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from saltbench.inference.base import DrawSettings, ForcedContinuation, ModelBase, Pair, StopRule

if TYPE_CHECKING:
    from saltbench.core.vocabulary import DrawSupport
    from saltbench.inference.records import GenerationRecord
    from saltbench.inference.registry import ModelSpec


@dataclass
class HfModel(ModelBase):
    """transformers in-process: batches of ``batch_size`` prompts per budget; an encoded prompt's key/value
    cache is shared by the rows of an intervention batch."""

    backend: ClassVar[str] = "hf"
    continuous_batching: ClassVar[bool] = False
    full_entropy: ClassVar[bool] = True
    draws: ClassVar[DrawSupport] = "seeded"

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]:
        """One greedy record per prompt, in order (batches of one budget each)."""
        from saltbench.inference.hf.generation import generate

        def run(index: list[int], budget: int) -> list[Any]:
            chosen = [prompts[i] for i in index]
            return generate(
                self.engine, self.tokenizer, chosen, max_new_tokens=budget, **self._decoding(progress)
            )

        return self._per_budget(prompts, budgets, run)

    def sample(
        self,
        prompts: Sequence[str],
        budgets: Sequence[int],
        seeds: Sequence[int],
        settings: DrawSettings,
        *,
        progress: bool = True,
    ) -> list[list[GenerationRecord]]:
        """``settings.n`` draws per prompt, in order (:func:`saltbench.inference.hf.generation.sample`;
        batches of one budget each, docs/generation.md §7)."""
        from saltbench.inference.hf.generation import sample

        def run(index: list[int], budget: int) -> list[Any]:
            chosen, chosen_seeds = [prompts[i] for i in index], [seeds[i] for i in index]
            return sample(
                self.engine,
                self.tokenizer,
                chosen,
                chosen_seeds,
                settings,
                max_new_tokens=budget,
                **self._decoding(progress),
            )

        return self._per_budget(prompts, budgets, run)

    def _decoding(self, progress: bool) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "top_k": self.top_k,
            "max_context": self.spec.max_context,
            "progress": progress,
        }

    def _per_budget(
        self, prompts: Sequence[str], budgets: Sequence[int], run: Callable[[list[int], int], list[Any]]
    ) -> list[Any]:
        """``run(index, budget)`` of the prompts of each capped budget (:meth:`capped`), in input order."""
        capped = self.capped(prompts, budgets)
        results: list[Any] = [None] * len(prompts)
        for budget in sorted(set(capped)):
            index = [i for i, b in enumerate(capped) if b == budget]
            for i, result in zip(index, run(index, budget), strict=True):
                results[i] = result
        return results

    def prompt_cache(self, prompt_ids: Sequence[int]) -> Any:
        """The prompt encoded once (:class:`~saltbench.inference.PromptCache`)."""
        from saltbench.inference.hf._decoding import encode_prompt_cache

        return encode_prompt_cache(self.engine, prompt_ids)

    def force_and_continue(
        self,
        prompt_ids: Sequence[int],
        rows: Sequence[Pair],
        *,
        max_new_tokens: int,
        cache: Any = None,
        stop: StopRule | None = None,
    ) -> list[ForcedContinuation]:
        """:func:`saltbench.inference.hf.forced.force_and_continue` on this model."""
        from saltbench.inference.hf.forced import force_and_continue

        return force_and_continue(
            self.engine,
            self.tokenizer,
            prompt_ids,
            rows,
            max_new_tokens=max_new_tokens,
            cache=cache,
            top_k=self.top_k,
            stop=stop,
        )


def load(model_path: str | Path, spec: ModelSpec, *, batch_size: int, top_k: int) -> HfModel:
    """The ``hf`` backend's loader (entry point ``saltbench.backends:hf``): the model at ``model_path`` on
    the GPUs of ``resources.gpus`` (sharded over several), else the CPU; no options."""
    from saltbench.inference.hf.loading import load_model

    model, tokenizer = load_model(
        model_path, spec.dtype, revision=spec.revision, num_gpus=spec.resources.gpus
    )
    return HfModel(spec, tokenizer, model, batch_size, top_k)
