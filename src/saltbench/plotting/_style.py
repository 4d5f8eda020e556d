"""One shared look for every figure: sizes for a paper column, colour-blind-safe colours, missing-data marks.

Figures are built on :class:`matplotlib.figure.Figure` objects directly (no pyplot state), inside
:func:`style_context`, so that calling a plotting function never changes global matplotlib settings.
"""

from __future__ import annotations

import functools
import io
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import matplotlib as mpl
import seaborn as sns
from cycler import cycler
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from saltbench.confidence import CONFIDENCE_FUNCTIONS
from saltbench.core.metric_registry import metric_labels
from saltbench.io import write_atomic
from saltbench.tasks import TASKS

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

COLUMN_WIDTH = 3.3
"""Width in inches of one column of a two-column paper."""
TEXT_WIDTH = 7.0
"""Width in inches of the full text block."""

PALETTE_NAME = "colorblind"
PALETTE: list[tuple[float, float, float]] = list(sns.color_palette(PALETTE_NAME))
"""Seaborn's colour-blind-safe qualitative palette (10 colours)."""

MISSING_COLOR = "0.55"
MISSING_HATCH = "////"

TASK_LABELS: Mapping[str, str] = {slug: cls.short_label() for slug, cls in TASKS.items()}
"""Short task names of the figures, from the task registry (plugins included)."""
CONFIDENCE_LABELS: Mapping[str, str] = {
    **{name: spec.short_label() for name, spec in CONFIDENCE_FUNCTIONS.items()},
    "oracle": "oracle",
    "random": "random",
}
"""Short names of the confidence functions (from the registry, plugins included) and the rejection
baselines."""
METRIC_LABELS: Mapping[str, str] = metric_labels()
"""Labels of the metrics (from the metric registry, plugins included)."""


def label(name: object, table: Mapping[str, str] | None = None) -> str:
    """A display label: from ``table`` (or all label tables), else the name with underscores as spaces."""
    text = str(name)
    for mapping in (table,) if table is not None else (TASK_LABELS, CONFIDENCE_LABELS, METRIC_LABELS):
        if mapping and text in mapping:
            return mapping[text]
    return text.replace("_", " ")


def _rc() -> dict[RcKeyType, Any]:
    rc: dict[RcKeyType, Any] = {}
    rc.update(sns.axes_style("ticks"))
    rc.update(sns.plotting_context("paper"))
    rc.update(
        {
            "font.size": 7.5,
            "axes.titlesize": 8,
            "axes.labelsize": 7.5,
            "xtick.labelsize": 7,
            "ytick.labelsize": 7,
            "legend.fontsize": 6.5,
            "legend.title_fontsize": 7,
            "legend.frameon": False,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.color": "0.88",
            "grid.linewidth": 0.5,
            "axes.linewidth": 0.6,
            "xtick.major.width": 0.6,
            "ytick.major.width": 0.6,
            "lines.linewidth": 1.2,
            "lines.markersize": 3.5,
            "hatch.linewidth": 0.5,
            "hatch.color": MISSING_COLOR,
            "axes.prop_cycle": cycler(color=PALETTE),
            "pdf.fonttype": 42,
            "ps.fonttype": 42,
            "svg.hashsalt": "saltbench",
            "figure.dpi": 150,
            "savefig.dpi": 300,
        }
    )
    return rc


@contextmanager
def style_context() -> Iterator[None]:
    """Temporarily apply the shared figure style (restored on exit)."""
    with mpl.rc_context(_rc()):
        yield


P = ParamSpec("P")
R = TypeVar("R")


