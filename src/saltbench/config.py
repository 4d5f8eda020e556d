"""Workflow configuration: JSON-schema validation with readable errors, and defaults.

The schema (``saltbench/schema/config.schema.json``) is the single source of truth: each field's
``description`` documents it and its ``default`` fills it in. :func:`validate_config` is called by the
Snakefile before any job runs; a wrong key or value raises :class:`ConfigError` whose message names
the offending key path (for example ``datasets.params.dna: unknown parameter 'max_codon'``).

"integer" in the schema means a real integer: ``2.0`` (a float in YAML) and ``true`` are rejected, unlike
plain Draft 2020-12, which accepts ``2.0`` as an integer. Config files are read by :func:`read_config_file`
with :class:`StrictYAMLLoader` (duplicate keys are errors; syntax errors name the file and line);
:func:`check_config_files` re-reads the files Snakemake loaded with its own, lenient YAML loader.
``python -m saltbench.config FILE...`` checks config files from the command line.
"""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_SAMPLES_PER_TASK = 1_000_000
"""Upper bound of ``datasets.n_samples`` (per task; also the schema's ``maximum``). The paper uses at most
400 samples per task; a count of 10**12 made building the DAG run out of memory (16 GB)."""

MAX_INFERENCE_JOBS = 100_000
"""Upper bound of the inference shard jobs of a run: ``ceil(samples / inference.shard_size)`` summed over
tasks, times models and prompt styles. Building the DAG takes about 20 kB per job (a dry run with 4,000
shard jobs used 80 MB more than one with 27 jobs), so this bound is a few GB; the paper-scale config
(``config/paper.yaml``) has about 2,100."""


class ConfigError(ValueError):
    """The workflow configuration is invalid; the message names the key."""


