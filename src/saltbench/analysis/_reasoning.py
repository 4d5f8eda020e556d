"""The reasoning trade-off: does reasoning (CoT prompting or a reasoning model) buy accuracy at the cost of
uncertainty quality?

For each paired comparison (:class:`~saltbench.analysis.Comparison`, a = baseline, b = reasoning):

* ``delta_precision`` = mean precision(b) − mean precision(a) (absolute, in precision points);
* ``rel_delta_auroc`` = (AUROC(b) − AUROC(a)) / AUROC(a) (relative change of the pooled AUROC of the
  default confidence function);

with paired bootstrap intervals (the same resampled pair units for a and b) and a paired test.

Two levels of pairing:

* :func:`reasoning_tradeoff` (``level="task"``) works on the metrics tables: pair units are tasks; means
  run over the tasks where both conditions are defined; the test is a Wilcoxon signed-rank test on the
  per-task differences. With the six SALT tasks the smallest attainable two-sided p-value is 1/32.
* :func:`reasoning_tradeoff_units` (``level="sample"``) works on the units tables: pair units are the
  dataset samples answered under both conditions; the bootstrap resamples samples within each task
  (stratified) and recomputes precision and pooled AUROC per task, then averages over tasks; the
  precision test is a Wilcoxon signed-rank test on per-sample precision differences and the AUROC p-value
  the two-sided bootstrap p-value ``2 min(P*(δ ≤ 0), P*(δ ≥ 0))``.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from itertools import product
from typing import Literal

import numpy as np
import polars as pl

from saltbench.confidence import CONFIDENCE_FUNCTIONS, ranking_scores
from saltbench.core.contracts import REASONING_TRADEOFF_TABLE
from saltbench.core.seeds import derive_seed
from saltbench.core.vocabulary import RESPONSE_STATUSES
from saltbench.metrics import ConfidenceInterval, auroc

from ._common import METRICS_SCHEMA, NAN, nan_for_null, require_columns
from ._leaderboard import select_metric
from ._pairs import Comparison

logger = logging.getLogger(__name__)

PairedTest = Literal["wilcoxon", "permutation"]

TRADEOFF_SCHEMA: Mapping[str, pl.DataType] = REASONING_TRADEOFF_TABLE.columns
"""Columns of the trade-off table (the contract :data:`saltbench.core.contracts.REASONING_TRADEOFF_TABLE`)."""

MIN_PAIRS: Mapping[str, int] = {"task": 6, "sample": 10}
"""Fewest pairs a comparison is reported for, per level. Tasks: a two-sided Wilcoxon signed-rank test on
``n`` pairs has smallest p-value ``2 / 2**n``, which is below 0.05 only from ``n = 6`` (the six SALT tasks);
samples: as the intervention fits (:data:`saltbench.analysis.MIN_SAMPLES`), a paired bootstrap over fewer
than 10 samples has too few distinct resamples for an interval."""

TRADEOFF_STATUSES: Mapping[str, str] = {
    "ok": "estimated",
    "too_few_pairs": "fewer pairs than MIN_PAIRS for the level",
    "no_variation": "every paired difference is zero: no test and no interval",
    "undefined": "the metric is undefined in a condition (e.g. AUROC with only correct or only wrong units)",
}
"""Values of ``status_precision`` / ``status_auroc``; a comparison's delta, interval and p-value are reported
only where the status is ``ok``."""

_QUANTITIES = {"precision": "delta_precision", "auroc": "rel_delta_auroc"}


def comparison_seed(seed: int, comparison: Comparison) -> int:
    """The bootstrap seed of ``comparison`` in a trade-off table seeded ``seed``: derived from the seed and
    the compared pair alone (:func:`saltbench.core.seeds.derive_seed`), so that its interval is the same
    whichever other comparisons the table holds (a model left out by the eligibility rule changes no other
    interval, docs/metrics.md §10) and whether the comparisons are estimated in one call or one call each
    (the workflow's sample level).

    >>> a = Comparison("style", "m", "direct", "m", "cot", "m")
    >>> comparison_seed(7, a) == comparison_seed(7, a) != comparison_seed(8, a)
    True
    """
    return derive_seed(
        "reasoning_tradeoff",
        seed,
        comparison.model_a,
        comparison.style_a,
        comparison.model_b,
        comparison.style_b,
    )


def empty_tradeoff() -> pl.DataFrame:
    """The trade-off table of no comparison: no rows, every column of :data:`TRADEOFF_SCHEMA`."""
    return with_statuses(nan_for_null(pl.DataFrame(schema=dict(TRADEOFF_SCHEMA))))


def with_statuses(table: pl.DataFrame) -> pl.DataFrame:
    """The trade-off ``table`` with ``status_precision`` / ``status_auroc`` (:data:`TRADEOFF_STATUSES`) set,
    and delta, interval and p-value NaN wherever the status is not ``ok`` (the per-condition means stay)."""
    min_pairs = pl.col("level").replace_strict(dict(MIN_PAIRS), default=0, return_dtype=pl.Int64)
    out = table
    for name, key in _QUANTITIES.items():
        status = (
            pl.when(~pl.col(f"{name}_a").is_finite() | ~pl.col(f"{name}_b").is_finite())
            .then(pl.lit("undefined"))
            .when(
                pl.col("n_pairs_auroc" if name == "auroc" else "n_pairs").fill_null(pl.col("n_pairs"))
                < min_pairs
            )
            .then(pl.lit("too_few_pairs"))
            .when(pl.col(f"p_{name}").is_nan() & (pl.col(key) == 0))
            .then(pl.lit("no_variation"))
            .otherwise(pl.lit("ok"))
        )
        out = out.with_columns(status.alias(f"status_{name}"))
        hidden = [key, f"{key}_ci_low", f"{key}_ci_high", f"p_{name}"]
        out = out.with_columns(
            pl.when(pl.col(f"status_{name}") == "ok").then(pl.col(c)).otherwise(float("nan")).alias(c)
            for c in hidden
        )
    return out


def _resample_matrix(
    n: int, strata: np.ndarray | None, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """``(n_resamples, n)`` indices drawn with replacement, within each stratum when ``strata`` is given."""
    if strata is None:
        return rng.integers(0, n, size=(n_resamples, n))
    out = np.empty((n_resamples, n), dtype=np.int64)
    col = 0
    for s in np.unique(strata):
        members = np.flatnonzero(strata == s)
        draws = rng.integers(0, members.size, size=(n_resamples, members.size))
        out[:, col : col + members.size] = members[draws]
        col += members.size
    return out


def _percentile_ci(point: float, values: np.ndarray, alpha: float, min_defined: float) -> ConfidenceInterval:
    """Percentile interval of the finite ``values``; NaN bounds if under ``min_defined`` are finite."""
    defined = values[np.isfinite(values)]
    if defined.size == 0 or defined.size < min_defined * values.size:
        return ConfidenceInterval(point, NAN, NAN)
    low, high = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return ConfidenceInterval(point, float(low), float(high))


def paired_bootstrap(
    statistic: Callable[[np.ndarray], float],
    n_pairs: int,
    *,
    strata: Sequence[object] | np.ndarray | None = None,
    n_resamples: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
    min_defined: float = 0.5,
) -> ConfidenceInterval:
    """Percentile bootstrap interval of a statistic of paired observations.

    The ``n_pairs`` pair units (tasks, samples) are resampled with replacement — within each stratum when
    ``strata`` is given — and ``statistic(indices)`` is evaluated on each resample; because a pair unit
    carries both conditions, the two conditions are always resampled together (a *paired* bootstrap).
    Non-finite resample values are ignored; with fewer than ``min_defined * n_resamples`` defined values
    the bounds are NaN. Deterministic for a given ``seed``.

    Args:
        statistic: maps an index array (into the pair units) to a float; ``np.arange(n_pairs)`` gives the
            point estimate.
        n_pairs: number of pair units (>= 0; 0 gives NaN everywhere).
        strata: optional stratum label per pair unit.
        n_resamples: number of resamples (>= 1).
        alpha: miscoverage in (0, 1).
        seed: seed of ``numpy.random.default_rng``.
        min_defined: minimum fraction of defined resamples.

    Example:
        >>> d = np.array([0.1, 0.2, 0.15, 0.12, 0.18])
        >>> ci = paired_bootstrap(lambda i: float(d[i].mean()), d.size, n_resamples=500, seed=0)
        >>> round(ci.point, 3), bool(0.1 <= ci.low < ci.high <= 0.2)
        (0.15, True)
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if n_pairs < 0:
        raise ValueError(f"n_pairs must be >= 0, got {n_pairs!r}")
    st = None if strata is None else np.asarray(strata)
    if st is not None and st.shape != (n_pairs,):
        raise ValueError(f"strata must have shape ({n_pairs},), got {st.shape}")
    if n_pairs == 0:
        return ConfidenceInterval(NAN, NAN, NAN)
    point = float(statistic(np.arange(n_pairs)))
    draws = _resample_matrix(n_pairs, st, int(n_resamples), np.random.default_rng(seed))
    values = np.array([float(statistic(idx)) for idx in draws])
    return _percentile_ci(point, values, alpha, min_defined)


def paired_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    method: PairedTest = "wilcoxon",
    n_permutations: int = 10000,
    seed: int = 0,
) -> float:
    """Two-sided p-value of a paired test of ``b - a`` against zero; NaN when undefined.

    Pairs with a non-finite member are dropped. ``"wilcoxon"``: the Wilcoxon signed-rank test
    (``scipy.stats.wilcoxon``, zero differences dropped, exact distribution for small samples).
    ``"permutation"``: the sign-flip permutation test of the mean difference — exact over all ``2^n``
    sign patterns for ``n <= 16``, else ``n_permutations`` random patterns with p = (hits + 1)/(R + 1).
    NaN when no non-zero difference remains.

    Example:
        >>> round(paired_test([0, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6]), 5)
        0.03125
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"a and b must be 1-D of equal length, got shapes {x.shape} and {y.shape}")
    d = (y - x)[np.isfinite(x) & np.isfinite(y)]
    d = d[d != 0]
    if d.size == 0:
        return NAN
    if method == "wilcoxon":
        from scipy import stats  # imported here: the Snakefile imports this package while planning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)
    if method == "permutation":
        observed = abs(d.mean())
        if d.size <= 16:
            signs = np.array(list(product((1.0, -1.0), repeat=d.size)))
            means = np.abs(signs @ d) / d.size
            return float(np.mean(means >= observed - 1e-12))
        rng = np.random.default_rng(seed)
        signs = rng.choice((1.0, -1.0), size=(n_permutations, d.size))
        hits = int(np.sum(np.abs(signs @ d) / d.size >= observed - 1e-12))
        return (hits + 1) / (n_permutations + 1)
    raise ValueError(f"method must be 'wilcoxon' or 'permutation', got {method!r}")


def _rel_change(a: float, b: float) -> float:
    return (b - a) / a if math.isfinite(a) and math.isfinite(b) and a != 0 else NAN


def _row(cmp: Comparison, level: str, n_pairs: int, **values: float) -> dict[str, object]:
    return {
        "kind": cmp.kind,
        "label": cmp.label,
        "base_model": cmp.base_model,
        "model_a": cmp.model_a,
        "style_a": cmp.style_a,
        "model_b": cmp.model_b,
        "style_b": cmp.style_b,
        "level": level,
        "n_pairs": n_pairs,
        **values,
    }


def _task_values(cells: pl.DataFrame, model: str, style: str) -> pl.DataFrame:
    return cells.filter((pl.col("model") == model) & (pl.col("style") == style)).select("task", "value")


def _paired_task_values(cells: pl.DataFrame, comparison: Comparison) -> tuple[np.ndarray, np.ndarray]:
    """Per task, the value under condition a and under condition b of ``comparison``, for the tasks where
    both are finite (the pairs)."""
    joined = _task_values(cells, comparison.model_a, comparison.style_a).join(
        _task_values(cells, comparison.model_b, comparison.style_b), on="task", suffix="_b"
    )
    values_a = joined["value"].to_numpy().astype(np.float64)
    values_b = joined["value_b"].to_numpy().astype(np.float64)
    keep = np.isfinite(values_a) & np.isfinite(values_b)
    return values_a[keep], values_b[keep]


def _paired_estimates(
    name: str,
    key: str,
    statistic: Callable[[np.ndarray, np.ndarray], float],
    values_a: np.ndarray,
    values_b: np.ndarray,
    *,
    n_resamples: int,
    alpha: float,
    seed: int,
    test: PairedTest,
) -> dict[str, float]:
    """One quantity of a task-level comparison: the means per condition, ``statistic`` of the paired values
    with its bootstrap interval (paired tasks resampled), and the paired test."""

    def resampled(draw: np.ndarray) -> float:
        return statistic(values_a[draw], values_b[draw])

    interval = paired_bootstrap(resampled, values_a.size, n_resamples=n_resamples, alpha=alpha, seed=seed)
    return {
        f"{name}_a": float(values_a.mean()) if values_a.size else NAN,
        f"{name}_b": float(values_b.mean()) if values_b.size else NAN,
        key: interval.point,
        f"{key}_ci_low": interval.low,
        f"{key}_ci_high": interval.high,
        f"p_{name}": paired_test(values_a, values_b, method=test, seed=seed),
    }


def reasoning_tradeoff(
    metrics: pl.DataFrame,
    comparisons: Sequence[Comparison],
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
    granularity: str = "atom",
    n_resamples: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
    test: PairedTest = "wilcoxon",
) -> pl.DataFrame:
    """Task-level paired comparison of precision and pooled AUROC (see the module docstring).

    For each comparison, tasks where both conditions have a finite value are the pairs (separately for
    precision and AUROC; ``n_pairs`` counts the precision pairs, ``n_pairs_auroc`` the AUROC pairs).
    ``precision_a/b`` and ``auroc_a/b`` are the task means; ``rel_delta_auroc`` is the relative change of
    the mean AUROC. Bootstrap: tasks resampled with replacement. Deltas, intervals and p-values are kept
    only where the status is ``ok`` (:func:`with_statuses`: at least :data:`MIN_PAIRS` pairs, some
    variation, the metric defined) — never an error.

    Returns:
        One row per comparison (:data:`TRADEOFF_SCHEMA`).
    """
    require_columns(metrics, METRICS_SCHEMA, "metrics")
    if confidence not in CONFIDENCE_FUNCTIONS:
        raise ValueError(f"confidence must be one of {tuple(CONFIDENCE_FUNCTIONS)}, got {confidence!r}")
    prec = select_metric(metrics, "precision", granularity=granularity)
    auc = select_metric(
        metrics,
        "auroc_pooled",
        granularity=granularity,
        confidence=confidence,
        flavour=flavour,
        calibration="none",
    )
    # quantity -> (cells, output column, statistic of the paired task values a, b)
    quantities: dict[str, tuple[pl.DataFrame, str, Callable[[np.ndarray, np.ndarray], float]]] = {
        "precision": (prec, "delta_precision", lambda a, b: float(b.mean() - a.mean())),
        "auroc": (auc, "rel_delta_auroc", lambda a, b: _rel_change(float(a.mean()), float(b.mean()))),
    }
    rows = []
    for comparison in comparisons:
        estimates: dict[str, float | int] = {}
        n_pairs = 0
        for name, (cells, key, statistic) in quantities.items():
            values_a, values_b = _paired_task_values(cells, comparison)
            if name == "precision":
                n_pairs = int(values_a.size)
            else:
                estimates["n_pairs_auroc"] = int(values_a.size)  # tasks where AUROC is defined in both
            estimates |= _paired_estimates(
                name,
                key,
                statistic,
                values_a,
                values_b,
                n_resamples=n_resamples,
                alpha=alpha,
                seed=comparison_seed(seed, comparison),
                test=test,
            )
        rows.append(_row(comparison, "task", n_pairs, **estimates))
    return with_statuses(nan_for_null(pl.DataFrame(rows, schema=dict(TRADEOFF_SCHEMA))))


def _paired_samples(
    units: pl.DataFrame, cmp: Comparison, granularity: str, score_col: str
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Pair keys (task, sample_id, pair code) answered under both conditions, and each condition's units.

    Unit frames keep every row (``is_response`` marks response units, the others are missing reference
    units, which count for nothing but keep a sample with an empty response in the pairing).
    """
    status = pl.col("status").cast(pl.String) if "status" in units.columns else pl.lit("correct")
    sel = units.filter(pl.col("granularity") == granularity).select(
        "model",
        "style",
        "task",
        pl.col("sample_id").cast(pl.String),
        pl.col("is_correct").cast(pl.Float64),
        pl.col(score_col).cast(pl.Float64).fill_null(NAN).alias("score"),
        status.is_in(list(RESPONSE_STATUSES)).alias("is_response"),
    )
    a = sel.filter((pl.col("model") == cmp.model_a) & (pl.col("style") == cmp.style_a))
    b = sel.filter((pl.col("model") == cmp.model_b) & (pl.col("style") == cmp.style_b))
    keys = (
        a.select("task", "sample_id")
        .unique(maintain_order=True)
        .join(b.select("task", "sample_id").unique(maintain_order=True), on=["task", "sample_id"])
        .sort("task", "sample_id")
        .with_row_index("pair")
    )
    return keys, a.join(keys, on=["task", "sample_id"]), b.join(keys, on=["task", "sample_id"])


