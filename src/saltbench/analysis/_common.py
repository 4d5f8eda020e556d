"""Shared schemas, metric directions and aggregation helpers of the analysis stage.

Input tables (written upstream, see docs/architecture.md):

* metrics — ``results/metrics/{model}/{style}/{task}.parquet``, long format (:data:`METRICS_SCHEMA`);
* units — ``data/units/{model}/{style}/{task}.parquet``, one row per response unit per granularity with
  one raw score column per confidence function and flavour, named ``"{flavour}.{function}"``;
* interventions — ``data/interventions/{model}/{task}.parquet`` (:data:`INTERVENTIONS_SCHEMA`);
* training logs — ``data/models/{name}/train_log.parquet`` (:data:`TRAIN_LOG_SCHEMA`).

Undefined floats are NaN throughout (never null) so that CSV/LaTeX writers and plots treat them alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Literal, cast

import numpy as np
import polars as pl

from saltbench.core.contracts import INTERVENTION_COLUMNS, METRICS, TRAIN_LOG
from saltbench.core.metric_registry import ASPECT_METRICS as REGISTRY_ASPECT_METRICS
from saltbench.core.vocabulary import RESPONSE_STATUSES
from saltbench.io import read_table

Aspect = Literal["calibration", "ranking", "rejection"]
ASPECT_METRICS: Mapping[Aspect, str] = cast(Mapping[Aspect, str], REGISTRY_ASPECT_METRICS)
"""The metric that measures each uncertainty aspect in the dominance analysis: the registry's dominance
metrics (:data:`saltbench.core.metric_registry.ASPECT_METRICS`, docs/metrics.md §9).

Rejection is measured by AURC (area under the risk–coverage curve, lower is better), not by PRR: on pooled
binary units PRR = 2·AUROC − 1 exactly (:func:`saltbench.metrics.prr`), so a PRR-based rejection aspect
would repeat the ranking aspect. AURC averages the error rate of the *retained* units over all coverages,
which weights the most confident units most; it is not a function of AUROC (two rankings with the same
AUROC can have different AURC; tested)."""

METRICS_SCHEMA: Mapping[str, pl.DataType] = METRICS.columns
"""Columns of results/metrics/{model}/{style}/{task}.parquet: the metrics stage's rows behind their keys."""

INTERVENTIONS_SCHEMA: Mapping[str, pl.DataType] = {
    name: INTERVENTION_COLUMNS[name]
    for name in (
        "model",
        "task",
        "sample_id",
        "n_atoms",
        "position",
        "position_fraction",
        "n_corrupted",
        "corrupted_fraction",
        "placement",
        "next_correct",
        "next_m_accuracy",
        "next_confidence",
        "tf_logprob_correct",
    )
}
"""The columns of the interventions stage's table (:data:`saltbench.core.contracts.INTERVENTIONS`) that the
analysis reads."""

TRAIN_LOG_SCHEMA: Mapping[str, pl.DataType] = {
    "model": pl.String(),
    **{name: TRAIN_LOG.columns[name] for name in ("step", "loss", "lr", "tokens_per_s")},
}
"""The training-log columns the analysis reads, behind the model name."""

NAN = float("nan")


