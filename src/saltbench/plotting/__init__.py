"""Figures of the SALT study: each function takes a tidy table and returns a matplotlib Figure.

All figures share one style (:func:`style_context`: seaborn "ticks" + "paper" context, the colour-blind
palette, sizes for a 3.3 in column or a 7 in text block). They never raise on thin data: an empty table
gives a placeholder figure saying so, and missing values are marked (hatched cells, grey ``n/a``).

================================  =========================================  ==========================
figure (figures/)                 function                                   table (saltbench.analysis)
================================  =========================================  ==========================
``generation_health``             :func:`plot_generation_health`             ``generation_health``
``accuracy_by_task``              :func:`plot_accuracy_by_task`              ``accuracy_by_task``
``dominance``                     :func:`plot_dominance`                     ``dominance``
``frontier``                      :func:`plot_frontier`                      ``frontier``
``granularity_auroc``             :func:`plot_granularity_auroc`             ``granularity_table``
``reliability_diagrams``          :func:`plot_reliability_diagrams`          ``reliability_table``
``rejection_curves``              :func:`plot_rejection_curves`              ``rejection_table``
``interventions_propagation``     :func:`plot_interventions_propagation`     ``accuracy_by_corruption``
``interventions_context_length``  :func:`plot_interventions_context_length`  ``accuracy_by_position``
``reasoning_tradeoff``            :func:`plot_reasoning_tradeoff`            ``reasoning_tradeoff``
``training_loss``                 :func:`plot_training_loss`                 ``read_train_logs``
================================  =========================================  ==========================
"""

import os
from collections.abc import Callable, Mapping, Sequence

import polars as pl
from matplotlib.figure import Figure

from saltbench.core.lazy import load_reference
from saltbench.core.outputs import FIGURE_OUTPUTS

from ._frontier import plot_frontier
from ._health import plot_generation_health
from ._metrics_figures import (
    plot_accuracy_by_task,
    plot_dominance,
    plot_granularity_auroc,
    plot_label_noise_sensitivity,
    plot_reasoning_tradeoff,
)
from ._study_figures import (
    plot_interventions_context_length,
    plot_interventions_propagation,
    plot_rejection_curves,
    plot_reliability_diagrams,
    plot_training_loss,
)
from ._style import (
    COLUMN_WIDTH,
    PALETTE,
    PALETTE_NAME,
    TEXT_WIDTH,
    empty_figure,
    mark_missing,
    note_exclusions,
    save_figure,
    style_context,
)

FIGURES: Mapping[str, Callable[..., Figure]] = {f.name: load_reference(f.draw) for f in FIGURE_OUTPUTS}
"""Figure name (file stem under ``figures/``) → plotting function: the ``draw`` of each entry of
:data:`saltbench.core.outputs.FIGURE_OUTPUTS`, where every figure is declared (docs/extending.md §7)."""

FIGURE_TABLES: Mapping[str, str] = {f.name: f.table for f in FIGURE_OUTPUTS if f.table is not None}
"""Figure name → the analysis table it is drawn from (a key of :data:`saltbench.core.contracts.TABLES`); the
``training_loss`` figure is drawn from the training logs instead."""


def render(name: str, table: pl.DataFrame, **kwargs: object) -> Figure:
    """Draw figure ``name`` (a key of :data:`FIGURES`) from its table."""
    if name not in FIGURES:
        raise ValueError(f"name must be one of {tuple(FIGURES)}, got {name!r}")
    return FIGURES[name](table, **kwargs)


def read_figure_input(name: str, paths: Sequence[str | os.PathLike[str]]) -> pl.DataFrame:
    """The frame figure ``name`` is drawn from: the training logs for ``training_loss``, else its one analysis
    table (:data:`FIGURE_TABLES`), read and verified as that table's artifact by
    :func:`saltbench.io.read_table`: a file of another table raises
    :class:`~saltbench.io.CorruptFileError` naming the file, the table it holds and the one expected."""
    from saltbench.analysis import read_train_logs
    from saltbench.core.contracts import TABLES
    from saltbench.io import read_table

    if name == "training_loss":
        return read_train_logs(paths)
    if name not in FIGURE_TABLES:
        raise ValueError(f"name must be one of {tuple(FIGURES)}, got {name!r}")
    if len(paths) != 1:
        raise ValueError(f"figure {name!r} is drawn from one table, got {len(paths)} inputs")
    return read_table(paths[0], TABLES[FIGURE_TABLES[name]])


__all__ = [
    "COLUMN_WIDTH",
    "FIGURES",
    "FIGURE_TABLES",
    "note_exclusions",
    "read_figure_input",
    "PALETTE",
    "PALETTE_NAME",
    "TEXT_WIDTH",
    "empty_figure",
    "mark_missing",
    "plot_accuracy_by_task",
    "plot_dominance",
    "plot_frontier",
    "plot_generation_health",
    "plot_granularity_auroc",
    "plot_interventions_context_length",
    "plot_interventions_propagation",
    "plot_label_noise_sensitivity",
    "plot_reasoning_tradeoff",
    "plot_rejection_curves",
    "plot_reliability_diagrams",
    "plot_training_loss",
    "render",
    "save_figure",
    "style_context",
]
