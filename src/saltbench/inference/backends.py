"""The registry of inference backends: which exist, how each is loaded and which options it takes
(docs/backends.md §7).

Every backend — built-in or another package's — is an entry point of the group ``saltbench.backends``: name
= the backend's name in the model registry, value = its loader. The built-in ones are saltbench's own
(``pyproject.toml``: ``hf``, ``vllm``, ``openai``, ``vllm_server``, ``simulated``, each one package of
:mod:`saltbench.inference`); an editable install whose metadata predates them reads them from the
checkout's ``pyproject.toml`` (:func:`builtin_backends`). Names are read from the packages' metadata without
importing anything (:func:`backend_names`); a backend plugin is imported when a job loads a model on it
(:func:`backend_loader`, recorded in the outputs' provenance as every plugin is) or when a registry entry
naming it is read (:func:`options_class`, not recorded). The engines themselves (torch, transformers, vLLM,
the ``openai`` client) are imported on first use.

A loader is ``loader(model_path, spec, **settings)`` returning a
:class:`~saltbench.inference.base.LoadedModel`. Its keyword parameters are its settings, taken by name from
what the job offers (:class:`LoadSettings`), so each backend states the settings it uses (``hf`` and
``simulated``: ``batch_size``, ``top_k``; ``vllm``: also ``num_threads`` and ``prefix_caching``; ``openai``:
also ``cache_dir``; ``vllm_server``: also ``cache_dir`` and ``server``). A keyword parameter ``options``
annotated with a :class:`~saltbench.core.blocks.Block` declares the backend's options: a registry entry's
``backend_options`` are validated against that block when the registry is read and handed to the loader
(``vllm`` and ``vllm_server``: :class:`~saltbench.inference.vllm.options.VllmOptions`; ``openai``:
:class:`~saltbench.inference.openai.options.ApiSettings`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import saltbench
from saltbench.core.blocks import Block, is_block
from saltbench.core.plugins import BACKEND_GROUP, OWN_DISTRIBUTION, PluginError, load_plugin, refuse
from saltbench.core.vocabulary import BACKENDS, DRAW_SUPPORT, DrawSupport
from saltbench.inference.base import LoadedModel

if TYPE_CHECKING:
    from saltbench.inference.registry import ModelSpec

log = logging.getLogger(__name__)


def _checkout_entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The built-in backends as the ``pyproject.toml`` of the checkout this package is imported from
    declares them (``{}`` where there is none, as in an installed wheel)."""
    import tomllib

    pyproject = Path(saltbench.__file__).resolve().parents[2] / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    if project.get("name") != OWN_DISTRIBUTION:
        return {}
    declared = project.get("entry-points", {}).get(BACKEND_GROUP, {})
    return {
        name: importlib.metadata.EntryPoint(name, value, BACKEND_GROUP) for name, value in declared.items()
    }


@functools.cache
def _entry_points() -> tuple[dict[str, importlib.metadata.EntryPoint], dict[str, str]]:
    """``(built-in entry points by name, {plugin name: its distribution})`` of the group, read from the
    installed metadata without importing anything; the built-ins from the checkout's ``pyproject.toml``
    where saltbench's metadata declares none (an editable install older than them)."""
    builtin: dict[str, importlib.metadata.EntryPoint] = {}
    plugins: dict[str, str] = {}
    for point in importlib.metadata.entry_points(group=BACKEND_GROUP):
        package = point.dist.name if point.dist is not None else "an unknown distribution"
        if package == OWN_DISTRIBUTION:
            builtin.setdefault(point.name, point)
        else:
            plugins.setdefault(point.name, package)
    builtin = builtin or _checkout_entry_points()
    if not builtin:
        raise RuntimeError(
            f"saltbench declares no entry points of {BACKEND_GROUP} (its built-in backends): reinstall it "
            "(pip install -e .)"
        )
    return builtin, plugins


def builtin_backends() -> dict[str, importlib.metadata.EntryPoint]:
    """The built-in backends' entry points by name, in the order of
    :data:`saltbench.core.vocabulary.BACKENDS` (any other that saltbench declares after them)."""
    builtin = _entry_points()[0]
    order = [name for name in BACKENDS if name in builtin] + [
        name for name in builtin if name not in BACKENDS
    ]
    return {name: builtin[name] for name in order}


