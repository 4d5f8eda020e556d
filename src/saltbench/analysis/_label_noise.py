r"""Label-noise sensitivity: how unit-level metrics move when a fraction of the correctness labels is wrong.

The study's case for deterministic ground truth is that unit-level metrics are fragile to label noise (the
paper's appendix "Generalized Analysis of AUROC Sensitivity to Label Noise"); this measures it on the run's
own units. In each (model, style, task) cell, the correctness labels of the response units with a finite
score are corrupted and the metrics recomputed:

* ``uniform``: exactly ``round(ε·N)`` of the ``N`` labels, chosen uniformly at random, are flipped;
* ``confident``: the same number, chosen with probability proportional to the unit's confidence rank
  (``1..N``, most confident highest) — noise that hits the units a model is surest about, as when an
  automatic judge shares the model's mistakes.

Metrics: ECE (the function's own probability when it is one, else the z-score sigmoid of its score; 15
equal-width bins), pooled AUROC, AUROC per response, PRR. Each replicate resamples the cell's responses
with replacement and draws new noise; the table reports the mean over cells of the per-cell mean, and a
percentile band over replicates of the mean over cells. A cell's draws are seeded by the run's seed and the
cell's names, so the table is the same whether its cells are computed in one job or one job per model
(:func:`label_noise_cells`, then :func:`label_noise_summary`).

Analytic expectation under ``uniform`` noise (continuous scores, many units). Let :math:`\pi` be the share
of correct units and :math:`A` the noise-free AUROC. A unit labelled correct after noise is truly correct
with weight :math:`a_1 = \pi(1-\varepsilon)` and truly wrong with :math:`a_0 = (1-\pi)\varepsilon`; one
labelled wrong is truly correct with :math:`b_1 = \pi\varepsilon` and truly wrong with
:math:`b_0 = (1-\pi)(1-\varepsilon)`. Comparing a labelled-correct with a labelled-wrong unit,

.. math::

    A_\varepsilon = \frac{a_1 b_0 A + a_0 b_1 (1 - A) + \tfrac12 (a_1 b_1 + a_0 b_0)}{(a_1 + a_0)(b_1 + b_0)},

which shrinks toward 1/2 as :math:`\varepsilon \to 1/2` (:func:`expected_auroc`). Pooled PRR on binary
units is :math:`2A - 1` (:func:`saltbench.metrics.prr`), so it shrinks toward 0 twice as fast in AUROC
points. Both are tested against simulation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Literal, NamedTuple, cast

import numpy as np
import polars as pl

from saltbench.calibration import zscore_sigmoid
from saltbench.confidence import CONFIDENCE_FUNCTIONS, estimator_column, ranking_scores
from saltbench.core.contracts import LABEL_NOISE_CELLS, LABEL_NOISE_TABLE
from saltbench.core.vocabulary import GRANULARITIES, RESPONSE_STATUSES
from saltbench.metrics import auroc, auroc_per_response, ece, prr

from ._common import NAN

NoiseMode = Literal["uniform", "confident"]
NOISE_MODES: tuple[NoiseMode, ...] = ("uniform", "confident")
NOISE_METRICS: tuple[str, ...] = ("ece", "auroc_pooled", "auroc_per_response", "prr")

LABEL_NOISE_SCHEMA: Mapping[str, pl.DataType] = LABEL_NOISE_TABLE.columns
"""Columns of the label-noise table (the contract :data:`saltbench.core.contracts.LABEL_NOISE_TABLE`).
``expected``: the analytic value under uniform noise (AUROC and PRR; else NaN), computed in every
replicate from its noise-free AUROC and share of correct units and averaged exactly like ``value`` — so
at ε = 0 it equals ``value``."""

LABEL_NOISE_CELLS_SCHEMA: Mapping[str, pl.DataType] = LABEL_NOISE_CELLS.columns
"""Columns of the per-model part of the label-noise table
(:data:`saltbench.core.contracts.LABEL_NOISE_CELLS`): one row per (model, style, task, granularity) cell,
mode, epsilon and replicate, with the cell's units, each :data:`NOISE_METRICS` value and the analytic AUROC
``expected``."""


def expected_auroc(auroc_clean: float, share_correct: float, epsilon: float) -> float:
    """AUROC expected after flipping a fraction ``epsilon`` of the labels uniformly (module docstring).

    Example:
        >>> round(expected_auroc(0.8, 0.5, 0.1), 6), expected_auroc(0.8, 0.3, 0.5)
        (0.74, 0.5)
    """
    pi, e = share_correct, epsilon
    a1, a0, b1, b0 = pi * (1 - e), (1 - pi) * e, pi * e, (1 - pi) * (1 - e)
    denominator = (a1 + a0) * (b1 + b0)
    if denominator <= 0:
        return NAN
    return (a1 * b0 * auroc_clean + a0 * b1 * (1 - auroc_clean) + 0.5 * (a1 * b1 + a0 * b0)) / denominator


def flip_labels(
    correct: np.ndarray, scores: np.ndarray, epsilon: float, mode: NoiseMode, rng: np.random.Generator
) -> np.ndarray:
    """``correct`` with ``round(epsilon * N)`` of its labels flipped (mode: see the module docstring).

    ``scores`` are ranking scores (higher = more confident); only their order matters.
    """
    n = correct.size
    k = int(round(epsilon * n))
    if k == 0:
        return correct.copy()
    if mode == "uniform":
        chosen = rng.choice(n, size=k, replace=False)
    elif mode == "confident":
        ranks = np.argsort(np.argsort(scores, kind="stable"), kind="stable") + 1.0
        chosen = rng.choice(n, size=k, replace=False, p=ranks / ranks.sum())
    else:
        raise ValueError(f"mode must be one of {NOISE_MODES}, got {mode!r}")
    out = correct.copy()
    out[chosen] = ~out[chosen]
    return out


_EXPECTED = len(NOISE_METRICS)
"""Index of the per-replicate analytic AUROC in each cell's array (after the metrics)."""


