"""Inference backends behind one small protocol: load a registry model once, generate, teacher-force and
continue.

A stage never asks which backend it runs on: it calls :func:`load_backend` (the model registry's
``backend`` key, or an override) and gets a :class:`LoadedModel`, whose methods are the whole contract:

* :meth:`~LoadedModel.render` — instructions as the model sees them (the registry's chat template, system
  prompt and thinking flag);
* :meth:`~LoadedModel.generate` — one greedy :class:`~saltbench.inference.GenerationRecord` per prompt,
  with a token budget per prompt (capped by the registry's ``max_new_tokens`` rule);
* :meth:`~LoadedModel.prompt_cache` and :meth:`~LoadedModel.force_and_continue` — the interventions'
  batched pass: teacher-force ``prefix + target`` after one prompt and continue greedily after the prefix
  (docs/interventions.md §5.2).

Attributes a caller may read: ``continuous_batching`` (the engine schedules any number of requests at once,
so callers pass all of them in one call; otherwise in groups of ``batch_size``) and ``full_entropy``
(whether the generations carry the full-vocabulary entropy; vLLM returns only the top-k, so
``full.mean_entropy`` / ``full.max_entropy`` are NaN there, docs/generation.md §3.1).

Backends are registered like tasks and confidence functions (docs/extending.md): the built-in ones in
:data:`BACKEND_LOADERS`, other packages' through the entry-point group ``saltbench.backends`` (name = the
backend's name in the model registry, value = its loader), listed by
:func:`~saltbench.inference.registry.backend_names` without being imported and imported only when a job
loads a model on them (recorded in the outputs' provenance as every
plugin is). A loader is ``loader(model_path, spec, **settings)`` returning a :class:`LoadedModel`; its
keyword parameters are its settings, taken by name from what the job offers (:class:`LoadSettings`), so each
backend states the settings it uses (``hf`` and ``simulated``: ``batch_size``, ``top_k``; ``vllm``: also
``num_threads`` and ``prefix_caching``; ``openai``: also ``cache_dir``; ``vllm_server``: also ``cache_dir``
and ``server``). The engines themselves are imported on first use (torch, transformers, vLLM).
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from saltbench.core.plugins import BACKEND_GROUP, PluginError, load_plugin
from saltbench.core.vocabulary import BACKENDS
from saltbench.inference.registry import backend_names

if TYPE_CHECKING:
    from saltbench.inference.forced import ForcedContinuation, StopRule
    from saltbench.inference.records import GenerationRecord
    from saltbench.inference.registry import ModelSpec

log = logging.getLogger(__name__)

Pair = tuple[Sequence[int], Sequence[int]]
"""``(prefix_ids, target_ids)`` of one teacher-forced row."""


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


@dataclass
class _Loaded:
    """What every backend shares: the registry entry, the tokenizer, the engine and the decoding settings."""

    spec: ModelSpec
    tokenizer: Any
    engine: Any
    batch_size: int
    top_k: int

    def render(self, instructions: Sequence[str]) -> list[str]:
        """The prompts as the model sees them (the registry's chat template, system prompt, thinking flag)."""
        from saltbench.inference.chat import render_prompts

        return render_prompts(
            self.tokenizer,
            instructions,
            system_prompt=self.spec.system_prompt,
            chat_template=self.spec.chat_template,
            template_kwargs=self.spec.template_kwargs,
        )

    def _capped(self, prompts: Sequence[str], budgets: Sequence[int]) -> list[int]:
        if len(budgets) != len(prompts):
            raise ValueError(f"{len(budgets)} budgets for {len(prompts)} prompts")
        return [self.spec.generation_budget(b) for b in budgets]


@dataclass
class HfModel(_Loaded):
    """transformers in-process: batches of ``batch_size`` prompts per budget; an encoded prompt's key/value
    cache is shared by the rows of an intervention batch."""

    backend: ClassVar[str] = "hf"
    continuous_batching: ClassVar[bool] = False
    full_entropy: ClassVar[bool] = True

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]:
        """One greedy record per prompt, in order (batches of one budget each)."""
        from saltbench.inference.generation import generate

        capped = self._capped(prompts, budgets)
        records: list[Any] = [None] * len(prompts)
        for budget in sorted(set(capped)):
            index = [i for i, b in enumerate(capped) if b == budget]
            out = generate(
                self.engine,
                self.tokenizer,
                [prompts[i] for i in index],
                max_new_tokens=budget,
                batch_size=self.batch_size,
                top_k=self.top_k,
                max_context=self.spec.max_context,
                progress=progress,
            )
            for i, record in zip(index, out, strict=True):
                records[i] = record
        return records

    def prompt_cache(self, prompt_ids: Sequence[int]) -> Any:
        """The prompt encoded once (:class:`~saltbench.inference.PromptCache`)."""
        from saltbench.inference._decoding import encode_prompt_cache

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
        """:func:`saltbench.inference.forced.force_and_continue` on this model."""
        from saltbench.inference.forced import force_and_continue

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