def styled(func: Callable[P, R]) -> Callable[P, R]:
    """Decorator: run a plotting function inside :func:`style_context`."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with style_context():
            return func(*args, **kwargs)

    return wrapper


def new_figure(width: float = COLUMN_WIDTH, height: float = 2.4) -> Figure:
    """A figure of ``width`` × ``height`` inches with constrained layout (not registered with pyplot)."""
    return Figure(figsize=(width, height), layout="constrained")


def mark_missing(
    ax: Axes,
    x: float,
    y: float,
    text: str = "n/a",
    *,
    rotation: float = 0.0,
    size: float = 6,
    in_axes: bool = False,
) -> None:
    """Write a grey ``n/a`` at ``(x, y)``: a value that could not be computed.

    Coordinates are data coordinates, or axes fractions with ``in_axes=True``.
    """
    extra: dict[str, Any] = {"transform": ax.transAxes} if in_axes else {}
    ax.text(
        x,
        y,
        text,
        ha="center",
        va="center",
        color=MISSING_COLOR,
        fontsize=size,
        rotation=rotation,
        style="italic",
        **extra,
    )


def hatch_cell(ax: Axes, x0: float, y0: float, width: float = 1.0, height: float = 1.0) -> None:
    """A hatched rectangle (data coordinates) marking a missing cell of a heatmap or grid."""
    ax.add_patch(
        Rectangle(
            (x0, y0), width, height, fill=False, hatch=MISSING_HATCH, edgecolor=MISSING_COLOR, linewidth=0
        )
    )


def empty_figure(
    title: str, message: str = "no data", *, width: float = COLUMN_WIDTH, height: float = 2.0
) -> Figure:
    """A placeholder figure that states why nothing could be drawn (never an exception)."""
    with style_context():
        fig = new_figure(width, height)
        ax = fig.add_subplot()
        ax.set_axis_off()
        ax.set_title(title)
        hatch_cell(ax, 0.05, 0.1, 0.9, 0.8)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.text(
            0.5,
            0.5,
            message,
            ha="center",
            va="center",
            fontsize=8,
            color="0.3",
            bbox={"facecolor": "white", "edgecolor": "none"},
        )
    return fig


def note_exclusions(fig: Figure, lines: Sequence[str], *, shown: int = 6) -> None:
    """Name under ``fig`` what the eligibility rule kept out of it (docs/metrics.md §10): the first ``shown``
    of ``lines`` (:func:`saltbench.analysis.exclusion_lines`), then how many more; nothing when empty."""
    if not lines:
        return
    more = f"; and {len(lines) - shown} more (results/tables/eligibility.csv)" if len(lines) > shown else ""
    text = "Not drawn: " + "; ".join(lines[:shown]) + more + "."
    fig.text(0.01, 0.0, text, ha="left", va="top", fontsize=5.5, color="0.3", wrap=True)


def grid_shape(n_panels: int, max_cols: int) -> tuple[int, int]:
    """``(rows, cols)`` for ``n_panels`` panels with at most ``max_cols`` columns."""
    cols = max(1, min(max_cols, n_panels))
    return max(1, math.ceil(n_panels / cols)), cols


def color_map(keys: Sequence[object], palette: Sequence[Any] | None = None) -> dict[object, Any]:
    """Stable colours for category ``keys`` from the colour-blind palette (cycled beyond 10)."""
    colours = list(palette or PALETTE)
    return {k: colours[i % len(colours)] for i, k in enumerate(keys)}


def save_figure(fig: Figure, paths: Sequence[str | os.PathLike[str]], *, dpi: int = 300) -> None:
    """Save ``fig`` to every path (format from the suffix: ``.pdf``, ``.png``, ``.svg``).

    PDF metadata omit the creation date so that reruns give identical files. Each file is rendered in memory
    and written atomically (:func:`saltbench.io.write_atomic`: no half-written figure, a write error names
    the file).
    """
    with style_context():
        for path in paths:
            suffix = Path(path).suffix.lower()
            metadata: dict[str, Any] | None = {"CreationDate": None} if suffix == ".pdf" else None
            buffer = io.BytesIO()
            fig.savefig(
                buffer, format=suffix[1:], dpi=dpi, metadata=metadata, bbox_inches="tight", pad_inches=0.02
            )
            write_atomic(path, buffer.getvalue())