class _UnitIndex:
    """One condition's units grouped by pair code: per-pair precision and fast gathering of resampled units.

    Per-pair precision = correct response units / response units (0 for a response without units, as in
    the metrics stage). The gathered units are the response units with a finite score (for AUROC).
    """

    def __init__(self, frame: pl.DataFrame, n_pairs: int) -> None:
        resp = frame.filter(pl.col("is_response"))
        pair = resp["pair"].to_numpy().astype(np.int64)
        n_resp = np.bincount(pair, minlength=n_pairs).astype(np.float64)
        n_correct = np.bincount(pair, weights=resp["is_correct"].to_numpy(), minlength=n_pairs)
        self.precision = np.divide(n_correct, n_resp, out=np.zeros(n_pairs), where=n_resp > 0)
        scored = resp.filter(pl.col("score").is_finite()).sort("pair")
        self.pair = scored["pair"].to_numpy().astype(np.int64)
        self.correct = scored["is_correct"].to_numpy().astype(np.float64)
        self.score = scored["score"].to_numpy().astype(np.float64)
        self.sizes = np.bincount(self.pair, minlength=n_pairs)
        self.starts = np.concatenate(([0], np.cumsum(self.sizes)[:-1]))

    def gather(self, idx: np.ndarray) -> np.ndarray:
        sz = self.sizes[idx]
        offsets = np.cumsum(sz) - sz
        return np.repeat(self.starts[idx] - offsets, sz) + np.arange(int(sz.sum()))


