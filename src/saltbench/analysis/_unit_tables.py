"""Unit-level summaries behind the reliability diagrams and the rejection (risk–coverage) curves.

Both work on the units tables (one row per response unit; raw scores in ``"{flavour}.{function}"``
columns, an estimator with a source of its own — draws, second pass, trace — in ``"{source}.{name}"``
whatever the flavour: :func:`saltbench.confidence.estimator_column`) and treat each (model, style, task,
granularity) as a *cell*: calibrators are fitted and rejection curves computed inside a cell, then the
results are pooled (reliability) or averaged (rejection) over cells, so that one curve summarises the
whole roster.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from saltbench.calibration import fit_calibrator, split_by_sample
from saltbench.confidence import (
    CONFIDENCE_FUNCTIONS,
    PAPER_CONFIDENCE_NAMES,
    ConfidenceSpec,
    estimator_column,
    ranking_scores,
)
from saltbench.core.contracts import REJECTION_TABLE, RELIABILITY_TABLE
from saltbench.core.vocabulary import CALIBRATION_METHODS, GRANULARITIES, CalibrationMethod
from saltbench.metrics import rejection_curve

from ._common import NAN, nan_for_null, require_columns, response_units

logger = logging.getLogger(__name__)

CELL: tuple[str, ...] = ("model", "style", "task", "granularity")

RELIABILITY_SCHEMA: Mapping[str, pl.DataType] = RELIABILITY_TABLE.columns
"""Columns of :func:`reliability_table` (the contract :data:`saltbench.core.contracts.RELIABILITY_TABLE`)."""

REJECTION_SCHEMA: Mapping[str, pl.DataType] = REJECTION_TABLE.columns
"""Columns of :func:`rejection_table` (the contract :data:`saltbench.core.contracts.REJECTION_TABLE`)."""

BASELINES: tuple[str, ...] = ("oracle", "random")
"""Pseudo confidence names of the rejection baselines."""


UnitsInput = pl.DataFrame | Iterable[pl.DataFrame]
"""A units table, or an iterable of units tables (e.g. one per file, read lazily to bound memory)."""


def _check_args(confidences: Sequence[str], granularities: Sequence[str]) -> None:
    bad = [c for c in confidences if c not in CONFIDENCE_FUNCTIONS]
    if bad:
        raise ValueError(f"confidences must be drawn from {tuple(CONFIDENCE_FUNCTIONS)}, got {bad}")
    bad = [g for g in granularities if g not in GRANULARITIES]
    if bad:
        raise ValueError(f"granularities must be drawn from {GRANULARITIES}, got {bad}")


def _cells(units: UnitsInput, granularities: Sequence[str], columns: Sequence[str]) -> Iterator[pl.DataFrame]:
    """Cells (model, style, task, granularity) of the response units, frame by frame."""
    frames = [units] if isinstance(units, pl.DataFrame) else units
    for frame in frames:
        require_columns(frame, [*CELL, "sample_id", "is_correct", *columns], "units")
        sub = response_units(frame).filter(
            pl.col("granularity").is_in(list(granularities)) & pl.col("is_correct").is_not_null()
        )
        sub = sub.select(
            *CELL, pl.col("sample_id").cast(pl.String), pl.col("is_correct").cast(pl.Float64), *columns
        )
        if sub.height:
            yield from sub.partition_by(list(CELL), maintain_order=True)


@dataclass
class _PooledBins:
    """Per-bin unit counts, confidence sums and correct sums of one function pooled over cells, with the
    number of cells and the (model, style, task) of each."""

    counts: np.ndarray
    confidence_sums: np.ndarray
    correct_sums: np.ndarray
    n_cells: int = 0
    cells: set[tuple[str, str, str]] = field(default_factory=set)

    def add(
        self, bin_index: np.ndarray, confidence: np.ndarray, correct: np.ndarray, cell: tuple[str, str, str]
    ) -> None:
        """Add one cell's evaluation units (their bin, calibrated confidence and correctness)."""
        n_bins = self.counts.size
        self.counts = self.counts + np.bincount(bin_index, minlength=n_bins)
        self.confidence_sums = self.confidence_sums + np.bincount(
            bin_index, weights=confidence, minlength=n_bins
        )
        self.correct_sums = self.correct_sums + np.bincount(bin_index, weights=correct, minlength=n_bins)
        self.n_cells += 1
        self.cells.add(cell)


