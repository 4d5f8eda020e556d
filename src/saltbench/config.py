"""Workflow configuration: JSON-schema validation with readable errors, and defaults.

The schema (``saltbench/schema/config.schema.json``) is the single source of truth: each field's
``description`` documents it and its ``default`` fills it in. :func:`validate_config` is called by the
Snakefile before any job runs; a wrong key or value raises :class:`ConfigError` whose message names
the offending key path (for example ``datasets.params.dna: unknown parameter 'max_codon'``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import re

import jsonschema
import yaml


class ConfigError(ValueError):
    """The workflow configuration is invalid; the message names the key."""


def load_schema() -> dict[str, Any]:
    """The workflow configuration JSON schema shipped with the package.

    The ``interventions`` block's schema lives with its typed options
    (:data:`saltbench.interventions.CONFIG_SCHEMA`) and is inserted here.
    """
    from saltbench.interventions import CONFIG_SCHEMA as INTERVENTIONS_SCHEMA

    text = resources.files("saltbench").joinpath("schema/config.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    schema["$defs"]["interventions"] = INTERVENTIONS_SCHEMA
    return schema


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "<top level>"


def _describe(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        patterns = error.schema.get("patternProperties", {})

        unknown = [
            k for k in error.instance if k not in allowed and not any(re.search(p, k) for p in patterns)
        ]
        where = _key_path(error)
        keys = ", ".join(repr(k) for k in unknown)
        hint = f"; allowed: {', '.join(sorted(allowed))}" if allowed else ""
        return f"{where}: unknown key(s) {keys}{hint}"
    return f"{_key_path(error)}: {error.message}"


def _fill_defaults(schema: Mapping[str, Any], value: dict[str, Any]) -> None:
    for key, sub in schema.get("properties", {}).items():
        if key not in value and "default" in sub:
            value[key] = copy.deepcopy(sub["default"])
        if isinstance(value.get(key), dict) and sub.get("type") == "object":
            _fill_defaults(sub, value[key])


def _check_task_params(config: Mapping[str, Any]) -> None:
    from saltbench.tasks import get_task

    for slug, kwargs in config.get("datasets", {}).get("params", {}).items():
        try:
            get_task(slug).check_params(kwargs)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"datasets.params.{slug}: {exc}") from exc


def validate_config(config: Mapping[str, Any], *, check_models: bool = True) -> dict[str, Any]:
    """Validate ``config`` against the schema and return a copy with defaults filled in.

    Also checks, beyond the schema: generator parameter names against each task's ``generate``
    signature, and (``check_models``) that every model in ``models`` exists in the model registry.

    Raises:
        ConfigError: the first problem found, naming its key path.
    """
    schema = load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError("invalid configuration: " + "; ".join(_describe(e) for e in errors[:5]))
    filled = copy.deepcopy(dict(config))
    _fill_defaults(schema, filled)
    _check_task_params(filled)
    if filled["datasets"]["source"] == "paper" and not filled["datasets"].get("paper_path"):
        raise ConfigError("datasets.paper_path: required when datasets.source is 'paper'")
    _check_training(filled)
    _check_interventions(filled)
    if check_models and filled.get("models"):
        _check_models(filled)
    return filled


def _check_interventions(config: Mapping[str, Any]) -> None:
    from saltbench.interventions import InterventionOptions

    try:
        InterventionOptions.from_config(config)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc


def _check_training(config: Mapping[str, Any]) -> None:
    training = config.get("training", {})
    if not training.get("enabled", False):
        return
    from saltbench.training import TrainConfig

    try:
        TrainConfig.from_dict({k: v for k, v in training.items() if k not in ("enabled", "name")})
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"training: {exc}") from exc


def _check_models(config: Mapping[str, Any]) -> None:
    from saltbench.inference import load_model_registry

    registry_path = Path(config["model_registry"])
    if not registry_path.exists():
        raise ConfigError(f"model_registry: file {str(registry_path)!r} does not exist")
    registry = load_model_registry(registry_path)
    for name in config["models"]:
        if name not in registry:
            raise ConfigError(
                f"models: unknown model {name!r}; the registry {str(registry_path)!r} defines "
                f"{', '.join(sorted(registry))}"
            )


def load_config(path: str | Path, *, check_models: bool = True) -> dict[str, Any]:
    """Read a YAML config file and validate it (see :func:`validate_config`)."""
    with open(path, encoding="utf-8") as fh:
        raw = yaml.safe_load(fh) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, got {type(raw).__name__}")
    return validate_config(raw, check_models=check_models)


def samples_for(config: Mapping[str, Any], task: str) -> int | None:
    """Number of samples to generate for ``task`` (``None``: all rows of the paper data)."""
    n = config["datasets"].get("n_samples")
    if isinstance(n, Mapping):
        return n.get(task)
    return n