@functools.cache
def backend_names() -> tuple[str, ...]:
    """The backends a registry entry may name: the built-in ones (:func:`builtin_backends`), then the
    installed plugins' (sorted), read from the packages' metadata without importing them. A plugin that
    reuses a built-in backend's name is left out (the name stays the built-in's) and recorded as unusable
    (:func:`saltbench.core.plugins.refuse`): a run whose models use that name is refused naming it, the others
    run (:func:`saltbench.config.checks.check_backend_plugins`)."""
    builtin = builtin_backends()
    plugins = _entry_points()[1]
    for name, package in plugins.items():
        if name in builtin:
            refuse(
                BACKEND_GROUP,
                name,
                PluginError(
                    f"{BACKEND_GROUP} plugin {name!r} of package {package} reuses a built-in backend's name; "
                    f"uninstall it (pip uninstall {package})"
                ),
            )
    return (*builtin, *sorted(name for name in plugins if name not in builtin))


Loader = Callable[..., LoadedModel]
"""``loader(model_path, spec, **settings) -> LoadedModel`` (module docstring)."""


def backend_loader(name: str, *, record: bool = True) -> Loader:
    """The loader of backend ``name``, imported now: a built-in one, or a plugin's (recorded in the
    provenance of this process's outputs, :func:`saltbench.core.plugins.loaded_plugins`, unless ``record``
    is false).

    Raises:
        ValueError: no backend of that name is installed.
        PluginError: the plugin fails to import or is not callable.
    """
    builtin = builtin_backends()
    if name in builtin:
        loader = builtin[name].load()
    elif name in backend_names():
        loader = load_plugin(BACKEND_GROUP, name, record=record).value
    else:
        raise ValueError(f"backend {name!r} is not one of {', '.join(backend_names())}")
    if not callable(loader):
        raise PluginError(f"{BACKEND_GROUP} plugin {name!r} is {loader!r}, not a loader function")
    typed: Loader = loader
    return typed


def _resolved(name: str, loader: Loader, annotation: Any, what: str) -> Any:
    """An annotation of ``loader`` as an object: a string (``from __future__ import annotations``) is
    evaluated in the loader's module.

    Raises:
        PluginError: the string cannot be evaluated there.
    """
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, getattr(inspect.unwrap(loader), "__globals__", {}))  # noqa: S307
    except Exception as exc:  # a name the module imports only for type checkers, or a typo
        raise PluginError(
            f"backend {name!r}: its loader's {what} annotation {annotation!r} cannot be "
            f"resolved ({type(exc).__name__}: {exc}); import it in the loader's module"
        ) from None


def draw_support(name: str, spec: ModelSpec | None = None) -> DrawSupport:
    """What backend ``name`` can do for ``inference.samples`` (docs/generation.md §7): the ``draws`` class
    attribute of the model class its loader returns (the loader's return annotation; ``"none"`` without one),
    narrowed by the ``draws`` key of the entry's options block when it has one (``openai``: whether the
    server's API takes ``n`` and ``seed``). Nothing is loaded; the loader's module is imported.

    Example: ``draw_support("hf") == "seeded"``.
    """
    loader = backend_loader(name, record=False)
    returned = _resolved(name, loader, inspect.signature(loader).return_annotation, "return")
    declared = getattr(returned, "draws", "none")
    support: DrawSupport = declared if declared in DRAW_SUPPORT else "none"
    narrowed = getattr(spec.backend_options, "draws", None) if spec is not None else None
    if narrowed in DRAW_SUPPORT:
        support = min(support, narrowed, key=DRAW_SUPPORT.index)
    return support


def declared_options(name: str, loader: Loader) -> type[Block] | None:
    """The options block the loader of backend ``name`` declares: the annotation of its keyword parameter
    ``options`` (module docstring); ``None`` without one.

    Raises:
        PluginError: the annotation cannot be resolved or is not a :class:`~saltbench.core.blocks.Block`.
    """
    parameter = inspect.signature(loader).parameters.get("options")
    if parameter is None:
        return None
    annotation = _resolved(name, loader, parameter.annotation, "options")
    if not is_block(annotation):
        raise PluginError(
            f"backend {name!r}: its loader's parameter options is annotated {annotation!r}, not a "
            "saltbench.core.blocks.Block (the block of its options)"
        )
    typed: type[Block] = annotation
    return typed


@functools.cache
def options_class(name: str) -> type[Block] | None:
    """The options block of backend ``name`` (:func:`declared_options` of its loader, imported without being
    recorded); ``None`` when it declares none. A plugin that cannot be used is recorded as unusable
    (:func:`saltbench.core.plugins.refuse`), so that the runs whose models use it are refused, and raised.

    Raises:
        ValueError: no backend of that name is installed.
        PluginError: the plugin fails to import, is not callable or declares an unusable options block.
    """
    try:
        return declared_options(name, backend_loader(name, record=False))
    except PluginError as exc:
        refuse(BACKEND_GROUP, name, exc)
        raise


