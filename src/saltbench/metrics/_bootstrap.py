"""Response-level (cluster) bootstrap confidence intervals for any metric."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ._validation import ArrayLike, as_groups, check_same_length

logger = logging.getLogger(__name__)

MetricFn = Callable[..., float]


class ConfidenceInterval(NamedTuple):
    """A point estimate with a percentile bootstrap interval; unpacks as ``(point, low, high)``."""

    point: float
    low: float
    high: float


def _resample_indices(
    draws: np.ndarray, unit_order: np.ndarray, starts: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Unit indices and new group codes for one resample of group codes ``draws``."""
    sz = sizes[draws]
    total = int(sz.sum())
    offsets = np.cumsum(sz) - sz
    idx = np.repeat(starts[draws] - offsets, sz) + np.arange(total)
    return unit_order[idx], np.repeat(np.arange(draws.size), sz)


def bootstrap_ci(
    metric_fn: MetricFn,
    scores: ArrayLike,
    correct: ArrayLike,
    groups: ArrayLike | None = None,
    n_resamples: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    *,
    with_groups: bool = False,
    min_defined: float = 0.5,
) -> ConfidenceInterval:
    """Percentile bootstrap interval of ``metric_fn`` resampling whole responses with replacement.

    Each resample draws ``G`` responses (groups) uniformly with replacement from the ``G`` responses
    and keeps all units of each drawn response, so correlation between units of one response is
    respected. A response drawn twice appears as two distinct responses. ``groups=None`` treats each
    unit as its own response (ordinary bootstrap).

    The metric is called as ``metric_fn(scores, correct)``, or ``metric_fn(scores, correct, groups)``
    when ``with_groups=True`` (groups are then dense codes ``0..G-1`` of the resampled responses).
    Resample values that are NaN/inf are ignored; if fewer than ``min_defined * n_resamples`` are
    defined, the bounds are NaN (logged as a warning); if the metric is undefined on the full data
    (NaN point, e.g. a single class), the bounds are NaN without resampling. Bounds are the
    ``alpha/2`` and ``1 - alpha/2`` quantiles (linear interpolation) of the defined values. The same
    ``seed`` gives identical results.

    Args:
        metric_fn: a metric such as :func:`auroc`, :func:`prr` or a ``functools.partial`` of one.
        scores, correct: shape ``(n,)``, passed through (as numpy arrays) to ``metric_fn``.
        groups: shape ``(n,)`` response ids, or ``None``.
        n_resamples: number of bootstrap resamples (>= 1).
        alpha: miscoverage, in (0, 1); 0.05 gives a 95% interval.
        seed: seed of ``numpy.random.default_rng``.
        with_groups: pass resampled group codes as the third argument.
        min_defined: minimum fraction of defined resamples, in [0, 1].

    Returns:
        ``ConfidenceInterval(point, low, high)``; ``point`` is the metric on the original data.

    Example:
        >>> from saltbench.metrics import auroc
        >>> s = [.9, .8, .3, .7, .2, .6, .65, .1]; y = [1, 1, 0, 1, 0, 1, 0, 0]; g = [0, 0, 0, 1, 1, 2, 2, 2]
        >>> ci = bootstrap_ci(auroc, s, y, g, n_resamples=200, seed=1)
        >>> round(ci.point, 4), ci.low <= ci.point <= ci.high
        (0.9375, True)
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not 0.0 <= min_defined <= 1.0:
        raise ValueError(f"min_defined must lie in [0, 1], got {min_defined!r}")
    s = np.asarray(scores)
    y = np.asarray(correct)
    g = np.arange(len(s)) if groups is None else np.asarray(groups)
    n = check_same_length(scores=s, correct=y, groups=g)
    if n == 0:
        raise ValueError("scores must not be empty")
    codes, n_groups = as_groups(g)

    def call(idx: np.ndarray | None, new_codes: np.ndarray) -> float:
        ss, yy = (s, y) if idx is None else (s[idx], y[idx])
        return float(metric_fn(ss, yy, new_codes) if with_groups else metric_fn(ss, yy))

    point = call(None, codes)
    if not np.isfinite(point):  # undefined on the full data (e.g. one class): no interval to estimate
        logger.debug("bootstrap: metric undefined on the full data; bounds are NaN")
        return ConfidenceInterval(point, float("nan"), float("nan"))
    unit_order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_groups, size=(int(n_resamples), n_groups))
    values = np.array([call(*_resample_indices(d, unit_order, starts, sizes)) for d in draws])
    defined = values[np.isfinite(values)]
    if defined.size == 0 or defined.size < min_defined * n_resamples:
        logger.warning(
            "bootstrap: only %d of %d resamples defined; bounds are NaN", defined.size, n_resamples
        )
        return ConfidenceInterval(point, float("nan"), float("nan"))
    low, high = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return ConfidenceInterval(point, float(low), float(high))
