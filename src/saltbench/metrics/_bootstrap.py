"""Response-level (cluster) bootstrap confidence intervals for any metric.

The resamples of this package's metrics are computed all at once as integer weights on the original
units (:mod:`._weighted`, docs/metrics.md §8.1); any other callable is called once per resample.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import _weighted
from ._aurc import aurc
from ._auroc import _grouped_auroc, auroc, auroc_per_response
from ._brier import brier
from ._ece import ece, mce
from ._prr import _grouped_prr, prr, prr_per_response
from .validation import ArrayLike, FloatArray, as_1d_float, as_groups, as_labels, check_same_length

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


def mean_score(scores: ArrayLike, correct: ArrayLike) -> float:
    """The mean of ``scores`` (``correct`` is ignored); NaN for no scores.

    With one score per response (``groups=None``), :func:`bootstrap_ci` of this is the interval of a
    mean of per-response values (the metrics stage's precision and recall); it has a batched path.

    Example:
        >>> mean_score([0.5, 1.0, 0.0], None), mean_score([], None)
        (0.5, nan)
    """
    values = np.asarray(scores, dtype=np.float64)
    return float(np.mean(values)) if values.size else float("nan")


@functools.cache
def _signature(fn: Callable[..., float]) -> inspect.Signature:
    return inspect.signature(fn)


BatchedMetric = Callable[[FloatArray], FloatArray]
"""All resample values of one metric from the ``(R, G)`` group multiplicities (:mod:`._weighted`)."""

_PER_RESPONSE: tuple[Callable[..., float], ...] = (auroc_per_response, prr_per_response)
_BATCHED: tuple[Callable[..., float], ...] = (auroc, prr, aurc, ece, mce, brier, mean_score, *_PER_RESPONSE)


def _per_response_values(
    fn: Callable[..., float], options: dict[str, Any], s: np.ndarray, y: np.ndarray, codes: np.ndarray, n: int
) -> tuple[FloatArray, FloatArray | None] | None:
    """Per-group values and weights behind a per-response mean, or ``None`` for no batched path."""
    if fn is auroc_per_response:
        return _grouped_auroc(as_1d_float(s, "scores"), as_labels(y), codes, n), None
    if fn is prr_per_response:
        scores, labels = as_1d_float(s, "scores"), as_labels(y)
        values = _grouped_prr(scores, labels, codes, n, options["ties"], float(options["atol"]))
        sizes = np.bincount(codes, minlength=n).astype(np.float64)
        return values, (sizes if options["group_weighting"] == "size" else None)
    return None


def _keyword_partial(metric_fn: Callable[..., float]) -> tuple[Callable[..., float], dict[str, Any]] | None:
    """``metric_fn`` as (function, keyword options): itself with none, or a ``functools.partial``'s function
    and keywords; ``None`` for a partial with positional arguments (no batched path takes those)."""
    if not isinstance(metric_fn, functools.partial):
        return metric_fn, {}
    if metric_fn.args:
        return None
    return metric_fn.func, dict(metric_fn.keywords)


def _batched(
    metric_fn: Callable[..., float], with_groups: bool, s: np.ndarray, y: np.ndarray, codes: np.ndarray
) -> BatchedMetric | None:
    """The weighted computation of every resample of ``metric_fn``, or ``None`` where there is none.

    Recognised: the metric functions of this package, bare or as a ``functools.partial`` with keyword
    arguments only, called the way ``with_groups`` calls them, and only with order-independent tie
    handling (``ties="paper"`` depends on the order of the resampled units). Anything else (another
    callable, a wrapper, positional partial arguments) resamples one by one.
    """
    unwrapped = _keyword_partial(metric_fn)
    if unwrapped is None:
        return None
    fn, options = unwrapped
    if not any(fn is known for known in _BATCHED) or any(fn is k for k in _PER_RESPONSE) != with_groups:
        return None
    args = (s, y, codes) if with_groups else (s, y)
    bound = _signature(fn).bind(*args, **options)  # the point call accepted these arguments
    bound.apply_defaults()
    opts = bound.arguments
    n = int(codes.max()) + 1
    if with_groups:
        found = _per_response_values(fn, opts, s, y, codes, n)
        if found is None:
            return None
        values, weights = found
        over_all = bool(opts.get("paper_micro", False))
        return lambda c: _weighted.weighted_group_mean(values, c, weights, over_all=over_all)
    if fn is mean_score:
        scores = np.asarray(s, dtype=np.float64)
        return lambda c: _weighted.weighted_mean(scores, codes, c)
    scores, labels = as_1d_float(s, "scores"), as_labels(y)
    if fn is auroc:
        return lambda c: _weighted.weighted_auroc(scores, labels, codes, c)
    if fn in (prr, aurc):
        if opts["ties"] != "average":
            return None
        if fn is aurc:
            return lambda c: _weighted.weighted_aurc(scores, labels, codes, c)
        atol = float(opts["atol"])
        return lambda c: _weighted.weighted_prr(scores, labels, codes, c, atol=atol)
    if fn is brier:
        return lambda c: _weighted.weighted_brier(scores, labels, codes, c)
    pick = 0 if fn is ece else 1
    n_bins, binning = int(opts["n_bins"]), str(opts["binning"])
    return lambda c: _weighted.weighted_calibration_errors(
        scores, labels, codes, c, n_bins=n_bins, binning=binning
    )[pick]


def _checked(
    scores: ArrayLike,
    correct: ArrayLike,
    groups: ArrayLike | None,
    n_resamples: int,
    alpha: float,
    min_defined: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The arguments of :func:`bootstrap_ci` checked: scores, labels, dense group codes and their count."""
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
    return s, y, codes, n_groups


def _interval(
    point: float, values: np.ndarray, n_resamples: int, alpha: float, min_defined: float
) -> ConfidenceInterval:
    """The percentile interval of the resample ``values`` (NaN bounds when too few are defined)."""
    defined = values[np.isfinite(values)]
    if defined.size == 0 or defined.size < min_defined * n_resamples:
        logger.warning(
            "bootstrap: only %d of %d resamples defined; bounds are NaN", defined.size, n_resamples
        )
        return ConfidenceInterval(point, float("nan"), float("nan"))
    low, high = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return ConfidenceInterval(point, float(low), float(high))


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

    For :func:`auroc`, :func:`prr` and :func:`aurc` (``ties="average"``), :func:`ece`, :func:`mce`,
    :func:`brier`, :func:`auroc_per_response` and :func:`prr_per_response` (bare, or a
    ``functools.partial`` with keyword arguments) the same resamples are evaluated all at once, each as
    integer weights (how often each response was drawn) on the original units sorted once
    (docs/metrics.md §8.1); the values equal the per-resample calls up to rounding (a few ulps).

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
    s, y, codes, n_groups = _checked(scores, correct, groups, n_resamples, alpha, min_defined)

    def call(idx: np.ndarray | None, new_codes: np.ndarray) -> float:
        ss, yy = (s, y) if idx is None else (s[idx], y[idx])
        return float(metric_fn(ss, yy, new_codes) if with_groups else metric_fn(ss, yy))

    point = call(None, codes)
    if not np.isfinite(point):  # undefined on the full data (e.g. one class): no interval to estimate
        logger.debug("bootstrap: metric undefined on the full data; bounds are NaN")
        return ConfidenceInterval(point, float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_groups, size=(int(n_resamples), n_groups))
    batched = _batched(metric_fn, with_groups, s, y, codes)
    if batched is not None:  # every resample at once, as weights on the original units
        values = batched(_weighted.group_counts(draws, n_groups))
    else:
        unit_order = np.argsort(codes, kind="stable")
        sizes = np.bincount(codes, minlength=n_groups)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        values = np.array([call(*_resample_indices(d, unit_order, starts, sizes)) for d in draws])
    return _interval(point, values, n_resamples, alpha, min_defined)


def _ranking_metric(metric_fn: MetricFn, s: np.ndarray, y: np.ndarray) -> _weighted.RankingMetric | None:
    """``metric_fn`` as a pooled ranking metric of :func:`~._weighted.weighted_ranking` (pooled AUROC, PRR
    and AURC with ``ties="average"``, bare or a keyword ``functools.partial``), or ``None``."""
    unwrapped = _keyword_partial(metric_fn)
    if unwrapped is None:
        return None
    fn, options = unwrapped
    if not any(fn is known for known in (auroc, prr, aurc)):
        return None
    bound = _signature(fn).bind(s, y, **options)
    bound.apply_defaults()
    if fn is auroc:
        return ("auroc", 0.0)
    if bound.arguments["ties"] != "average":
        return None
    return ("prr", float(bound.arguments["atol"])) if fn is prr else ("aurc", 0.0)


def bootstrap_cis(
    metric_fns: list[MetricFn],
    scores: ArrayLike,
    correct: ArrayLike,
    groups: ArrayLike | None = None,
    n_resamples: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    *,
    min_defined: float = 0.5,
) -> list[ConfidenceInterval]:
    """:func:`bootstrap_ci` of each of ``metric_fns`` (called as ``fn(scores, correct)``) on the same data.

    The same ``seed`` draws the same resamples for every metric, as separate calls would; pooled AUROC, PRR
    and AURC (``ties="average"``) among them share one sort into tie blocks and one product of the resample
    weights with the block tables (:func:`~._weighted.weighted_ranking`) when every score is finite and
    every label defined. The intervals equal those of separate :func:`bootstrap_ci` calls.

    Example:
        >>> from saltbench.metrics import auroc, aurc
        >>> s = [.9, .8, .3, .7, .2, .6, .65, .1]; y = [1, 1, 0, 1, 0, 1, 0, 0]; g = [0, 0, 0, 1, 1, 2, 2, 2]
        >>> both = bootstrap_cis([auroc, aurc], s, y, g, n_resamples=200, seed=1)
        >>> both[0] == bootstrap_ci(auroc, s, y, g, n_resamples=200, seed=1)
        True
    """
    s, y, codes, n_groups = _checked(scores, correct, groups, n_resamples, alpha, min_defined)
    finite = bool(np.all(np.isfinite(s.astype(np.float64)))) and not np.isnan(y.astype(np.float64)).any()
    kinds = {i: kind for i, fn in enumerate(metric_fns) if finite and (kind := _ranking_metric(fn, s, y))}
    points = {index: float(metric_fns[index](s, y)) for index in kinds}
    shared = {index: kinds[index] for index, point in points.items() if np.isfinite(point)}
    out: list[ConfidenceInterval | None] = [None] * len(metric_fns)
    if len(shared) > 1:
        draws = np.random.default_rng(seed).integers(0, n_groups, size=(int(n_resamples), n_groups))
        values = _weighted.weighted_ranking(
            as_1d_float(s, "scores"),
            as_labels(y),
            codes,
            _weighted.group_counts(draws, n_groups),
            list(shared.values()),
        )
        for column, index in enumerate(shared):
            out[index] = _interval(points[index], values[:, column], n_resamples, alpha, min_defined)
    return [
        interval
        if interval is not None
        else bootstrap_ci(fn, s, y, codes, n_resamples, alpha, seed, min_defined=min_defined)
        for fn, interval in zip(metric_fns, out)
    ]