def _calibrated_evaluation(
    spec: ConfidenceSpec,
    scores: np.ndarray,
    correct: np.ndarray,
    calibration: np.ndarray,
    method: CalibrationMethod,
    n_bins: int,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Calibrated confidence (clipped to [0, 1]) and correctness of the evaluation split's finite scores, the
    calibrator fitted on the ``calibration`` split's; None when either split has no finite score."""
    finite = np.isfinite(scores)
    train, test = calibration & finite, ~calibration & finite
    if not train.any() or not test.any():
        return None
    direction = spec.higher_is_confident
    calibrator = fit_calibrator(method, scores[train], correct[train], direction, n_bins=n_bins)
    return np.clip(calibrator.apply(scores[test]), 0.0, 1.0), correct[test]


def _bin_index(confidence: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin of each confidence among ``n_bins`` equal-width bins ``((j-1)/m, j/m]`` (0 goes to the first)."""
    return np.clip(np.ceil(confidence * n_bins).astype(np.int64), 1, n_bins) - 1


def _pool_cell(
    pooled: dict[tuple[str, str], _PooledBins],
    cell: pl.DataFrame,
    confidences: Sequence[str],
    columns: Sequence[str],
    method: CalibrationMethod,
    calibration_fraction: float,
    seed: int,
    n_bins: int,
) -> None:
    """Add one cell's calibrated evaluation units to each function's ``pooled`` bins (a cell with fewer than
    two samples adds nothing; ``method="none"`` skips functions that are not probabilities)."""
    granularity = cell["granularity"][0]
    origin = (str(cell["model"][0]), str(cell["style"][0]), str(cell["task"][0]))
    sample_ids = cell["sample_id"].to_numpy()
    if np.unique(sample_ids).size < 2:
        return
    calibration = split_by_sample(sample_ids, calibration_fraction, seed)
    correct = cell["is_correct"].to_numpy()
    for name, column in zip(confidences, columns):
        spec = CONFIDENCE_FUNCTIONS[name]
        if method == "none" and spec.needs_calibration:
            continue
        scores = cell[column].cast(pl.Float64).fill_null(NAN).to_numpy()
        evaluated = _calibrated_evaluation(spec, scores, correct, calibration, method, n_bins)
        if evaluated is None:
            continue
        confidence, outcome = evaluated
        empty = _PooledBins(np.zeros(n_bins), np.zeros(n_bins), np.zeros(n_bins))
        pooled.setdefault((granularity, name), empty).add(
            _bin_index(confidence, n_bins), confidence, outcome, origin
        )


def _pooled_origin(
    cells: set[tuple[str, str, str]], method: CalibrationMethod, flavour: str
) -> dict[str, str]:
    """What a function's bins pool: calibration method, flavour, and the cells' models, styles and tasks
    (comma-separated, sorted)."""
    models, styles, tasks = (",".join(sorted({cell[position] for cell in cells})) for position in range(3))
    return {"calibration": method, "flavour": flavour, "models": models, "styles": styles, "tasks": tasks}


def _reliability_rows(
    granularity: str, name: str, bins: _PooledBins, origin: Mapping[str, str]
) -> list[dict[str, Any]]:
    """One row per bin of a function's pooled bins: its bounds, count, mean confidence and accuracy (NaN when
    empty), with the function's ECE over the bins, units, cells and ``origin``."""
    n_bins = bins.counts.size
    total = int(bins.counts.sum())
    ece_value = float(np.abs(bins.confidence_sums - bins.correct_sums).sum() / total)
    rows: list[dict[str, Any]] = []
    for index in range(n_bins):
        count = int(bins.counts[index])
        rows.append(
            {
                "granularity": granularity,
                "confidence": name,
                "bin": index,
                "bin_low": index / n_bins,
                "bin_high": (index + 1) / n_bins,
                "n": count,
                "mean_confidence": bins.confidence_sums[index] / count if count else NAN,
                "accuracy": bins.correct_sums[index] / count if count else NAN,
                "ece": ece_value,
                "n_units": total,
                "n_cells": bins.n_cells,
                **origin,
            }
        )
    return rows


def reliability_table(
    units: UnitsInput,
    *,
    confidences: Sequence[str] = PAPER_CONFIDENCE_NAMES,
    flavour: str = "topk",
    granularities: Sequence[str] = ("atom",),
    method: CalibrationMethod = "zscore_sigmoid",
    calibration_fraction: float = 0.5,
    seed: int = 0,
    n_bins: int = 15,
) -> pl.DataFrame:
    r"""Reliability-diagram data: calibrated confidence vs accuracy, per confidence function and granularity.

    In every cell, the samples are split by :func:`saltbench.calibration.split_by_sample` (whole samples
    on one side, ``calibration_fraction`` of them for calibration); a calibrator
    (:func:`saltbench.calibration.fit_calibrator` with ``method``, using the function's direction) is
    fitted on the calibration split's finite scores and applied to the evaluation split. Evaluation units
    of all cells are pooled per function and binned into ``n_bins`` equal-width bins ``((j-1)/m, j/m]``
    (a confidence of exactly 0 goes to the first bin). Per bin: ``n``, ``mean_confidence``, ``accuracy``;
    per function: ``ece`` = :math:`\sum_j n_j |\bar c_j - \bar a_j| / N` over these bins (the metric of
    :func:`saltbench.metrics.ece` with ``binning="corrected"``), ``n_units``, ``n_cells``, and what the
    function's bins pool: ``calibration`` (method), ``flavour``, ``models``, ``styles``, ``tasks``
    (comma-separated, sorted). Cells with
    fewer than two samples, or without finite scores on either side, are skipped; ``method="none"`` skips
    functions that are not probabilities. Empty bins are listed with ``n = 0`` and NaN means.

    ``units`` may be an iterable of frames (one per file): only per-bin sums are kept, so memory does not
    grow with the number of units.
    """
    if method not in CALIBRATION_METHODS:
        raise ValueError(f"method must be one of {CALIBRATION_METHODS}, got {method!r}")
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins!r}")
    _check_args(confidences, granularities)
    columns = [estimator_column(name, flavour) for name in confidences]  # an estimator: its own source
    pooled: dict[tuple[str, str], _PooledBins] = {}  # (granularity, function) -> its bins over cells
    for cell in _cells(units, granularities, columns):
        _pool_cell(pooled, cell, confidences, columns, method, calibration_fraction, seed, n_bins)
    rows: list[dict[str, Any]] = []
    for (granularity, name), bins in pooled.items():
        source = estimator_column(name, flavour).split(".")[0]
        rows.extend(_reliability_rows(granularity, name, bins, _pooled_origin(bins.cells, method, source)))
    order = {name: index for index, name in enumerate(CONFIDENCE_FUNCTIONS)}
    rows.sort(key=lambda row: (GRANULARITIES.index(row["granularity"]), order[row["confidence"]], row["bin"]))
    return nan_for_null(pl.DataFrame(rows, schema=dict(RELIABILITY_SCHEMA)))