@dataclasses.dataclass(frozen=True)
class LoadSettings:
    """What a job offers the backend that loads its model; each backend's loader takes the ones its keyword
    parameters name (module docstring): ``batch_size`` (transformers' decoding batches), ``top_k``
    (log-probabilities kept per token), ``num_threads`` (a CPU vLLM engine's threads; transformers uses
    torch's thread pool as set), ``prefix_caching`` (vLLM: cache shared prompt prefixes, for the
    interventions), ``cache_dir`` (the ``openai`` and ``vllm_server`` backends' on-disk cache of completed
    requests, so that a rerun after a kill sends only the unfinished ones; ``None``: none), ``server``
    (``vllm_server``: the endpoint file of the model's workflow-managed server), ``whole_prefills`` (vLLM:
    never split a prompt's prefill on a CPU build, which seeded draws need; docs/generation.md §7.3)."""

    batch_size: int = 8
    top_k: int = 20
    num_threads: int | None = None
    prefix_caching: bool = False
    cache_dir: str | Path | None = None
    server: str | Path | None = None
    whole_prefills: bool = False


def loader_settings(name: str, loader: Loader, settings: LoadSettings) -> dict[str, Any]:
    """The settings ``loader`` of backend ``name`` takes: its keyword parameters (but ``options``), each
    taken by name from ``settings`` (module docstring).

    Raises:
        PluginError: the loader asks for a setting no job offers (and gives it no default).
    """
    offered = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    taken: dict[str, Any] = {}
    for parameter in list(inspect.signature(loader).parameters.values())[2:]:
        if parameter.name in offered:
            taken[parameter.name] = offered[parameter.name]
        elif (
            parameter.name != "options"
            and parameter.default is inspect.Parameter.empty
            and (parameter.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL))
        ):
            raise PluginError(
                f"backend {name!r}: its loader asks for the setting {parameter.name!r}, which no job offers "
                f"(offered: {', '.join(offered)})"
            )
    return taken


def options_for(options: type[Block] | None, spec: ModelSpec) -> Block | None:
    """The options a backend whose block is ``options`` runs ``spec`` with: the entry's ``backend_options``
    when they are of that block (the entry names this backend, or one that shares its block, as ``vllm``
    and ``vllm_server`` do), else the block's defaults (a run's ``inference.backend`` put the entry on
    another backend)."""
    if options is None:
        return None
    return spec.backend_options if isinstance(spec.backend_options, options) else options()


def load_backend(
    model_path: str | Path,
    spec: ModelSpec,
    *,
    backend: str | None = None,
    settings: LoadSettings = LoadSettings(),
) -> LoadedModel:
    """Load the registry model ``spec`` (its files at ``model_path``) on ``backend`` (default: the entry's
    ``backend`` key), with the settings its loader takes (:func:`loader_settings`) and its options
    (:func:`options_for`, also the ``backend_options`` of the spec it is handed).

    The files at ``model_path`` are checked against their digest manifest first
    (:func:`~saltbench.inference.sources.verify_model_files`).

    Raises:
        ValueError: no backend called ``backend`` is installed (:func:`backend_names`).
        PluginError: a plugin backend fails to import, or asks for a setting no job offers.
        saltbench.io.CorruptFileError: a model file differs from the manifest (the message names it).
    """
    from saltbench.inference.sources import verify_model_files

    name = backend or spec.backend
    loader = backend_loader(name)
    verify_model_files(model_path, spec)
    kwargs = loader_settings(name, loader, settings)
    options = declared_options(name, loader)
    if options is not None:
        kwargs["options"] = options_for(options, spec)
        if kwargs["options"] is not spec.backend_options:
            spec = dataclasses.replace(spec, backend_options=kwargs["options"])
    loaded = loader(model_path, spec, **kwargs)
    if spec.reasoning_format == "harmony" and loaded.tokenizer is not None:
        from saltbench.inference.detokenize import keep_special_tokens

        keep_special_tokens(loaded.tokenizer)  # the channel markers are special tokens (docs/reasoning.md §1)
    log.info("%s loaded on %s", spec.name, name)
    return loaded


__all__ = [
    "LoadSettings",
    "LoadedModel",
    "Loader",
    "backend_loader",
    "backend_names",
    "builtin_backends",
    "declared_options",
    "draw_support",
    "load_backend",
    "loader_settings",
    "options_class",
    "options_for",
]
