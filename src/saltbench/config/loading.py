"""Workflow configuration: validation with readable errors, resolved values, config files.

The configuration model (one dataclass per block in this package, every key's type, bounds, default and
description) is the single source of truth; the JSON schema
``saltbench/schema/config.schema.json`` is generated from it (``python -m saltbench.config --write-schema``)
and committed for editors. The Snakefile calls :func:`resolve_config` before any job runs: a wrong key or
value raises :class:`ConfigError` whose message names the offending key path (for example
``datasets.params.dna: unknown parameter 'max_codon'``); :func:`validate_config` returns the same result as
the plain resolved mapping. See docs/architecture.md §5.

Validation is in three steps: the schema (unknown keys, types, bounds, names); the model's checks between
keys (``check_*`` methods of :class:`~saltbench.config.workflow.WorkflowConfig`); the checks against the
outside world (:mod:`saltbench.config.checks`: task generators' parameters, the paper data folder, the number
of inference jobs, the training recipe, the model registry). "integer" in the schema means a real integer:
``2.0`` (a float in YAML) and ``true`` are rejected, unlike plain Draft 2020-12, which accepts ``2.0`` as an
integer.

Config files are read by :func:`read_config_file` with :class:`StrictYAMLLoader` (duplicate keys are errors;
syntax errors name the file and line); :func:`check_config_files` re-reads the files Snakemake loaded with its
own, lenient YAML loader. ``python -m saltbench.config FILE...`` checks config files
from the command line.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable, Mapping
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar

import yaml

from saltbench.config.checks import check_outside_world
from saltbench.config.schema import Block, ConfigError, build
from saltbench.config.workflow import BLOCKS, WorkflowConfig, json_schema, registry_defs
from saltbench.core.blocks import check_schema, describe_error, strict_validator
from saltbench.io.yaml_files import DuplicateKeyError, StrictYAMLLoader, yaml_error_message

SCHEMA_FILE = "schema/config.schema.json"
"""The generated JSON schema, relative to the package (``src/saltbench/``)."""
MODELS_SCHEMA_FILE = "schema/models.schema.json"
"""The generated JSON schema of the model registry, relative to the package."""
REGISTRY_DOCS = "docs/registry.md"
"""The generated page of the model registry's keys, relative to the workflow root."""

B = TypeVar("B", bound=Block)


def render_schema() -> str:
    """The text of the committed schema file: :func:`saltbench.config.workflow.json_schema` as indented
    JSON."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def render_registry_schema() -> str:
    """The text of the committed registry schema: :func:`saltbench.inference.registry.registry_schema` as
    indented JSON."""
    from saltbench.inference.registry import registry_schema

    return json.dumps(registry_schema(), indent=2, ensure_ascii=False) + "\n"


def write_schema(path: str | PathLike[str] | None = None) -> list[Path]:
    """Write :func:`render_schema` to ``path``; without ``path``: to the package's
    ``schema/config.schema.json``, and the registry's generated files too (the package's
    ``schema/models.schema.json`` and, run from the workflow root, docs/registry.md). Returns the paths."""
    if path is not None:
        Path(path).write_text(render_schema(), encoding="utf-8")
        return [Path(path)]
    from saltbench.inference.registry import registry_reference

    package = Path(__file__).parents[1]
    written = {
        package / SCHEMA_FILE: render_schema(),
        package / MODELS_SCHEMA_FILE: render_registry_schema(),
    }
    if Path(REGISTRY_DOCS).parent.is_dir():
        written[Path(REGISTRY_DOCS)] = registry_reference()
    for target, text in written.items():
        target.write_text(text, encoding="utf-8")
    return list(written)


@functools.cache
def _schema_text() -> str:
    return resources.files("saltbench").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def load_schema() -> dict[str, Any]:
    """The workflow configuration JSON schema shipped with the package (a fresh copy).

    It is generated from :mod:`saltbench.config` (a test checks that the committed file is current);
    ``$defs/task`` lists :data:`saltbench.tasks.TASK_SLUGS`.
    """
    return copy.deepcopy(_schema(_schema_text()))


@functools.cache
def _schema(text: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(text)
    return parsed


@functools.cache
def _validator(path: str | None = None) -> Any:
    """The strict validator (:func:`saltbench.core.blocks.strict_validator`) of the config schema (``path``:
    of one top-level block), with the installed plugins' names in ``$defs``."""
    schema = {**_schema(_schema_text()), "$defs": registry_defs(broken=True)}  # installed plugins' names too
    if path is not None:
        schema = {**schema["properties"][path], "$defs": schema["$defs"]}
    return strict_validator(schema)