def empty_frame(schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """An empty frame with the given schema."""
    return pl.DataFrame(schema=dict(schema))


def require_columns(frame: pl.DataFrame, columns: Iterable[str], argument: str) -> None:
    """Raise ``ValueError`` naming ``argument`` and the missing columns if any is absent."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{argument} lacks columns {missing}; it has {frame.columns}")


def nan_for_null(frame: pl.DataFrame) -> pl.DataFrame:
    """Replace nulls in every float column by NaN (one missing-value convention for outputs)."""
    floats = [c for c, t in frame.schema.items() if t.is_float()]
    return frame.with_columns(pl.col(floats).fill_null(NAN)) if floats else frame


def read_tables(
    paths: Sequence[str | PathLike[str]], schema: Mapping[str, pl.DataType], artifact: str | None = None
) -> pl.DataFrame:
    """Concatenate Parquet tables (diagonally: extra columns are kept, absent ones become null).

    An empty ``paths`` gives an empty frame with ``schema``. Columns of ``schema`` absent from every file are
    added as nulls, and the columns of ``schema`` are cast to its types. ``artifact``: the kind every file
    must hold (:func:`saltbench.io.read_table`; ``None`` accepts any verified file).
    """
    frames = [read_table(p, artifact) for p in paths]
    frames = [f for f in frames if f.width]
    if not frames:
        return empty_frame(schema)
    out = pl.concat(frames, how="diagonal_relaxed")
    casts = [
        (pl.col(c).cast(t) if c in out.columns else pl.lit(None, dtype=t).alias(c)) for c, t in schema.items()
    ]
    return out.with_columns(casts)


def response_units(units: pl.DataFrame) -> pl.DataFrame:
    """Response units of a units table (status in :data:`RESPONSE_STATUSES`; all rows without a status)."""
    if "status" not in units.columns:
        return units
    return units.filter(pl.col("status").cast(pl.String).is_in(list(RESPONSE_STATUSES)))


def read_train_logs(paths: Sequence[str | PathLike[str]]) -> pl.DataFrame:
    """Concatenate training logs ``data/models/{name}/train_log.parquet``.

    A log without a ``model`` column gets the name of its parent folder (the model name) as ``model``.
    Returns at least the columns of :data:`TRAIN_LOG_SCHEMA` (absent ones as nulls).
    """
    frames = []
    for path in paths:
        frame = read_table(path, "train_log")
        if "model" not in frame.columns:
            frame = frame.with_columns(pl.lit(Path(path).parent.name).alias("model"))
        frames.append(frame)
    if not frames:
        return empty_frame(TRAIN_LOG_SCHEMA)
    out = pl.concat(frames, how="diagonal_relaxed")
    return out.with_columns(
        (pl.col(c).cast(t) if c in out.columns else pl.lit(None, dtype=t).alias(c))
        for c, t in TRAIN_LOG_SCHEMA.items()
    )


def combine_intervals(
    values: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    z: float = 1.959964,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> tuple[float, float, float, int]:
    r"""Mean of independent estimates with a normal-approximation interval built from their intervals.

    For the :math:`T` estimates with a finite value, :math:`\bar v = \frac1T \sum_t v_t`. Each finite
    interval gives a standard error :math:`s_t = (h_t - l_t)/(2z)`; the interval of the mean is
    :math:`\bar v \pm z \sqrt{\sum_t s_t^2}/T`, which assumes independent estimates (different tasks use
    different samples). If any defined estimate lacks a finite interval, the bounds are NaN. The interval
    is clipped to the metric's range ``bounds`` (e.g. ``(0, 1)`` for a precision or an AUROC).

    Returns:
        ``(mean, low, high, n_defined)``; all NaN and 0 when no value is finite.

    Example:
        >>> v, lo, hi = np.array([0.4, 0.6]), np.array([0.3, 0.5]), np.array([0.5, 0.7])
        >>> mean, low, high, n = combine_intervals(v, lo, hi)
        >>> mean, round(low, 6), round(high, 6), n
        (0.5, 0.429289, 0.570711, 2)
    """
    v = np.asarray(values, dtype=np.float64)
    lo = np.asarray(lows, dtype=np.float64)
    hi = np.asarray(highs, dtype=np.float64)
    keep = np.isfinite(v)
    n = int(keep.sum())
    if n == 0:
        return NAN, NAN, NAN, 0
    mean = float(v[keep].mean())
    lo, hi = lo[keep], hi[keep]
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return mean, NAN, NAN, n
    se = (hi - lo) / (2.0 * z)
    half = z * math.sqrt(float((se**2).sum())) / n
    low_bound, high_bound = bounds
    return mean, max(low_bound, mean - half), min(high_bound, mean + half), n


def wilson_interval(
    successes: np.ndarray, trials: np.ndarray, z: float = 1.959964
) -> tuple[np.ndarray, np.ndarray]:
    r"""Wilson score interval of binomial proportions, vectorised (NaN where ``trials == 0``).

    .. math::

        \frac{\hat p + \frac{z^2}{2n}
              \pm z\sqrt{\frac{\hat p(1-\hat p)}{n} + \frac{z^2}{4n^2}}}{1 + z^2/n}

    Example:
        >>> lo, hi = wilson_interval(np.array([5]), np.array([10]))
        >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
        (0.2366, 0.7634)
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1.0 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    low = np.where(n > 0, centre - half, np.nan)
    high = np.where(n > 0, centre + half, np.nan)
    return low, high
