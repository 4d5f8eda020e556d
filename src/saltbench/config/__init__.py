"""The workflow configuration: one typed block per top-level key, validated before any job runs.

One module per block of a config file (``config/*.yaml``), as frozen dataclasses whose fields are the keys
(type, bounds, default, description): :mod:`~saltbench.config.datasets`, :mod:`~saltbench.config.inference`,
:mod:`~saltbench.config.scoring` (``scoring`` and ``metrics``), :mod:`~saltbench.config.training`,
:mod:`~saltbench.config.interventions`, :mod:`~saltbench.config.analysis`; the whole file is
:class:`~saltbench.config.workflow.WorkflowConfig`. :mod:`~saltbench.config.schema` holds the machinery
(fields, building, the JSON schema), :mod:`~saltbench.config.loading` the strict YAML reading and the
validation with readable errors, :mod:`~saltbench.config.checks` the checks against the outside world.
``python -m saltbench.config FILE...`` checks files (docs/configuration.md).

The blocks import only the standard library; the loading functions (YAML, jsonschema) are imported on first
access.
"""

from typing import TYPE_CHECKING

from saltbench.config.analysis import AnalysisConfig
from saltbench.config.datasets import DatasetsConfig
from saltbench.config.inference import DEFAULT_MAX_NEW_TOKENS, InferenceConfig
from saltbench.config.interventions import InterventionsConfig
from saltbench.config.schema import MAX_SAMPLES_PER_TASK, Block, ConfigError, build
from saltbench.config.scoring import MetricsConfig, ScoringConfig
from saltbench.config.training import (
    TrainingConfig,
    TrainingVariantConfig,
    TrainModelConfig,
    TrainOptimConfig,
    TrainTaskConfig,
)
from saltbench.config.workflow import BLOCKS, WorkflowConfig, json_schema
from saltbench.core.lazy import lazy_getattr

_LAZY = {
    "MAX_INFERENCE_JOBS": "checks",
    "DuplicateKeyError": "loading",
    "StrictYAMLLoader": "loading",
    "check_config_files": "loading",
    "load_config": "loading",
    "load_schema": "loading",
    "read_config_file": "loading",
    "render_registry_schema": "loading",
    "render_schema": "loading",
    "resolve_block": "loading",
    "resolve_config": "loading",
    "validate_config": "loading",
    "write_schema": "loading",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

if TYPE_CHECKING:
    from saltbench.config.checks import MAX_INFERENCE_JOBS
    from saltbench.config.loading import (
        DuplicateKeyError,
        StrictYAMLLoader,
        check_config_files,
        load_config,
        load_schema,
        read_config_file,
        render_registry_schema,
        render_schema,
        resolve_block,
        resolve_config,
        validate_config,
        write_schema,
    )

__all__ = [
    "BLOCKS",
    "DEFAULT_MAX_NEW_TOKENS",
    "MAX_INFERENCE_JOBS",
    "MAX_SAMPLES_PER_TASK",
    "AnalysisConfig",
    "Block",
    "ConfigError",
    "DatasetsConfig",
    "DuplicateKeyError",
    "InferenceConfig",
    "InterventionsConfig",
    "MetricsConfig",
    "ScoringConfig",
    "StrictYAMLLoader",
    "TrainModelConfig",
    "TrainOptimConfig",
    "TrainTaskConfig",
    "TrainingConfig",
    "TrainingVariantConfig",
    "WorkflowConfig",
    "build",
    "check_config_files",
    "json_schema",
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