def _mean_over_cells(per_cell: np.ndarray) -> np.ndarray:
    """Mean over cells (axis 0) of the finite values, per replicate; NaN where no cell has one."""
    defined = np.isfinite(per_cell)
    counts = defined.sum(axis=0)
    sums = np.where(defined, per_cell, 0.0).sum(axis=0)
    return np.divide(sums, counts, out=np.full(counts.shape, NAN), where=counts > 0)


def _finite(values: np.ndarray) -> np.ndarray:
    return values[np.isfinite(values)]


def _cell_metrics(
    probability: np.ndarray, ranking: np.ndarray, correct: np.ndarray, response: np.ndarray, n_bins: int
) -> list[float]:
    return [
        ece(probability, correct, n_bins=n_bins, binning="corrected"),
        auroc(ranking, correct),
        auroc_per_response(ranking, correct, response),
        prr(ranking, correct),
    ]


class _CellUnits(NamedTuple):
    """One cell's units: probability (for ECE), ranking score, correctness and response index of each."""

    probability: np.ndarray
    ranking: np.ndarray
    correct: np.ndarray
    response: np.ndarray


class _Replicate(NamedTuple):
    """One resample of a cell's responses: its rows, their response index, noise-free AUROC, share correct."""

    rows: np.ndarray
    responses: np.ndarray
    clean_auroc: float
    share_correct: float


def _check_noise_arguments(
    confidence: str, epsilons: Sequence[float], modes: Sequence[NoiseMode], n_replicates: int
) -> None:
    """Raise ``ValueError`` on an unknown confidence function or mode, an epsilon outside [0, 0.5], or no
    replicates."""
    if confidence not in CONFIDENCE_FUNCTIONS:
        raise ValueError(f"confidence must be one of {tuple(CONFIDENCE_FUNCTIONS)}, got {confidence!r}")
    if any(not 0.0 <= epsilon <= 0.5 for epsilon in epsilons):
        raise ValueError(f"epsilons must lie in [0, 0.5], got {list(epsilons)}")
    if n_replicates < 1:
        raise ValueError(f"n_replicates must be >= 1, got {n_replicates!r}")
    unknown_modes = [mode for mode in modes if mode not in NOISE_MODES]
    if unknown_modes:
        raise ValueError(f"modes must be drawn from {NOISE_MODES}, got {unknown_modes}")


