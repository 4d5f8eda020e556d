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
percentile band over replicates of the mean over cells.

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

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np
import polars as pl

from saltbench.calibration import zscore_sigmoid
from saltbench.confidence import CONFIDENCE_FUNCTIONS, ranking_scores
from saltbench.core.contracts import LABEL_NOISE_TABLE, confidence_column
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
    """The label-noise table (:data:`LABEL_NOISE_SCHEMA`; module docstring for the procedure).

    Args:
        units: units tables (one frame or one per file): model, style, task, sample_id, granularity,
            status, is_correct and the ``"{flavour}.{confidence}"`` column.
        confidence, flavour: the confidence function whose scores are judged.
        granularities, epsilons, modes: the grid; every ``epsilon`` must lie in [0, 0.5].
        n_replicates: bootstrap-and-noise replicates per cell (>= 1).
        n_bins, alpha, seed: ECE bins, band miscoverage, seed.
    """
    if confidence not in CONFIDENCE_FUNCTIONS:
        raise ValueError(f"confidence must be one of {tuple(CONFIDENCE_FUNCTIONS)}, got {confidence!r}")
    if any(not 0.0 <= e <= 0.5 for e in epsilons):
        raise ValueError(f"epsilons must lie in [0, 0.5], got {list(epsilons)}")
    if n_replicates < 1:
        raise ValueError(f"n_replicates must be >= 1, got {n_replicates!r}")
    bad = [m for m in modes if m not in NOISE_MODES]
    if bad:
        raise ValueError(f"modes must be drawn from {NOISE_MODES}, got {bad}")
    column = confidence_column(flavour, confidence)
    frames = [units] if isinstance(units, pl.DataFrame) else list(units)
    # values[(granularity, mode, epsilon)] -> list over cells of an array (n_replicates, n_metrics)
    values: dict[tuple[str, str, float], list[np.ndarray]] = {}
    n_units: dict[str, int] = {}
    cell = 0
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
            cell += 1
            raw = group[column].to_numpy().astype(np.float64)
            ranking = ranking_scores(confidence, raw)
            spec = CONFIDENCE_FUNCTIONS[confidence]
            probability = (
                zscore_sigmoid(ranking, ranking) if spec.needs_calibration else np.clip(raw, 0.0, 1.0)
            )
            correct = group["is_correct"].to_numpy().astype(bool)
            response = np.unique(group["sample_id"].to_numpy(), return_inverse=True)[1].reshape(-1)
            n_units[granularity] = n_units.get(granularity, 0) + group.height
            n_responses = int(response.max()) + 1
            resample = np.random.default_rng([seed, cell])
            draws = [resample.integers(0, n_responses, n_responses) for _ in range(n_replicates)]
            members = [np.flatnonzero(response == g) for g in range(n_responses)]
            replicates = []  # shared by every mode and noise level: rows, their responses, noise-free AUROC
            for draw in draws:
                rows = np.concatenate([members[g] for g in draw])
                regroup = np.repeat(np.arange(draw.size), [members[g].size for g in draw])
                clean = correct[rows]
                replicates.append((rows, regroup, auroc(ranking[rows], clean), float(clean.mean())))
            for mode in modes:
                rng = np.random.default_rng([seed, cell, 1 + NOISE_MODES.index(mode)])
                for epsilon in epsilons:
                    out = np.empty((n_replicates, _EXPECTED + 1))
                    for r, (rows, regroup, clean_auroc, share) in enumerate(replicates):
                        noisy = flip_labels(correct[rows], ranking[rows], epsilon, mode, rng)
                        out[r, :_EXPECTED] = _cell_metrics(
                            probability[rows], ranking[rows], noisy, regroup, n_bins
                        )
                        out[r, _EXPECTED] = expected_auroc(clean_auroc, share, epsilon)
                    values.setdefault((granularity, mode, epsilon), []).append(out)
    records = []
    for (granularity, mode_name, epsilon), cells in values.items():
        stack = np.stack(cells)  # (cells, replicates, metrics)
        for j, metric in enumerate(NOISE_METRICS):
            finite = _finite(_mean_over_cells(stack[:, :, j]))
            value = float(finite.mean()) if finite.size else NAN
            low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2]) if finite.size else (NAN, NAN)
            analytic = NAN
            if mode_name == "uniform" and metric in ("auroc_pooled", "prr"):
                e = _finite(_mean_over_cells(stack[:, :, _EXPECTED]))
                mean_e = float(e.mean()) if e.size else NAN
                analytic = mean_e if metric == "auroc_pooled" else 2 * mean_e - 1
            records.append(
                {
                    "granularity": granularity,
                    "mode": mode_name,
                    "epsilon": float(epsilon),
                    "metric": metric,
                    "value": value,
                    "ci_low": float(low),
                    "ci_high": float(high),
                    "expected": analytic,
                    "n_cells": len(cells),
                    "n_units": n_units[granularity],
                    "confidence": confidence,
                    "flavour": flavour,
                }
            )
    order = {g: i for i, g in enumerate(GRANULARITIES)}
    table = pl.DataFrame(records, schema=dict(LABEL_NOISE_SCHEMA))
    if table.is_empty():
        return table
    return table.sort(
        pl.col("granularity").replace_strict(order, default=len(order)), "mode", "metric", "epsilon"
    )