def _task_means(
    draw: np.ndarray, condition: _UnitIndex, scores: np.ndarray, task_codes: np.ndarray, n_tasks: int
) -> tuple[float, float]:
    """Mean over tasks of precision and of pooled AUROC, on the pairs ``draw`` of one condition."""
    tasks = task_codes[draw]
    count = np.bincount(tasks, minlength=n_tasks)
    total = np.bincount(tasks, weights=condition.precision[draw], minlength=n_tasks)
    precision = total[count > 0] / count[count > 0]
    aurocs = np.full(n_tasks, np.nan)
    for task in range(n_tasks):
        gathered = condition.gather(draw[tasks == task])
        if gathered.size:
            aurocs[task] = auroc(scores[gathered], condition.correct[gathered])
    defined = aurocs[np.isfinite(aurocs)]
    return (
        float(precision.mean()) if precision.size else NAN,
        float(defined.mean()) if defined.size else NAN,
    )


def _sample_estimates(
    keys: pl.DataFrame,
    units_a: pl.DataFrame,
    units_b: pl.DataFrame,
    *,
    confidence: str,
    n_resamples: int,
    alpha: float,
    seed: int,
) -> dict[str, float]:
    """The estimates of one comparison with pairs ``keys`` (bootstrap stratified by task, seeded ``seed``)."""
    n_pairs = keys.height
    task_codes = np.unique(keys["task"].to_numpy(), return_inverse=True)[1].reshape(-1)
    n_tasks = int(task_codes.max()) + 1
    index_a, index_b = _UnitIndex(units_a, n_pairs), _UnitIndex(units_b, n_pairs)
    scores_a = ranking_scores(confidence, index_a.score)
    scores_b = ranking_scores(confidence, index_b.score)

    def both(draw: np.ndarray) -> tuple[float, float, float, float]:
        return (
            *_task_means(draw, index_a, scores_a, task_codes, n_tasks),
            *_task_means(draw, index_b, scores_b, task_codes, n_tasks),
        )

    draws = _resample_matrix(n_pairs, task_codes, n_resamples, np.random.default_rng(seed))
    boot = np.array([both(draw) for draw in draws]).reshape(-1, 4)
    boot_delta_precision = boot[:, 2] - boot[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_delta_auroc = np.where(boot[:, 1] != 0, (boot[:, 3] - boot[:, 1]) / boot[:, 1], np.nan)
    precision_a, auroc_a, precision_b, auroc_b = both(np.arange(n_pairs))
    ci_precision = _percentile_ci(precision_b - precision_a, boot_delta_precision, alpha, 0.5)
    ci_auroc = _percentile_ci(_rel_change(auroc_a, auroc_b), boot_delta_auroc, alpha, 0.5)
    finite = boot_delta_auroc[np.isfinite(boot_delta_auroc)]
    p_auroc = (
        min(1.0, 2 * min(float(np.mean(finite <= 0)), float(np.mean(finite >= 0)))) if finite.size else NAN
    )
    return {
        "n_pairs_auroc": n_pairs,
        "precision_a": precision_a,
        "precision_b": precision_b,
        "delta_precision": ci_precision.point,
        "delta_precision_ci_low": ci_precision.low,
        "delta_precision_ci_high": ci_precision.high,
        "p_precision": paired_test(index_a.precision, index_b.precision),
        "auroc_a": auroc_a,
        "auroc_b": auroc_b,
        "rel_delta_auroc": ci_auroc.point,
        "rel_delta_auroc_ci_low": ci_auroc.low,
        "rel_delta_auroc_ci_high": ci_auroc.high,
        "p_auroc": p_auroc,
    }


def reasoning_tradeoff_units(
    units: pl.DataFrame,
    comparisons: Sequence[Comparison],
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
    granularity: str = "atom",
    n_resamples: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
) -> pl.DataFrame:
    """Sample-level paired comparison of precision and pooled AUROC from the units tables.

    Pair units are the (task, sample_id) answered under both conditions. For a set of pairs, per task:
    precision = mean over responses of correct / response units (as in the metrics stage; a response
    without units scores 0), AUROC = pooled AUROC of the confidence function's ranking scores over the
    response units with a finite score; the statistics are the means over tasks of these per-task values,
    and the bootstrap resamples samples within each task (stratified). Tests: Wilcoxon signed-rank on the
    per-sample precision differences; bootstrap two-sided p-value for the AUROC change.

    Args:
        units: concatenated units tables (at least model, style, task, sample_id, granularity, is_correct
            and ``"{flavour}.{confidence}"``; ``status`` if present selects the response units).
        comparisons: the comparisons to make.
        confidence, flavour: the confidence function and flavour whose ranking defines AUROC.
        granularity: unit granularity.
        n_resamples, alpha, seed: bootstrap settings.
    """
    if confidence not in CONFIDENCE_FUNCTIONS:
        raise ValueError(f"confidence must be one of {tuple(CONFIDENCE_FUNCTIONS)}, got {confidence!r}")
    score_col = f"{flavour}.{confidence}"
    needed = ["model", "style", "task", "sample_id", "granularity", "is_correct", score_col]
    require_columns(units, needed, "units")
    rows = []
    for cmp in comparisons:
        keys, units_a, units_b = _paired_samples(units, cmp, granularity, score_col)
        if keys.height == 0:
            undefined = {column: NAN for column, dtype in TRADEOFF_SCHEMA.items() if dtype.is_float()}
            rows.append(_row(cmp, "sample", 0, **undefined))  # statuses set at the end
            continue
        estimates = _sample_estimates(
            keys,
            units_a,
            units_b,
            confidence=confidence,
            n_resamples=int(n_resamples),
            alpha=alpha,
            seed=comparison_seed(seed, cmp),
        )
        rows.append(_row(cmp, "sample", keys.height, **estimates))
        logger.info("reasoning trade-off %s: %d paired samples", cmp.label, keys.height)
    return with_statuses(nan_for_null(pl.DataFrame(rows, schema=dict(TRADEOFF_SCHEMA))))