def _scored_cells(
    frames: Sequence[pl.DataFrame], column: str, granularities: Sequence[str]
) -> Iterator[tuple[str, pl.DataFrame]]:
    """Granularity and response units with a finite ``column`` score of each (model, style, task, granularity)
    cell of the frames, in order; cells of other granularities or with fewer than two units are skipped."""
    for frame in frames:
        if column not in frame.columns or frame.is_empty():
            continue
        data = frame.filter(
            pl.col("status").cast(pl.String).is_in(list(RESPONSE_STATUSES)) & pl.col(column).is_finite()
        )
        for key, group in data.group_by(["model", "style", "task", "granularity"], maintain_order=True):
            granularity = str(key[3])
            if granularity not in granularities or group.height < 2:
                continue
            yield granularity, group


def _cell_units(group: pl.DataFrame, column: str, confidence: str) -> _CellUnits:
    """The probability, ranking score, correctness and response index of each unit of a cell; the probability
    is the function's own when it is one, else the z-score sigmoid of its ranking score."""
    raw = group[column].to_numpy().astype(np.float64)
    ranking = ranking_scores(confidence, raw)
    spec = CONFIDENCE_FUNCTIONS[confidence]
    probability = zscore_sigmoid(ranking, ranking) if spec.needs_calibration else np.clip(raw, 0.0, 1.0)
    correct = group["is_correct"].to_numpy().astype(bool)
    response = np.unique(group["sample_id"].to_numpy(), return_inverse=True)[1].reshape(-1)
    return _CellUnits(probability, ranking, correct, response)


def _resample_responses(
    cell_units: _CellUnits, n_replicates: int, resample: np.random.Generator
) -> list[_Replicate]:
    """``n_replicates`` resamples of the cell's responses with replacement, shared by every mode and noise
    level."""
    n_responses = int(cell_units.response.max()) + 1
    draws = [resample.integers(0, n_responses, n_responses) for _ in range(n_replicates)]
    members = [np.flatnonzero(cell_units.response == index) for index in range(n_responses)]
    replicates = []
    for draw in draws:
        rows = np.concatenate([members[index] for index in draw])
        responses = np.repeat(np.arange(draw.size), [members[index].size for index in draw])
        clean = cell_units.correct[rows]
        replicates.append(
            _Replicate(rows, responses, auroc(cell_units.ranking[rows], clean), float(clean.mean()))
        )
    return replicates