@dataclass
class VllmModel(_Loaded):
    """One vLLM engine: every request in one continuous batch, a budget per request; the prompt's prefix is
    cached by the engine (``prefix_caching``), so :meth:`prompt_cache` has nothing to do."""

    backend: ClassVar[str] = "vllm"
    continuous_batching: ClassVar[bool] = True
    full_entropy: ClassVar[bool] = False

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]:
        """One greedy record per prompt, in order (one continuous batch)."""
        from saltbench.inference.vllm_engine import generate_vllm

        return generate_vllm(
            self.engine,
            prompts,
            max_new_tokens=self._capped(prompts, budgets),
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
        """:func:`saltbench.inference.vllm_forced.vllm_force_and_continue` on this engine."""
        from saltbench.inference.vllm_forced import vllm_force_and_continue

        return vllm_force_and_continue(
            self.engine, prompt_ids, rows, max_new_tokens=max_new_tokens, top_k=self.top_k, stop=stop
        )


def _load_hf(model_path: str | Path, spec: ModelSpec, *, batch_size: int, top_k: int) -> HfModel:
    from saltbench.inference.loading import load_model

    model, tokenizer = load_model(
        model_path, spec.dtype, revision=spec.revision, num_gpus=spec.resources.gpus
    )
    return HfModel(spec, tokenizer, model, batch_size, top_k)


def _load_vllm(
    model_path: str | Path,
    spec: ModelSpec,
    *,
    batch_size: int,
    top_k: int,
    num_threads: int | None,
    prefix_caching: bool,
) -> VllmModel:
    from saltbench.inference.vllm_engine import load_vllm

    engine = load_vllm(
        model_path, spec, num_threads=num_threads, prefix_caching=prefix_caching, max_logprobs=top_k
    )
    return VllmModel(spec, engine.tokenizer, engine, batch_size, top_k)


def _load_openai(
    model_path: str | Path, spec: ModelSpec, *, batch_size: int, top_k: int, cache_dir: str | Path | None
) -> LoadedModel:
    from saltbench.inference.openai_api import load_openai

    return load_openai(spec, batch_size=batch_size, top_k=top_k, cache_dir=cache_dir)


def _load_vllm_server(
    model_path: str | Path,
    spec: ModelSpec,
    *,
    batch_size: int,
    top_k: int,
    cache_dir: str | Path | None,
    server: str | Path | None,
) -> LoadedModel:
    from saltbench.inference.serving import load_managed

    return load_managed(model_path, spec, server, batch_size=batch_size, top_k=top_k, cache_dir=cache_dir)


def _load_simulated(model_path: str | Path, spec: ModelSpec, *, batch_size: int, top_k: int) -> LoadedModel:
    from saltbench.inference.simulated import load_simulated

    return load_simulated(model_path, spec, batch_size=batch_size, top_k=top_k)


@dataclass(frozen=True)
class LoadSettings:
    """What a job offers the backend that loads its model; each backend's loader takes the ones its keyword
    parameters name (module docstring): ``batch_size`` (transformers' decoding batches), ``top_k``
    (log-probabilities kept per token), ``num_threads`` (a CPU vLLM engine's threads; transformers uses
    torch's thread pool as set), ``prefix_caching`` (vLLM: cache shared prompt prefixes, for the
    interventions), ``cache_dir`` (the ``openai`` backend's on-disk cache of completed requests, so that a
    rerun after a kill sends only the unfinished ones; ``None``: none), ``server`` (``vllm_server``: the
    endpoint file of the model's workflow-managed server)."""

    batch_size: int = 8
    top_k: int = 20
    num_threads: int | None = None
    prefix_caching: bool = False
    cache_dir: str | Path | None = None
    server: str | Path | None = None


Loader = Callable[..., LoadedModel]
"""``loader(model_path, spec, **settings) -> LoadedModel`` (module docstring)."""

BACKEND_LOADERS: Mapping[str, Loader] = MappingProxyType(
    {
        "hf": _load_hf,
        "vllm": _load_vllm,
        "openai": _load_openai,
        "vllm_server": _load_vllm_server,
        "simulated": _load_simulated,
    }
)
"""The loader of each built-in backend (:data:`saltbench.core.vocabulary.BACKENDS`)."""

if tuple(BACKEND_LOADERS) != BACKENDS:  # the vocabulary and this registry name the same built-in backends
    raise RuntimeError(f"backend loaders {tuple(BACKEND_LOADERS)} differ from BACKENDS {BACKENDS}")


def backend_loader(name: str) -> Loader:
    """The loader of backend ``name``: a built-in one, or the plugin's, imported now (first use).

    Raises:
        ValueError: no backend of that name is installed.
        PluginError: the plugin fails to import or is not callable.
    """
    if name in BACKEND_LOADERS:
        return BACKEND_LOADERS[name]
    if name not in backend_names():
        raise ValueError(f"backend {name!r} is not one of {', '.join(backend_names())}")
    loader = load_plugin(BACKEND_GROUP, name).value
    if not callable(loader):
        raise PluginError(f"{BACKEND_GROUP} plugin {name!r} is {loader!r}, not a loader function")
    typed: Loader = loader
    return typed


def loader_settings(name: str, loader: Loader, settings: LoadSettings) -> dict[str, Any]:
    """The settings ``loader`` of backend ``name`` takes: its keyword parameters, each taken by name from
    ``settings`` (module docstring).

    Raises:
        PluginError: the loader asks for a setting no job offers (and gives it no default).
    """
    offered = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    taken: dict[str, Any] = {}
    for parameter in list(inspect.signature(loader).parameters.values())[2:]:
        if parameter.name in offered:
            taken[parameter.name] = offered[parameter.name]
        elif parameter.default is inspect.Parameter.empty and parameter.kind not in (
            inspect.Parameter.VAR_KEYWORD,
            inspect.Parameter.VAR_POSITIONAL,
        ):
            raise PluginError(
                f"backend {name!r}: its loader asks for the setting {parameter.name!r}, which no job offers "
                f"(offered: {', '.join(offered)})"
            )
    return taken


def load_backend(
    model_path: str | Path,
    spec: ModelSpec,
    *,
    backend: str | None = None,
    settings: LoadSettings = LoadSettings(),
) -> LoadedModel:
    """Load the registry model ``spec`` (its files at ``model_path``) on ``backend`` (default: the entry's
    ``backend`` key).

    The files at ``model_path`` are checked against their digest manifest first
    (:func:`~saltbench.inference.registry.verify_model_files`).

    Raises:
        ValueError: no backend called ``backend`` is installed (:func:`backend_names`).
        PluginError: a plugin backend fails to import, or asks for a setting no job offers.
        saltbench.io.CorruptFileError: a model file differs from the manifest (the message names it).
    """
    from saltbench.inference.registry import verify_model_files

    name = backend or spec.backend
    loader = backend_loader(name)
    verify_model_files(model_path, spec)
    loaded = loader(model_path, spec, **loader_settings(name, loader, settings))
    if spec.reasoning_format == "harmony" and loaded.tokenizer is not None:
        from saltbench.inference.detokenize import keep_special_tokens

        keep_special_tokens(loaded.tokenizer)  # the channel markers are special tokens (docs/reasoning.md §1)
    log.info("%s loaded on %s", spec.name, name)
    return loaded


__all__ = [
    "BACKEND_LOADERS",
    "HfModel",
    "LoadSettings",
    "LoadedModel",
    "Loader",
    "VllmModel",
    "backend_loader",
    "backend_names",
    "load_backend",
    "loader_settings",
]