def _risk_on_grid(curve_coverage: np.ndarray, risk: np.ndarray, grid: np.ndarray) -> np.ndarray:
    keep = curve_coverage > 0
    c, r = curve_coverage[keep][::-1], risk[keep][::-1]  # ascending coverage
    return np.interp(grid, c, r)


def rejection_table(
    units: UnitsInput,
    *,
    confidences: Sequence[str] = PAPER_CONFIDENCE_NAMES,
    flavour: str = "topk",
    granularities: Sequence[str] = GRANULARITIES,
    n_points: int = 101,
) -> pl.DataFrame:
    """Risk–coverage curves per confidence function, with the oracle and random baselines.

    In every cell, units with a finite score are ranked by the function's ranking score (higher = more
    confident; :func:`saltbench.confidence.ranking_scores`) and rejected least confident first
    (:func:`saltbench.metrics.rejection_curve`, ties averaged); the selective risk (error rate among the
    kept units) is interpolated onto ``n_points`` coverages evenly spaced in [0.01, 1] and the curves are
    **averaged over cells** (each model × style × task counts equally). ``oracle`` rejects incorrect units
    first, ``random`` has constant risk (the cell's error rate); both are computed on all response units
    of the cell. ``aurc`` is the mean over cells of the cell's area under its risk–coverage curve (mean
    selective risk over the coverages ``k/n``); lower is better. ``units`` may be an iterable of frames.
    """
    if n_points < 2:
        raise ValueError(f"n_points must be >= 2, got {n_points!r}")
    _check_args(confidences, granularities)
    columns = [estimator_column(c, flavour) for c in confidences]
    grid = np.linspace(0.01, 1.0, n_points)
    # (granularity, name) -> [sum of risk curves, sum of AURC, cells]
    acc: dict[tuple[str, str], list[np.ndarray | float | int]] = {}

    def add(key: tuple[str, str], risk_grid: np.ndarray, area: float) -> None:
        entry = acc.setdefault(key, [np.zeros(n_points), 0.0, 0])
        entry[0] = np.asarray(entry[0]) + risk_grid
        entry[1] = float(entry[1]) + area
        entry[2] = int(entry[2]) + 1

    for cell in _cells(units, granularities, columns):
        gran = cell["granularity"][0]
        correct = cell["is_correct"].to_numpy()
        base = rejection_curve(np.zeros(correct.size), correct)
        for label, curve in (("oracle", base.oracle), ("random", base.random)):
            add(
                (gran, label),
                _risk_on_grid(curve.coverage, curve.selective_risk, grid),
                float(np.mean(curve.selective_risk[:-1])),
            )
        for name, col in zip(confidences, columns):
            scores = cell[col].cast(pl.Float64).fill_null(NAN).to_numpy()
            ok = np.isfinite(scores)
            if not ok.any():
                continue
            model = rejection_curve(ranking_scores(name, scores[ok]), correct[ok]).model
            add(
                (gran, name),
                _risk_on_grid(model.coverage, model.selective_risk, grid),
                float(np.mean(model.selective_risk[:-1])),
            )
    rows: list[dict[str, Any]] = []
    for (gran, name), (risk_sum, aurc_sum, n_cells) in acc.items():
        n = int(n_cells)
        mean_risk = np.asarray(risk_sum) / n
        rows.extend(
            {
                "granularity": gran,
                "confidence": name,
                "coverage": float(c),
                "selective_risk": float(r),
                "aurc": float(aurc_sum) / n,
                "n_cells": n,
            }
            for c, r in zip(grid, mean_risk)
        )
    return nan_for_null(pl.DataFrame(rows, schema=dict(REJECTION_SCHEMA)))
