"""The study's figures, declared once, and the options a rule reads from the configuration.

Each figure is one :class:`FigureOutput`: its name, the analysis table it is drawn from, its report category,
when a run makes it, the plotting function that draws it and the configuration keys that function's options
come from. The figure rules (one ``figure_{name}`` per entry, rules/figures.smk), the plotting registry
(:data:`saltbench.plotting.FIGURES`) and the default target are built from :data:`FIGURE_OUTPUTS`; the
analysis tables are declared the same way in :mod:`saltbench.workflow.tables` (docs/architecture.md §4,
docs/extending.md §6). Standard library only: the Snakefile reads it on every invocation.

An option is a configuration key, dotted (``analysis.flavour``; ``run.models`` names a fact of the run the
Snakefile computes, such as its models), or a :class:`Derived` value of several keys.

>>> next(f.table for f in FIGURE_OUTPUTS if f.name == "granularity_auroc")
'granularity'
>>> option_keys(Derived(("metrics.ci_level",), lambda level: 1 - level))
('metrics.ci_level',)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Needs = Literal["always", "interventions", "training", "simulation"]
"""When an output is part of a run: always, when interventions are enabled, when tiny models are trained,
when the run has simulated models."""


@dataclass(frozen=True)
class Derived:
    """An option computed from configuration keys: ``compute(*values of keys)``, e.g. a test level
    ``1 - metrics.ci_level``."""

    keys: tuple[str, ...]
    compute: Callable[..., Any]


Option = str | Derived
"""A configuration key (dotted) or a value :class:`Derived` from several."""


def option_keys(option: Option) -> tuple[str, ...]:
    """The configuration keys an option reads."""
    return (option,) if isinstance(option, str) else option.keys


def option_value(option: Option, lookup: Callable[[str], Any]) -> Any:
    """The value of ``option``, its keys read with ``lookup`` (dotted key -> value)."""
    if isinstance(option, str):
        return lookup(option)
    return option.compute(*(lookup(key) for key in option.keys))


@dataclass(frozen=True)
class FigureOutput:
    """``figures/{name}.pdf`` and ``.png``, drawn by ``draw`` (``module:function``, called with the table and
    the ``options``) from the analysis table ``table`` (``None``: from the training logs), shown in the HTML
    report under ``category`` with the caption ``report/figure_{name}.rst``. ``options``: keyword -> the
    configuration key (or :class:`Derived` value) it is read from."""

    name: str
    table: str | None
    category: str
    draw: str
    needs: Needs = "always"
    options: Mapping[str, Option] = field(default_factory=dict)
    description: str = ""
    eligible_only: bool = False
    """Drawn from the eligible models and cells only (docs/metrics.md §10): the rule reads the eligibility
    table too, and the figure names what was left out."""


_METRICS_FIGURES = "saltbench.plotting._metrics_figures"
_STUDY_FIGURES = "saltbench.plotting._study_figures"

FIGURE_OUTPUTS: tuple[FigureOutput, ...] = (
    FigureOutput(
        "generation_health",
        "generation_health",
        "Generation",
        "saltbench.plotting._health:plot_generation_health",
        options={"min_answered": "analysis.min_answered_share"},
        description="Share of answered, truncated, unfenced and error responses per model and prompt style.",
    ),
    FigureOutput(
        "accuracy_by_task",
        "accuracy_by_task",
        "Accuracy",
        f"{_METRICS_FIGURES}:plot_accuracy_by_task",
        description="Precision per task at atom, line and generation level, per prompt style.",
    ),
    FigureOutput(
        "dominance",
        "dominance",
        "Uncertainty",
        f"{_METRICS_FIGURES}:plot_dominance",
        options={"flavour": "analysis.flavour"},
        description="Heatmap: share of cells each confidence function wins, per aspect and granularity.",
        eligible_only=True,
    ),
    FigureOutput(
        "frontier",
        "frontier",
        "Uncertainty",
        "saltbench.plotting._frontier:plot_frontier",
        description="Cost/quality frontier: pooled AUROC and PRR of every estimator against its extra tokens "
        "per response, by family and granularity.",
        eligible_only=True,
    ),
    FigureOutput(
        "granularity_auroc",
        "granularity",
        "Uncertainty",
        f"{_METRICS_FIGURES}:plot_granularity_auroc",
        options={"min_units": "analysis.min_units"},
        description="AUROC per task at atom, line and generation level (pooled and per response).",
        eligible_only=True,
    ),
    FigureOutput(
        "reliability_diagrams",
        "reliability",
        "Uncertainty",
        f"{_STUDY_FIGURES}:plot_reliability_diagrams",
        options={"granularity": "analysis.reliability_granularity", "top": "analysis.reliability_top"},
        description="Reliability diagrams of the best-calibrated confidence functions.",
        eligible_only=True,
    ),
    FigureOutput(
        "rejection_curves",
        "rejection",
        "Uncertainty",
        f"{_STUDY_FIGURES}:plot_rejection_curves",
        options={"top": "analysis.rejection_top"},
        description="Risk-coverage curves with oracle and random baselines, per granularity.",
        eligible_only=True,
    ),
    FigureOutput(
        "reasoning_tradeoff",
        "reasoning_tradeoff",
        "Reasoning",
        f"{_METRICS_FIGURES}:plot_reasoning_tradeoff",
        description="Delta precision vs relative delta AUROC of CoT and reasoning models vs their baselines.",
        eligible_only=True,
    ),
    FigureOutput(
        "label_noise_sensitivity",
        "label_noise",
        "Uncertainty",
        f"{_METRICS_FIGURES}:plot_label_noise_sensitivity",
        description="ECE, AUROC and PRR against the fraction of flipped correctness labels.",
        eligible_only=True,
    ),
    FigureOutput(
        "interventions_propagation",
        "interventions_by_corruption",
        "Interventions",
        f"{_STUDY_FIGURES}:plot_interventions_propagation",
        "interventions",
        description="Next-atom accuracy vs corrupted fraction of the prefix, local vs distant vs random.",
    ),
    FigureOutput(
        "interventions_context_length",
        "interventions_by_position",
        "Interventions",
        f"{_STUDY_FIGURES}:plot_interventions_context_length",
        "interventions",
        description="Clean-prefix next-atom accuracy vs position in the answer.",
    ),
    FigureOutput(
        "training_loss",
        None,
        "Training",
        f"{_STUDY_FIGURES}:plot_training_loss",
        "training",
        # the checkpoint steps to mark; a run that trains no model has no training.checkpoints
        options={"checkpoints": Derived(("training",), lambda training: training.get("checkpoints", {}))},
        description="Training loss curves of the tiny model families trained by the workflow.",
    ),
)
"""Every figure, in the order of the paper's sections."""


def figure_files(enabled: Collection[str]) -> list[str]:
    """The figure files of a run whose enabled parts are ``enabled`` (``always`` included)."""
    return [f"figures/{f.name}.{ext}" for f in FIGURE_OUTPUTS if f.needs in enabled for ext in ("pdf", "png")]


__all__ = [
    "FIGURE_OUTPUTS",
    "Derived",
    "FigureOutput",
    "Needs",
    "Option",
    "figure_files",
    "option_keys",
    "option_value",
]