def _describe(error: Any, prefix: tuple[str, ...] = ()) -> str:
    """:func:`saltbench.core.blocks.describe_error`, with the sanity bound of ``datasets.n_samples`` told."""
    message = describe_error(error, prefix)
    if error.validator == "maximum" and message.startswith("datasets.n_samples"):
        message += " samples per task (a sanity bound; the paper uses at most 400)"
    return message


def _check_schema(data: Any, path: str | None = None) -> None:
    """Raise :class:`ConfigError` naming a NaN or infinite number, else listing (up to five) schema errors of
    ``data``, each with its key path."""
    prefix = (path,) if path is not None else ()
    check_schema(
        _validator(path), data, error=ConfigError, what="configuration", prefix=prefix, describe=_describe
    )


def resolve_config(config: Mapping[str, Any], *, check_models: bool = True) -> WorkflowConfig:
    """Validate ``config`` and return it typed, with every default filled in.

    Checks, in this order: the schema; each task's generator parameters (``datasets.params``,
    ``training.tasks.*.params``) against its ``generate`` signature; the datasets (a sample count for every
    task, the paper data folder); the number of inference jobs (:func:`_check_job_count`); names that must
    be computed by an earlier stage (:meth:`~saltbench.config.workflow.WorkflowConfig.check_analysis`); the
    training recipe (when ``training.enabled``); the interventions grid; and (``check_models``) that every
    model in ``models`` and, when enabled, ``interventions.models`` exists in the model registry.

    Raises:
        ConfigError: the first problem found, naming its key path.
    """
    data = dict(config)
    _check_schema(data)
    settings = build(WorkflowConfig, data)
    check_outside_world(settings, check_models=check_models)
    return settings


def validate_config(config: Mapping[str, Any], *, check_models: bool = True) -> dict[str, Any]:
    """:func:`resolve_config` as a plain mapping (Snakemake's ``config``): the keys as written, then every
    defaulted key."""
    return resolve_config(config, check_models=check_models).to_dict()


def resolve_block(key: str, block: Mapping[str, Any] | None, cls: type[B]) -> B:
    """One top-level block alone (``key``: ``analysis``, ``interventions``, ...) as ``cls`` (its class in
    :data:`~saltbench.config.workflow.BLOCKS`, or a subclass): validated against its part of the schema,
    defaults filled in (``None``: the block is not given). Checks involving other blocks or the outside world
    are :func:`resolve_config`'s.

    Raises:
        ConfigError: naming ``key.<path>``.
    """
    if not issubclass(cls, BLOCKS[key]):
        raise TypeError(f"{cls.__name__} is not the class of config block {key!r} ({BLOCKS[key].__name__})")
    data = dict(block or {})
    _check_schema(data, key)
    return build(cls, data)


def read_config_file(path: str | PathLike[str]) -> dict[str, Any]:
    """Read a YAML (or JSON) config file with :class:`StrictYAMLLoader`, without validating its values.

    Checks that the file is well-formed YAML, has no duplicate keys and has a mapping at the top level
    (an empty file gives ``{}``).

    Raises:
        ConfigError: naming the file, and the line for a syntax error or a duplicate key.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            raw = yaml.load(fh, Loader=StrictYAMLLoader)  # noqa: S506 - a SafeLoader subclass
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_error_message(path, exc)) from exc
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, got {type(raw).__name__}")
    return raw


def check_config_files(paths: Iterable[str | PathLike[str]]) -> None:
    """Re-read the config files Snakemake loaded (``workflow.configfiles``) with the strict loader.

    Snakemake parses ``--configfile`` / ``configfile:`` files itself, keeping the last value of a
    duplicate key without a word; this checks each file for duplicate keys (and syntax errors and a
    non-mapping top level) with :func:`read_config_file`. The merged values are checked by
    :func:`validate_config`.

    Raises:
        ConfigError: the first problem found, naming the file and the line.
    """
    for path in paths:
        read_config_file(path)


def load_config(path: str | PathLike[str], *, check_models: bool = True) -> dict[str, Any]:
    """Read a config file strictly (:func:`read_config_file`) and validate it (:func:`validate_config`)."""
    return validate_config(read_config_file(path), check_models=check_models)


__all__ = [
    "DuplicateKeyError",
    "StrictYAMLLoader",
    "check_config_files",
    "load_config",
    "load_schema",
    "read_config_file",
    "render_registry_schema",
    "render_schema",
    "resolve_block",
    "resolve_config",
    "validate_config",
    "write_schema",
]
