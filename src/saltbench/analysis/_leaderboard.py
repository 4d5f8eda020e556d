"""The leaderboard (per model × prompt style) and the per-task accuracy table behind ``accuracy_by_task``."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from saltbench.confidence import CONFIDENCE_FUNCTIONS
from saltbench.core.vocabulary import CALIBRATION_METHODS, FLAVOURS, GRANULARITIES

from ._common import METRICS_SCHEMA, combine_intervals, nan_for_null, require_columns

logger = logging.getLogger(__name__)

TASK_KEYS: tuple[str, ...] = ("model", "style", "task")


def _check_choice(argument: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{argument} must be one of {tuple(allowed)}, got {value!r}")


def select_metric(
    metrics: pl.DataFrame,
    metric: str,
    *,
    granularity: str | None = None,
    confidence: str | None = None,
    flavour: str | None = None,
    calibration: str | None = None,
) -> pl.DataFrame:
    """Rows of ``metrics`` for one metric and optional filters: one per (model, style, task, granularity).

    ``None`` filters are not applied. Duplicate rows of one cell (should not happen upstream) are averaged
    with a warning. Returns columns model, style, task, granularity, value, ci_low, ci_high, n_units,
    n_responses.
    """
    require_columns(metrics, METRICS_SCHEMA, "metrics")
    cond = pl.col("metric") == metric
    for column, wanted in (
        ("granularity", granularity),
        ("confidence", confidence),
        ("flavour", flavour),
        ("calibration", calibration),
    ):
        if wanted is not None:
            cond &= pl.col(column) == wanted
    rows = metrics.filter(cond)
    keys = [*TASK_KEYS, "granularity"]
    out = rows.group_by(keys, maintain_order=True).agg(
        pl.col("value").mean(),
        pl.col("ci_low").mean(),
        pl.col("ci_high").mean(),
        pl.col("n_units").max(),
        pl.col("n_responses").max(),
        pl.len().alias("_n"),
    )
    if out.height and int(out["_n"].max()) > 1:  # type: ignore[arg-type]
        n_dup = int((out["_n"] > 1).sum())
        logger.warning("select_metric(%s): %d cells have duplicate rows; averaged", metric, n_dup)
    return nan_for_null(out.drop("_n"))


# the range of each aggregated metric, to which the normal-approximation interval of the mean is clipped
METRIC_RANGES: dict[str, tuple[float, float]] = {
    **{f"precision_{g}": (0.0, 1.0) for g in GRANULARITIES},
    "ece": (0.0, 1.0),
    "auroc_pooled": (0.0, 1.0),
    "auroc_per_response": (0.0, 1.0),
    "aurc": (0.0, 1.0),
}


def _over_tasks(cells: pl.DataFrame, keys: Sequence[str], prefix: str) -> pl.DataFrame:
    """Mean over tasks per ``keys`` (:func:`combine_intervals`): ``{prefix}``, ``_ci_low``, ``_ci_high``."""
    schema = {
        **{k: pl.String() for k in keys},
        prefix: pl.Float64(),
        f"{prefix}_ci_low": pl.Float64(),
        f"{prefix}_ci_high": pl.Float64(),
        f"{prefix}_n_tasks": pl.Int64(),
    }
    if cells.is_empty():
        return pl.DataFrame(schema=schema)
    grouped = cells.group_by(list(keys), maintain_order=True).agg("value", "ci_low", "ci_high")
    rows = []
    for rec in grouped.iter_rows(named=True):
        value, ci_low, ci_high = (
            np.asarray(rec[c], dtype=np.float64) for c in ("value", "ci_low", "ci_high")
        )
        bounds = METRIC_RANGES.get(prefix, (-math.inf, math.inf))
        mean, low, high, n = combine_intervals(value, ci_low, ci_high, bounds=bounds)
        values = (mean, low, high, n)
        rows.append({k: rec[k] for k in keys} | dict(zip(list(schema)[len(keys) :], values)))
    return pl.DataFrame(rows, schema=schema)


def leaderboard(
    metrics: pl.DataFrame,
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
    calibration: str = "zscore_sigmoid",
    granularity: str = "atom",
    eligibility: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per (model, style): precision at each granularity and uncertainty metrics of one confidence.

    Columns: ``family`` (the estimator family of ``confidence``, docs/confidence.md §Families),
    ``precision_{atom,line,generation}``, ``ece``, ``auroc_pooled``, ``auroc_per_response`` and
    ``aurc``, each with ``_ci_low``/``_ci_high``, plus ``n_tasks`` (tasks with a defined precision at atom
    level). ECE uses the calibrated confidence (``calibration``); AUROC and AURC the raw ranking
    (calibration ``"none"``). Uncertainty metrics are taken at ``granularity``. Rejection is AURC, not PRR
    (PRR = 2·AUROC − 1 on pooled binary units, so it would repeat ``auroc_pooled``; PRR stays in the
    metrics table).

    Aggregation across tasks: the **unweighted mean of the per-task values** (each task counts equally,
    whatever its number of units); undefined (NaN) task values are skipped. The interval of the mean
    combines the per-task bootstrap intervals under a normal approximation assuming independent tasks
    (:func:`saltbench.analysis._common.combine_intervals`), clipped to the metric's range
    (:data:`METRIC_RANGES`); it is NaN when a defined task lacks an interval.

    Args:
        metrics: the concatenated metrics tables (:data:`METRICS_SCHEMA`).
        confidence: confidence function name (a key of ``saltbench.confidence.CONFIDENCE_FUNCTIONS``).
        flavour: ``"topk"`` or ``"full"`` (an estimator with a source of its own — draws, second pass,
            trace, CCP's ``topk`` — is read from that source whatever the flavour, as
            :func:`saltbench.confidence.estimator_column` reads it).
        calibration: calibration method used for ECE.
        granularity: granularity of ECE, AUROC and AURC.
        eligibility: :func:`saltbench.analysis.eligibility_table`; column ``eligible`` says whether a model
            and style enters pooled estimates (docs/metrics.md §10; all do without one).
    """
    _check_choice("confidence", confidence, tuple(CONFIDENCE_FUNCTIONS))
    _check_choice("flavour", flavour, FLAVOURS)
    spec = CONFIDENCE_FUNCTIONS[confidence]
    flavour = spec.source or flavour
    _check_choice("calibration", calibration, CALIBRATION_METHODS)
    _check_choice("granularity", granularity, GRANULARITIES)
    keys = ("model", "style")
    parts: list[tuple[str, pl.DataFrame]] = [
        (f"precision_{g}", select_metric(metrics, "precision", granularity=g)) for g in GRANULARITIES
    ]
    parts.append(
        (
            "ece",
            select_metric(
                metrics,
                "ece",
                granularity=granularity,
                confidence=confidence,
                flavour=flavour,
                calibration=calibration,
            ),
        )
    )
    for name in ("auroc_pooled", "auroc_per_response", "aurc"):
        ranking = select_metric(
            metrics, name, granularity=granularity, confidence=confidence, flavour=flavour, calibration="none"
        )
        parts.append((name, ranking))
    out = metrics.select(keys).unique(maintain_order=True).with_columns(pl.lit(spec.family).alias("family"))
    n_tasks = None
    for name, cells in parts:
        agg = _over_tasks(cells, keys, name)
        if name == "precision_atom":
            n_tasks = agg.select([*keys, pl.col(f"{name}_n_tasks").alias("n_tasks")])
        out = out.join(agg.drop(f"{name}_n_tasks"), on=list(keys), how="left")
    if n_tasks is not None:
        out = out.join(n_tasks, on=list(keys), how="left").with_columns(pl.col("n_tasks").fill_null(0))
    return _marked(nan_for_null(out.sort(keys)), eligibility)


def _marked(table: pl.DataFrame, eligibility: pl.DataFrame | None) -> pl.DataFrame:
    """``table`` with column ``eligible`` (:func:`saltbench.analysis.mark_eligible`; True without a table)."""
    from saltbench.analysis._eligibility import mark_eligible

    if eligibility is None:
        return table.with_columns(eligible=pl.lit(True))
    return mark_eligible(table, eligibility)


def accuracy_by_task(
    metrics: pl.DataFrame, metric: str = "precision", eligibility: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per-task accuracy (precision by default) of every model, style and granularity.

    Columns: model, style, task, granularity, value, ci_low, ci_high, n_units, n_responses, eligible (tidy;
    one row per cell; ``eligible``: the model and style enter pooled estimates, docs/metrics.md §10, all
    without an ``eligibility`` table). This is the table behind the ``accuracy_by_task`` figure, whose bars
    pool the eligible models.
    """
    _check_choice("metric", metric, ("precision", "recall"))
    return _marked(select_metric(metrics, metric).sort([*TASK_KEYS, "granularity"]), eligibility)
