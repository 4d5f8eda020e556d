"""The study's outputs, listed once: every analysis table and every figure, with what each needs.

The Snakefile's default target, the figure rules (one per entry of :data:`FIGURE_OUTPUTS`), the table rules'
named outputs, the artifact contracts (:data:`saltbench.core.contracts.TABLES` has one artifact per table
here) and the plotting registry (:data:`saltbench.plotting.FIGURES` has one function per figure here) are all
built from or checked against these two tuples (docs/architecture.md §4). Standard library only: the
Snakefile reads them on every invocation.

>>> [t.name for t in TABLE_OUTPUTS if t.needs == "interventions"][:2]
['interventions', 'interventions_by_position']
>>> next(f.table for f in FIGURE_OUTPUTS if f.name == "granularity_auroc")
'granularity'
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

Needs = Literal["always", "interventions", "training", "simulation"]
"""When an output is part of a run: always, when interventions are enabled, when tiny models are trained,
when the run has simulated models."""

PUBLISHED = ("parquet", "csv", "tex")
"""Formats of a table of the paper (LaTeX for the manuscript)."""
DATA_ONLY = ("parquet", "csv")
"""Formats of a table behind a figure only (too long for LaTeX)."""


@dataclass(frozen=True)
class TableOutput:
    """``results/tables/{name}.{format}`` for each of ``formats``; its artifact is ``table.{name}``.

    ``target``: a file of the default target (``False`` for a side output its rule writes with another
    table, such as ``dominance_cells``).
    """

    name: str
    formats: tuple[str, ...] = PUBLISHED
    needs: Needs = "always"
    target: bool = True


@dataclass(frozen=True)
class FigureOutput:
    """``figures/{name}.pdf`` and ``.png``, drawn from the analysis table ``table`` (``None``: from the
    training logs), shown in the HTML report under ``category``."""

    name: str
    table: str | None
    category: str
    needs: Needs = "always"
    description: str = ""


TABLE_OUTPUTS: tuple[TableOutput, ...] = (
    TableOutput("generation_health"),
    TableOutput("leaderboard"),
    TableOutput("accuracy_by_task"),
    TableOutput("dominance"),
    TableOutput("dominance_cells", ("parquet",), target=False),
    TableOutput("granularity"),
    TableOutput("reasoning_tradeoff"),
    TableOutput("label_noise"),
    TableOutput("reliability", DATA_ONLY),
    TableOutput("rejection", DATA_ONLY),
    TableOutput("interventions", needs="interventions"),
    TableOutput("interventions_by_position", needs="interventions"),
    TableOutput("interventions_by_corruption", needs="interventions"),
    TableOutput("interventions_by_placement", needs="interventions"),
    TableOutput("recovery", DATA_ONLY, needs="simulation"),
)
"""Every analysis table, in the order of the paper's sections."""

FIGURE_OUTPUTS: tuple[FigureOutput, ...] = (
    FigureOutput(
        "generation_health",
        "generation_health",
        "Generation",
        description="Share of answered, truncated, unfenced and error responses per model and prompt style.",
    ),
    FigureOutput(
        "accuracy_by_task",
        "accuracy_by_task",
        "Accuracy",
        description="Precision per task at atom, line and generation level, per prompt style.",
    ),
    FigureOutput(
        "dominance",
        "dominance",
        "Uncertainty",
        description="Heatmap: share of cells each confidence function wins, per aspect and granularity.",
    ),
    FigureOutput(
        "granularity_auroc",
        "granularity",
        "Uncertainty",
        description="AUROC per task at atom, line and generation level (pooled and per response).",
    ),
    FigureOutput(
        "reliability_diagrams",
        "reliability",
        "Uncertainty",
        description="Reliability diagrams of the best-calibrated confidence functions.",
    ),
    FigureOutput(
        "rejection_curves",
        "rejection",
        "Uncertainty",
        description="Risk-coverage curves with oracle and random baselines, per granularity.",
    ),
    FigureOutput(
        "reasoning_tradeoff",
        "reasoning_tradeoff",
        "Reasoning",
        description="Delta precision vs relative delta AUROC of CoT and reasoning models vs their baselines.",
    ),
    FigureOutput(
        "label_noise_sensitivity",
        "label_noise",
        "Uncertainty",
        description="ECE, AUROC and PRR against the fraction of flipped correctness labels.",
    ),
    FigureOutput(
        "interventions_propagation",
        "interventions_by_corruption",
        "Interventions",
        "interventions",
        description="Next-atom accuracy vs corrupted fraction of the prefix, local vs distant vs random.",
    ),
    FigureOutput(
        "interventions_context_length",
        "interventions_by_position",
        "Interventions",
        "interventions",
        description="Clean-prefix next-atom accuracy vs position in the answer.",
    ),
    FigureOutput(
        "training_loss",
        None,
        "Training",
        "training",
        description="Training loss curves of the tiny model families trained by the workflow.",
    ),
)
"""Every figure, in the order of the paper's sections."""


def table_output(name: str) -> TableOutput:
    """The entry of table ``name``.

    Raises:
        KeyError: naming the known tables.
    """
    for table in TABLE_OUTPUTS:
        if table.name == name:
            return table
    raise KeyError(f"{name!r} is not a table of the study ({', '.join(t.name for t in TABLE_OUTPUTS)})")


def target_files(enabled: Collection[Needs]) -> list[str]:
    """The table and figure files of a run whose enabled parts are ``enabled`` (``always`` is implied)."""
    parts = {"always", *enabled}
    tables = [
        f"results/tables/{t.name}.{fmt}"
        for t in TABLE_OUTPUTS
        if t.target and t.needs in parts
        for fmt in t.formats
    ]
    figures = [
        f"figures/{f.name}.{ext}" for f in FIGURE_OUTPUTS if f.needs in parts for ext in ("pdf", "png")
    ]
    return tables + figures


__all__ = [
    "DATA_ONLY",
    "FIGURE_OUTPUTS",
    "PUBLISHED",
    "TABLE_OUTPUTS",
    "FigureOutput",
    "Needs",
    "TableOutput",
    "table_output",
    "target_files",
]
