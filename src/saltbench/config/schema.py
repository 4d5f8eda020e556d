"""The workflow configuration's annotated field types and its error (:class:`ConfigError`); the machinery
(``setting`` / ``required`` / ``optional`` fields, the :class:`Block` base class, :func:`build`,
:func:`object_schema`) is :mod:`saltbench.core.blocks`, shared with the model registry, and re-exported here.

Each block of a config file (``config/*.yaml``) is a frozen dataclass in its own module of this package
(``datasets``, ``inference``, ``scoring`` with ``metrics``, ``training``, ``interventions``, ``analysis``);
:class:`saltbench.config.workflow.WorkflowConfig` is the whole file. A field's default is the key's only
default, and its ``setting`` / ``required`` / ``optional`` call carries the description and the JSON-schema
bounds. The closed vocabularies of the values are :mod:`saltbench.core.vocabulary`'s ``Literal`` types. Why
dataclasses and not pydantic: :mod:`saltbench.core.blocks` and docs/architecture.md §5.
"""

from __future__ import annotations

from typing import Annotated

from saltbench.core.blocks import (
    SCHEMA_ID,
    Block,
    Count,
    Fraction,
    Keywords,
    ModelName,
    OpenUnit,
    PositiveInt,
    Ref,
    build,
    field_types,
    is_block,
    object_schema,
    optional,
    plain,
    required,
    setting,
    strip_annotations,
)
from saltbench.core.vocabulary import FAMILY_NAME_REGEX

MAX_SAMPLES_PER_TASK = 1_000_000
"""Upper bound of ``datasets.n_samples`` (per task; also the schema's ``maximum``). The paper uses at most
400 samples per task; a count of 10**12 made building the DAG run out of memory (16 GB)."""


class ConfigError(ValueError):
    """The workflow configuration is invalid; the message names the key."""


# -- JSON-schema annotations of types ------------------------------------------------------------------


TaskSlug = Annotated[str, Ref("task")]
"""A task slug: the schema's ``$defs/task``, whose names are ``saltbench.tasks.TASK_SLUGS``."""
ConfidenceFunctionName = Annotated[str, Ref("confidence_function")]
"""A confidence function: the schema's ``$defs/confidence_function``, the names of
``saltbench.confidence.TOKEN_FUNCTIONS`` (computed from token distributions)."""
FamilyName = Annotated[str, Keywords(pattern=f"^{FAMILY_NAME_REGEX}$")]
"""A trained family's name (:data:`saltbench.core.vocabulary.FAMILY_NAME_REGEX`)."""
SampleCount = Annotated[int, Keywords(minimum=1, maximum=MAX_SAMPLES_PER_TASK)]
CheckpointName = Annotated[str, Keywords(pattern=r"^[^/.][^/]*$")]
"""A plain directory name (no ``/``, not starting with ``.``)."""


__all__ = [
    "MAX_SAMPLES_PER_TASK",
    "SCHEMA_ID",
    "Block",
    "CheckpointName",
    "ConfidenceFunctionName",
    "ConfigError",
    "Count",
    "FamilyName",
    "Fraction",
    "Keywords",
    "ModelName",
    "OpenUnit",
    "PositiveInt",
    "Ref",
    "SampleCount",
    "TaskSlug",
    "build",
    "field_types",
    "is_block",
    "object_schema",
    "optional",
    "plain",
    "required",
    "setting",
    "strip_annotations",
]