def _noisy_metrics(
    cell_units: _CellUnits,
    replicates: Sequence[_Replicate],
    epsilon: float,
    mode: NoiseMode,
    n_bins: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Per replicate (row): the :data:`NOISE_METRICS` on labels with noise ``epsilon`` of ``mode``, then the
    analytic AUROC (column :data:`_EXPECTED`)."""
    out = np.empty((len(replicates), _EXPECTED + 1))
    for replicate_index, replicate in enumerate(replicates):
        rows = replicate.rows
        noisy = flip_labels(cell_units.correct[rows], cell_units.ranking[rows], epsilon, mode, rng)
        out[replicate_index, :_EXPECTED] = _cell_metrics(
            cell_units.probability[rows], cell_units.ranking[rows], noisy, replicate.responses, n_bins
        )
        out[replicate_index, _EXPECTED] = expected_auroc(
            replicate.clean_auroc, replicate.share_correct, epsilon
        )
    return out


def _mean_and_band(per_cell: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """Mean over replicates of the mean over cells and its percentile band (NaN when no replicate has one)."""
    finite = _finite(_mean_over_cells(per_cell))
    value = float(finite.mean()) if finite.size else NAN
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2]) if finite.size else (NAN, NAN)
    return value, float(low), float(high)


def _analytic_value(stack: np.ndarray, mode: str, metric: str) -> float:
    """The analytic expectation of ``metric`` under uniform noise, averaged like the values (pooled AUROC and
    PRR = 2 AUROC - 1 under ``uniform``; else NaN)."""
    if mode != "uniform" or metric not in ("auroc_pooled", "prr"):
        return NAN
    expected = _finite(_mean_over_cells(stack[:, :, _EXPECTED]))
    mean_expected = float(expected.mean()) if expected.size else NAN
    return mean_expected if metric == "auroc_pooled" else 2 * mean_expected - 1


def _summary_records(
    values: Mapping[tuple[str, str, float], list[np.ndarray]],
    n_units: Mapping[str, int],
    alpha: float,
    confidence: str,
    flavour: str,
) -> list[dict[str, object]]:
    """One record per granularity, mode, epsilon and metric: the value over cells, its band and the analytic
    expectation."""
    records: list[dict[str, object]] = []
    for (granularity, mode, epsilon), cells in values.items():
        stack = np.stack(cells)  # (cells, replicates, metrics)
        for metric_index, metric in enumerate(NOISE_METRICS):
            value, low, high = _mean_and_band(stack[:, :, metric_index], alpha)
            records.append(
                {
                    "granularity": granularity,
                    "mode": mode,
                    "epsilon": float(epsilon),
                    "metric": metric,
                    "value": value,
                    "ci_low": low,
                    "ci_high": high,
                    "expected": _analytic_value(stack, mode, metric),
                    "n_cells": len(cells),
                    "n_units": n_units[granularity],
                    "confidence": confidence,
                    "flavour": flavour,
                }
            )
    return records


def _sorted_table(records: list[dict[str, object]]) -> pl.DataFrame:
    """The records as a label-noise table, by granularity (in :data:`GRANULARITIES` order), mode, metric and
    epsilon."""
    order = {granularity: index for index, granularity in enumerate(GRANULARITIES)}
    table = pl.DataFrame(records, schema=dict(LABEL_NOISE_SCHEMA))
    if table.is_empty():
        return table
    return table.sort(
        pl.col("granularity").replace_strict(order, default=len(order)), "mode", "metric", "epsilon"
    )


def _cell_seed(seed: int, key: Sequence[object]) -> list[int]:
    """The seed of one (model, style, task, granularity) cell: ``seed`` and a hash of the cell's names, so a
    cell draws the same resamples and noise whichever other cells (models) the table is computed with."""
    digest = hashlib.sha256("\x00".join(map(str, key)).encode("utf-8")).digest()
    return [seed, int.from_bytes(digest[:8], "little")]


def label_noise_cells(
    units: pl.DataFrame | Iterable[pl.DataFrame],
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
    granularities: Sequence[str] = GRANULARITIES,
    epsilons: Sequence[float] = (0.0, 0.05, 0.1, 0.2, 0.3),
    modes: Sequence[NoiseMode] = NOISE_MODES,
    n_replicates: int = 20,
    n_bins: int = 15,
    seed: int = 0,
) -> pl.DataFrame:
    """Every replicate of every cell (:data:`LABEL_NOISE_CELLS_SCHEMA`): the per-model half of
    :func:`label_noise_sensitivity` (same arguments; its module docstring for the procedure), which
    :func:`label_noise_summary` turns into the table. A cell's draws follow from ``seed`` and its names only
    (:func:`_cell_seed`), so the cells of one model are the same computed alone or with every other model."""
    _check_noise_arguments(confidence, epsilons, modes, n_replicates)
    column = estimator_column(confidence, flavour)  # draws, second pass, trace: their own source
    frames = [units] if isinstance(units, pl.DataFrame) else list(units)
    keys: list[tuple[object, ...]] = []
    blocks: list[np.ndarray] = []
    for granularity, group in _scored_cells(frames, column, granularities):
        names = group.select("model", "style", "task").row(0)
        cell_seed = _cell_seed(seed, (*names, granularity))
        cell_units = _cell_units(group, column, confidence)
        replicates = _resample_responses(cell_units, n_replicates, np.random.default_rng(cell_seed))
        for mode in modes:
            noise_rng = np.random.default_rng([*cell_seed, 1 + NOISE_MODES.index(mode)])
            for epsilon in epsilons:
                keys.append((*map(str, names), granularity, mode, float(epsilon), group.height))
                blocks.append(_noisy_metrics(cell_units, replicates, epsilon, mode, n_bins, noise_rng))
    return _cells_frame(keys, blocks, n_replicates)


def _cells_frame(keys: list[tuple[object, ...]], blocks: list[np.ndarray], n_replicates: int) -> pl.DataFrame:
    """The rows of :data:`LABEL_NOISE_CELLS_SCHEMA`: each key repeated over its block's replicates."""
    if not blocks:
        return pl.DataFrame(schema=dict(LABEL_NOISE_CELLS_SCHEMA))
    names = ("model", "style", "task", "granularity", "mode", "epsilon", "n_units")
    values = np.concatenate(blocks)
    frame = pl.DataFrame(
        {
            **{name: np.repeat([key[i] for key in keys], n_replicates) for i, name in enumerate(names)},
            "replicate": np.tile(np.arange(n_replicates), len(keys)),
            **{name: values[:, i] for i, name in enumerate((*NOISE_METRICS, "expected"))},
        }
    )
    return frame.select(pl.col(c).cast(t) for c, t in LABEL_NOISE_CELLS_SCHEMA.items())


def label_noise_summary(
    cells: pl.DataFrame | Iterable[pl.DataFrame],
    *,
    alpha: float = 0.05,
    confidence: str = "mean_probability",
    flavour: str = "topk",
) -> pl.DataFrame:
    """The label-noise table (:data:`LABEL_NOISE_SCHEMA`) of the cells of :func:`label_noise_cells` (one
    frame, or one per model in any order): per granularity, mode and epsilon, the mean over cells of each
    replicate's metric, its mean over replicates and percentile band (``alpha``), the analytic expectation;
    the cells are taken in the order of their names, so the table does not depend on how they were split."""
    frames = [cells] if isinstance(cells, pl.DataFrame) else list(cells)
    frame = pl.concat([f.select(list(LABEL_NOISE_CELLS_SCHEMA)) for f in frames]) if frames else None
    if frame is None or frame.is_empty():
        return _sorted_table([])
    cell = ["model", "style", "task", "granularity"]
    frame = frame.sort([*cell, "mode", "epsilon", "replicate"])
    sizes = frame.unique(cell).group_by("granularity").agg(pl.col("n_units").sum())
    n_units = {str(g): int(n) for g, n in sizes.iter_rows()}
    n_replicates = frame["replicate"].n_unique()
    values: dict[tuple[str, str, float], list[np.ndarray]] = {}
    for (granularity, mode, epsilon), group in frame.group_by(
        ["granularity", "mode", "epsilon"], maintain_order=True
    ):
        stack = group.select(*NOISE_METRICS, "expected").to_numpy().reshape(-1, n_replicates, _EXPECTED + 1)
        values[(str(granularity), str(mode), cast(float, epsilon))] = list(stack)
    return _sorted_table(_summary_records(values, n_units, alpha, confidence, flavour))


def label_noise_sensitivity(
    units: pl.DataFrame | Iterable[pl.DataFrame],
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
    granularities: Sequence[str] = GRANULARITIES,
    epsilons: Sequence[float] = (0.0, 0.05, 0.1, 0.2, 0.3),
    modes: Sequence[NoiseMode] = NOISE_MODES,
    n_replicates: int = 20,
    n_bins: int = 15,
    alpha: float = 0.05,
    seed: int = 0,
) -> pl.DataFrame:
    """The label-noise table (:data:`LABEL_NOISE_SCHEMA`; module docstring for the procedure): the summary
    (:func:`label_noise_summary`) of every cell's replicates (:func:`label_noise_cells`), which the workflow
    computes one model per job (docs/architecture.md §4).

    Args:
        units: units tables (one frame or one per file): model, style, task, sample_id, granularity,
            status, is_correct and the ``"{flavour}.{confidence}"`` column.
        confidence, flavour: the confidence function whose scores are judged.
        granularities, epsilons, modes: the grid; every ``epsilon`` must lie in [0, 0.5].
        n_replicates: bootstrap-and-noise replicates per cell (>= 1).
        n_bins, alpha, seed: ECE bins, band miscoverage, seed (each cell's draws: :func:`_cell_seed`).
    """
    cells = label_noise_cells(
        units,
        confidence=confidence,
        flavour=flavour,
        granularities=granularities,
        epsilons=epsilons,
        modes=modes,
        n_replicates=n_replicates,
        n_bins=n_bins,
        seed=seed,
    )
    return label_noise_summary(cells, alpha=alpha, confidence=confidence, flavour=flavour)