def load_schema() -> dict[str, Any]:
    """The workflow configuration JSON schema shipped with the package.

    Definitions kept with the code they describe are inserted here: the task slugs
    (:data:`saltbench.tasks.TASK_SLUGS`, ``$defs/task``) and the ``interventions`` block's schema
    (:data:`saltbench.interventions.CONFIG_SCHEMA`).
    """
    from saltbench.interventions import CONFIG_SCHEMA as INTERVENTIONS_SCHEMA
    from saltbench.tasks import TASK_SLUGS

    text = resources.files("saltbench").joinpath("schema/config.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    schema["$defs"]["task"]["enum"] = list(TASK_SLUGS)
    schema["$defs"]["interventions"] = INTERVENTIONS_SCHEMA
    return schema


def _is_strict_integer(checker: Any, instance: Any) -> bool:
    """JSON-schema type "integer": a Python ``int`` only, not a ``bool`` nor an integral float (``2.0``)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


StrictValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_strict_integer),
)
"""Draft 2020-12 validator whose "integer" rejects floats such as ``2.0`` (and bools); used for the config."""


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
    if error.validator in ("oneOf", "anyOf") and error.context:
        return _describe(jsonschema.exceptions.best_match(error.context))
    message = f"{_key_path(error)}: {error.message}"
    wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
    if error.validator == "type" and isinstance(error.instance, float) and "integer" in wanted:
        hint = f"write {int(error.instance)}" if error.instance.is_integer() else "a whole number is required"
        message += f" (a float; {hint})"
    if error.validator == "maximum" and _key_path(error).startswith("datasets.n_samples"):
        message += " samples per task (a sanity bound; the paper uses at most 400)"
    return message


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
    signature; the datasets (:func:`_check_datasets`: a sample count for every task, the paper data
    folder); the number of inference jobs (:func:`_check_job_count`); names that must be computed by an
    earlier stage (:func:`_check_analysis`); the training and interventions blocks; and
    (``check_models``) that every model in ``models`` exists in the model registry.

    Raises:
        ConfigError: the first problem found, naming its key path.
    """
    schema = load_schema()
    validator = StrictValidator(schema)
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError("invalid configuration: " + "; ".join(_describe(e) for e in errors[:5]))
    filled = copy.deepcopy(dict(config))
    _fill_defaults(schema, filled)
    _check_task_params(filled)
    _check_datasets(filled)
    _check_job_count(filled)
    _check_analysis(filled)
    _check_training(filled)
    _check_interventions(filled)
    if check_models and filled.get("models"):
        _check_models(filled)
    return filled


def _check_datasets(config: Mapping[str, Any]) -> None:
    """Checks the ``datasets`` block beyond the schema.

    ``source: generated``: ``n_samples`` gives a count for every task in ``tasks`` (a missing count
    otherwise fails when the DAG is built). ``source: paper``: ``paper_path`` is given, is an existing
    folder (a relative path is resolved against the current working directory, the workflow root under
    Snakemake) and holds the reproduction folder of every task in ``tasks``.
    """
    from saltbench.data import PAPER_FOLDERS

    ds = config["datasets"]
    tasks = list(config["tasks"])
    if ds["source"] == "generated":
        missing = [t for t in tasks if samples_for(config, t) is None]
        if missing:
            raise ConfigError(
                f"datasets.n_samples: a sample count is required for every task with datasets.source "
                f"'generated'; missing for {', '.join(missing)}"
            )
        return
    if not ds.get("paper_path"):
        raise ConfigError("datasets.paper_path: required when datasets.source is 'paper'")
    given = Path(ds["paper_path"])
    root = given if given.is_absolute() else Path.cwd() / given
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise ConfigError(
            f"datasets.paper_path: {str(given)!r} {what} (resolved to {str(root.resolve())!r}; relative "
            f"paths are resolved against the working directory)"
        )
    missing = [f"{PAPER_FOLDERS[t]} (task {t})" for t in tasks if not (root / PAPER_FOLDERS[t]).is_dir()]
    if missing:
        raise ConfigError(
            f"datasets.paper_path: {str(given)!r} lacks the reproduction folder(s) {', '.join(missing)}"
        )


def _check_job_count(config: Mapping[str, Any]) -> None:
    """Checks that the run has at most :data:`MAX_INFERENCE_JOBS` inference shard jobs.

    The count is ``ceil(samples / inference.shard_size)`` (at least 1) summed over ``tasks``, times the
    number of ``models`` and ``prompt_styles``; with ``datasets.source: paper`` the samples of a task are
    its reproduction rows, capped by ``n_samples``.
    """
    from saltbench.data import PAPER_ROWS

    shard_size = config["inference"]["shard_size"]
    shards = 0
    for task in config["tasks"]:
        n = samples_for(config, task)
        if config["datasets"]["source"] == "paper":
            n = PAPER_ROWS[task] if n is None else min(n, PAPER_ROWS[task])
        shards += max(1, math.ceil((n or 0) / shard_size))
    models, styles = len(config["models"]), len(config["prompt_styles"])
    jobs = shards * models * styles
    if jobs > MAX_INFERENCE_JOBS:
        raise ConfigError(
            f"datasets.n_samples / inference.shard_size: {jobs:,} inference jobs ({shards:,} shards over "
            f"{len(config['tasks'])} task(s) x {models} model(s) x {styles} prompt style(s)); at most "
            f"{MAX_INFERENCE_JOBS:,} (saltbench.config.MAX_INFERENCE_JOBS): raise inference.shard_size or "
            f"lower datasets.n_samples"
        )


def _check_analysis(config: Mapping[str, Any]) -> None:
    """Checks that the names the analysis uses are computed by the earlier stages.

    The schema restricts each name to its registry (confidence functions, calibration methods, flavours,
    granularities); here: ``analysis.ece_calibration`` is one of ``metrics.calibration_methods`` (or
    ``none``, added for probability-valued functions), ``analysis.flavour`` one of ``scoring.flavours``,
    and ``analysis.granularity`` / ``analysis.reliability_granularity`` are in ``scoring.granularities``.
    """
    analysis, metrics, scoring = config["analysis"], config["metrics"], config["scoring"]
    computed = [*metrics["calibration_methods"], "none"]
    if analysis["ece_calibration"] not in computed:
        raise ConfigError(
            f"analysis.ece_calibration: {analysis['ece_calibration']!r} is not computed by the metrics "
            f"stage; add it to metrics.calibration_methods (now "
            f"{', '.join(metrics['calibration_methods']) or 'empty'})"
        )
    if analysis["flavour"] not in scoring["flavours"]:
        raise ConfigError(
            f"analysis.flavour: {analysis['flavour']!r} is not scored; scoring.flavours is "
            f"{', '.join(scoring['flavours'])}"
        )
    for key in ("granularity", "reliability_granularity"):
        if analysis[key] not in scoring["granularities"]:
            raise ConfigError(
                f"analysis.{key}: {analysis[key]!r} is not scored; scoring.granularities is "
                f"{', '.join(scoring['granularities'])}"
            )


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


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A YAML mapping repeats a key (raised by :class:`StrictYAMLLoader`).

    Attributes:
        key_path: dotted path of the repeated key, e.g. ``datasets.n_samples``.
        line: 1-based line of the repeat; ``first_line``: of the first occurrence.
    """

    def __init__(self, key_path: str, first: yaml.Mark, repeat: yaml.Mark) -> None:
        """``first``/``repeat``: the marks of the key's first and repeated occurrence."""
        super().__init__("while constructing a mapping", first, f"found duplicate key {key_path!r}", repeat)
        self.key_path = key_path
        self.line = repeat.line + 1
        self.first_line = first.line + 1


class StrictYAMLLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that raises :class:`DuplicateKeyError` on a key repeated in one mapping.

    PyYAML (and Snakemake's config loader) silently keeps the last value of a repeated key. Keys are
    compared by resolved tag and text (``n: 1`` twice is a duplicate; ``"n"`` and ``n`` too). A key that
    overrides one brought in by a merge key (``<<: *defaults``) is not a duplicate.
    """

    def construct_document(self, node: Node) -> Any:
        """Reject duplicate keys anywhere in the document, then construct it as ``SafeLoader`` does."""
        _reject_duplicate_keys(node, (), set())
        return super().construct_document(node)


def _reject_duplicate_keys(node: Node, path: tuple[str, ...], seen: set[int]) -> None:
    """Walk the composed YAML ``node`` and raise :class:`DuplicateKeyError` at the first repeated key."""
    if id(node) in seen:  # an alias of a node already checked (also guards recursive anchors)
        return
    seen.add(id(node))
    if isinstance(node, MappingNode):
        first: dict[tuple[str, str], yaml.Mark] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                _reject_duplicate_keys(value_node, path, seen)
                continue
            label = str(key_node.value) if isinstance(key_node, ScalarNode) else f"<{key_node.id}>"
            if isinstance(key_node, ScalarNode):
                key = (key_node.tag, key_node.value)
                if key in first:
                    raise DuplicateKeyError(".".join((*path, label)), first[key], key_node.start_mark)
                first[key] = key_node.start_mark
            _reject_duplicate_keys(value_node, (*path, label), seen)
    elif isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            _reject_duplicate_keys(item, (*path, str(i)), seen)


def _yaml_error_message(path: str | PathLike[str], exc: yaml.YAMLError) -> str:
    """One-line message for a YAML error in file ``path``: the file, 1-based line and column, the problem."""
    if isinstance(exc, DuplicateKeyError):
        return (
            f"{path}, line {exc.line}: duplicate key {exc.key_path!r} (first defined on line "
            f"{exc.first_line}); YAML would silently keep only the last value"
        )
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        message = f"{path}, line {mark.line + 1}, column {mark.column + 1}: invalid YAML: {exc.problem}"
        if exc.context and exc.context_mark is not None:
            message += f" ({exc.context} at line {exc.context_mark.line + 1})"
        return message
    return f"{path}: invalid YAML: {exc}"


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
        raise ConfigError(_yaml_error_message(path, exc)) from exc
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


def samples_for(config: Mapping[str, Any], task: str) -> int | None:
    """Number of samples to generate for ``task`` (``None``: all rows of the paper data)."""
    n = config["datasets"].get("n_samples")
    if isinstance(n, Mapping):
        return n.get(task)
    return n


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m saltbench.config FILE...``: load and validate each config file, print what is wrong.

    Also checks the model names against the registry (run it from the workflow root, like Snakemake).
    Returns the exit status: 0 if every file is valid, 1 otherwise.
    """
    paths = list(sys.argv[1:] if argv is None else argv)
    if not paths:
        print("usage: python -m saltbench.config CONFIG.yaml [...]", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            load_config(path)
        except ConfigError as exc:
            print(f"{path}: {exc}" if not str(exc).startswith(str(path)) else str(exc), file=sys.stderr)
            status = 1
        else:
            print(f"{path}: valid")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
