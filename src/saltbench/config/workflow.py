"""A whole workflow config file: :class:`WorkflowConfig`, its top-level blocks (:data:`BLOCKS`) and its JSON
schema (:func:`json_schema`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from saltbench.config.analysis import AnalysisConfig
from saltbench.config.datasets import DatasetsConfig
from saltbench.config.inference import InferenceConfig
from saltbench.config.interventions import InterventionsConfig
from saltbench.config.schema import (
    SCHEMA_ID,
    Block,
    ConfigError,
    Count,
    ModelName,
    TaskSlug,
    field_types,
    is_block,
    object_schema,
    required,
    setting,
    strip_annotations,
)
from saltbench.config.scoring import MetricsConfig, ScoringConfig
from saltbench.config.training import TrainingConfig
from saltbench.core.paper import PAPER_ROWS
from saltbench.core.vocabulary import (
    PromptStyle,
)


@dataclass(frozen=True, kw_only=True)
class WorkflowConfig(Block):
    """A whole workflow config file (``config/*.yaml``)."""

    seed: Count = required("Master seed: datasets, splits, bootstrap and training seeds derive from it.")
    tasks: tuple[TaskSlug, ...] = required("Task slugs to run.", minItems=1, uniqueItems=True)
    prompt_styles: tuple[PromptStyle, ...] = setting(
        ("direct", "cot"),
        "direct = answer immediately inside the fences; cot = reason step by step, then the fenced answer.",
        minItems=1,
        uniqueItems=True,
    )
    datasets: DatasetsConfig = required("Where the evaluation samples come from and how many per task.")
    model_registry: str = setting(
        "config/models.yaml", "YAML file describing every model (source, dtype, chat template, resources)."
    )
    models: tuple[ModelName, ...] = setting(
        (), "Model names from the registry to evaluate.", uniqueItems=True
    )
    inference: InferenceConfig = setting(
        InferenceConfig, "Inference stage: shards, batches, budgets, engine."
    )
    scoring: ScoringConfig = setting(ScoringConfig, "Scoring stage: alignment, granularities, flavours.")
    metrics: MetricsConfig = setting(MetricsConfig, "Metrics stage: calibration, ECE bins, bootstrap.")
    training: TrainingConfig = setting(
        TrainingConfig,
        "Tiny model family trained by the workflow (rules/train.smk): enabled, name, and the keys of "
        "saltbench.training.TrainConfig (tasks, steps, checkpoints, model, optim, ...), whose defaults "
        "apply.",
    )
    interventions: InterventionsConfig = setting(
        InterventionsConfig,
        "Atom-level intervention experiments (data/interventions/{model}/{task}.parquet).",
    )
    analysis: AnalysisConfig = setting(
        AnalysisConfig, "Tables and figures options read by rules/analysis.smk and rules/figures.smk."
    )

    def dataset_rows(self, task: str) -> int | None:
        """Rows of ``task``'s dataset, known before it is built: ``datasets.n_samples`` for generated data;
        the reproduction rows (:data:`saltbench.core.paper.PAPER_ROWS`), capped by ``n_samples``, with
        ``datasets.source: paper``."""
        n = self.datasets.samples_for(task)
        if self.datasets.source != "paper":
            return n
        return PAPER_ROWS[task] if n is None else min(n, PAPER_ROWS[task])

    def check_interventions(self) -> None:
        """With interventions enabled, every task of ``interventions.tasks`` is one of ``tasks`` (a task
        outside them has no dataset: its interventions would be dropped in silence).

        ``interventions.models`` may name registry models that are not in ``models``: those run the
        interventions without the inference stage (docs/configuration.md §3).

        Raises:
            ConfigError: naming ``interventions.tasks`` and the tasks outside ``tasks``.
        """
        if not self.interventions.enabled:
            return
        outside = [t for t in self.interventions.tasks if t not in self.tasks]
        if outside:
            raise ConfigError(
                f"interventions.tasks: {', '.join(outside)} not in tasks ({', '.join(self.tasks)}); the "
                "interventions run on the datasets of the configured tasks"
            )

    def check_datasets(self) -> None:
        """With ``datasets.source: generated``, ``n_samples`` gives a count for every task in ``tasks`` (a
        missing count would otherwise fail when the DAG is built).

        Raises:
            ConfigError: naming ``datasets.n_samples`` and the tasks without a count.
        """
        if self.datasets.source != "generated":
            return
        missing = [t for t in self.tasks if self.datasets.samples_for(t) is None]
        if missing:
            raise ConfigError(
                f"datasets.n_samples: a sample count is required for every task with datasets.source "
                f"'generated'; missing for {', '.join(missing)}"
            )

    def check_analysis(self) -> None:
        """The names the analysis uses are computed by the earlier stages.

        ``analysis.ece_calibration`` is one of ``metrics.calibration_methods`` (or ``none``, added for
        probability-valued functions), ``analysis.flavour`` one of ``scoring.flavours``, and
        ``analysis.granularity`` / ``analysis.reliability_granularity`` are in ``scoring.granularities``.

        Raises:
            ConfigError: naming the analysis key and the key that lacks its value.
        """
        analysis, metrics, scoring = self.analysis, self.metrics, self.scoring
        if metrics.default_confidence not in scoring.confidence_functions:
            raise ConfigError(
                f"metrics.default_confidence: {metrics.default_confidence!r} is not scored; "
                f"scoring.confidence_functions is {', '.join(scoring.confidence_functions)}"
            )
        computed = [*metrics.calibration_methods, "none"]
        if analysis.ece_calibration not in computed:
            raise ConfigError(
                f"analysis.ece_calibration: {analysis.ece_calibration!r} is not computed by the metrics "
                f"stage; add it to metrics.calibration_methods (now "
                f"{', '.join(metrics.calibration_methods) or 'empty'})"
            )
        if analysis.flavour not in scoring.flavours:
            raise ConfigError(
                f"analysis.flavour: {analysis.flavour!r} is not scored; scoring.flavours is "
                f"{', '.join(scoring.flavours)}"
            )
        for key in ("granularity", "reliability_granularity"):
            value = getattr(analysis, key)
            if value not in scoring.granularities:
                raise ConfigError(
                    f"analysis.{key}: {value!r} is not scored; scoring.granularities is "
                    f"{', '.join(scoring.granularities)}"
                )


def registry_defs(*, broken: bool = False) -> dict[str, Any]:
    """The schema's ``$defs`` of names that come from registries: ``task`` (``saltbench.tasks.TASK_SLUGS``),
    ``confidence_function`` (``saltbench.confidence.TOKEN_FUNCTIONS``: the estimators the scoring stage
    computes from token distributions) and ``backend``
    (``saltbench.inference.backends.backend_names``), installed plugins included.

    Validation uses these, not the committed file's copy, so a plugin's task or function is a valid name
    wherever it is installed (imported here, not when this module is). With ``broken``, also the names of
    installed plugins that cannot be used (:func:`saltbench.core.plugins.broken_plugins`): validation lets
    them through so that :func:`saltbench.config.checks.check_broken_plugins` names why they cannot run."""
    from saltbench.confidence import TOKEN_FUNCTIONS
    from saltbench.core.plugins import CONFIDENCE_GROUP, TASK_GROUP, broken_plugins
    from saltbench.inference.backends import backend_names
    from saltbench.tasks import TASK_SLUGS

    def names(installed: Iterable[str], group: str) -> list[str]:
        extra = [name for name in broken_plugins(group) if broken and name not in installed]
        return [*installed, *extra]

    return {
        "task": {
            "enum": names(TASK_SLUGS, TASK_GROUP),
            "description": "A task slug (saltbench.tasks.TASK_SLUGS).",
        },
        "confidence_function": {
            "enum": names(TOKEN_FUNCTIONS, CONFIDENCE_GROUP),
            "description": "A confidence function computed from token distributions "
            "(saltbench.confidence.TOKEN_FUNCTIONS).",
        },
        "backend": {
            "enum": list(backend_names()),
            "description": "An inference backend (saltbench.inference.backends.backend_names).",
        },
    }


def json_schema() -> dict[str, Any]:
    """The JSON schema (Draft 2020-12) of a workflow config file, generated from :class:`WorkflowConfig`,
    with the registries' names in ``$defs`` (:func:`registry_defs`)."""
    return {
        "$schema": SCHEMA_ID,
        "title": "saltbench workflow configuration",
        "description": (
            "Generated from the saltbench.config blocks (python -m saltbench.config --write-schema); do not "
            "edit. "
            "'integer' means a real integer: 2.0 and true are rejected."
        ),
        **object_schema(WorkflowConfig),
        "$defs": registry_defs(),
    }


BLOCKS: Mapping[str, type[Block]] = MappingProxyType(
    {
        name: strip_annotations(tp)
        for name, tp in field_types(WorkflowConfig).items()
        if is_block(strip_annotations(tp))
    }
)
"""The block class of each top-level key that is a block (``datasets``, ``inference``, ..., ``analysis``)."""
