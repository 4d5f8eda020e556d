"""Ranking quality by unit granularity: AUROC at atom vs line vs generation, pooled and per response."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import polars as pl

from saltbench.confidence import CONFIDENCE_FUNCTIONS
from saltbench.core.contracts import GRANULARITY_TABLE, confidence_column
from saltbench.core.vocabulary import FLAVOURS, GRANULARITIES

from ._common import METRICS_SCHEMA, nan_for_null, require_columns, response_units

GRANULARITY_SCHEMA: Mapping[str, pl.DataType] = GRANULARITY_TABLE.columns
"""Columns of :func:`granularity_table` (the contract :data:`saltbench.core.contracts.GRANULARITY_TABLE`)."""

AUROC_METRICS: tuple[str, ...] = ("auroc_pooled", "auroc_per_response")

CELL: tuple[str, ...] = ("model", "style", "task", "granularity")

COUNTS_SCHEMA: Mapping[str, pl.DataType] = {
    "model": pl.String(),
    "style": pl.String(),
    "task": pl.String(),
    "granularity": pl.String(),
    "n_correct": pl.Int64(),
    "n_incorrect": pl.Int64(),
}
"""Columns of :func:`auroc_unit_counts`."""


def auroc_unit_counts(
    units: pl.DataFrame | Iterable[pl.DataFrame],
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
) -> pl.DataFrame:
    """The units an AUROC of ``confidence`` ranks, per (model, style, task, granularity): the response units
    (status correct, incorrect, selective, redundant) whose ``{flavour}.{confidence}`` value is finite, split
    into ``n_correct`` and ``n_incorrect`` (every other response status) — the metrics stage's protocol
    (docs/metrics.md §9).

    ``units``: a units table or an iterable of them (one file at a time keeps memory bounded).

    >>> units = pl.DataFrame({"model": "m", "style": "direct", "task": "dna", "granularity": "atom",
    ...     "status": ["correct", "incorrect", "missing", "correct"], "topk.mean_probability": [0.9, 0.2,
    ...     float("nan"), float("nan")]})
    >>> auroc_unit_counts(units).select("n_correct", "n_incorrect").row(0)
    (1, 1)
    """
    column = confidence_column(flavour, confidence)
    frames = [units] if isinstance(units, pl.DataFrame) else units
    parts = []
    for frame in frames:
        require_columns(frame, [*CELL, "status", column], "units")
        scored = response_units(frame).filter(pl.col(column).is_finite())
        parts.append(
            scored.group_by(pl.col(CELL).cast(pl.String)).agg(
                n_correct=(pl.col("status").cast(pl.String) == "correct").sum().cast(pl.Int64),
                n_incorrect=(pl.col("status").cast(pl.String) != "correct").sum().cast(pl.Int64),
            )
        )
    if not parts:
        return pl.DataFrame(schema=dict(COUNTS_SCHEMA))
    counts = pl.concat(parts).group_by(list(CELL)).agg(pl.col("n_correct", "n_incorrect").sum())
    return counts.select(pl.col(name).cast(dtype) for name, dtype in COUNTS_SCHEMA.items()).sort(list(CELL))


_SUMMARY_KEYS: tuple[str, ...] = ("task", "style", "granularity", "metric")
"""The columns that identify a granularity-table row; per-model values are summarised per combination."""


def _auroc_rows(metrics: pl.DataFrame, confidence: str, flavour: str) -> pl.DataFrame:
    """The metrics rows of the AUROC kinds (:data:`AUROC_METRICS`) of one function and flavour, raw ranking
    (calibration ``"none"``)."""
    return metrics.filter(
        pl.col("metric").is_in(AUROC_METRICS)
        & (pl.col("confidence") == confidence)
        & (pl.col("flavour") == flavour)
        & (pl.col("calibration") == "none")
    )


def _complete_grid(metrics: pl.DataFrame) -> pl.DataFrame:
    """Every task × style × granularity × AUROC metric, tasks and styles in their order in ``metrics``."""
    tasks = metrics["task"].unique(maintain_order=True).to_list()
    styles = metrics["style"].unique(maintain_order=True).to_list()
    return pl.DataFrame(
        [
            (task, style, granularity, metric)
            for task in tasks
            for style in styles
            for granularity in GRANULARITIES
            for metric in AUROC_METRICS
        ],
        schema={"task": pl.String(), "style": pl.String(), "granularity": pl.String(), "metric": pl.String()},
        orient="row",
    )


def _per_model_values(rows: pl.DataFrame, counts: pl.DataFrame | None) -> pl.DataFrame:
    """Mean value per task, style, granularity, metric and model, with the model's unit counts where its value
    is defined (0 where it is not; null without ``counts``)."""
    per_model = rows.group_by([*_SUMMARY_KEYS, "model"], maintain_order=True).agg(pl.col("value").mean())
    if counts is None:
        return per_model.with_columns(
            pl.lit(None, pl.Int64).alias("n_correct"), pl.lit(None, pl.Int64).alias("n_incorrect")
        )
    return per_model.join(
        counts, on=["model", "style", "task", "granularity"], how="left", maintain_order="left"
    ).with_columns(
        # a model's units count where its value is defined (the models the summary is over)
        pl.when(pl.col("value").is_finite()).then(pl.col(column).fill_null(0)).otherwise(0).alias(column)
        for column in ("n_correct", "n_incorrect")
    )


def _values_over_models(per_model: pl.DataFrame, counted: bool) -> pl.DataFrame:
    """The per-model values of each task, style, granularity and metric as a list, with the unit counts
    summed over models (``counted``) or the null count carried over."""
    return per_model.group_by(list(_SUMMARY_KEYS), maintain_order=True).agg(
        pl.col("value"),
        *(
            pl.col(column).sum().cast(pl.Int64) if counted else pl.col(column).first()
            for column in ("n_correct", "n_incorrect")
        ),
    )


def _model_statistics(values: Sequence[float]) -> dict[str, float | int]:
    """Mean, median and quartiles of the finite per-model values (NaN when there is none) and their number."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    statistics = (
        (float(finite.mean()), float(np.median(finite)), *map(float, np.quantile(finite, [0.25, 0.75])))
        if finite.size
        else (np.nan,) * 4
    )
    return dict(zip(("mean", "median", "q25", "q75"), statistics)) | {"n_models": int(finite.size)}


def _summary_table(grouped: pl.DataFrame) -> pl.DataFrame:
    """One row per task, style, granularity and metric of ``grouped``: the statistics of its per-model values
    and its unit counts (:data:`GRANULARITY_SCHEMA`)."""
    records = []
    for record in grouped.iter_rows(named=True):
        keys = {key: record[key] for key in _SUMMARY_KEYS}
        counts = {"n_correct": record["n_correct"], "n_incorrect": record["n_incorrect"]}
        records.append(keys | _model_statistics(record["value"]) | counts)
    return pl.DataFrame(records, schema=dict(GRANULARITY_SCHEMA))


def granularity_table(
    metrics: pl.DataFrame,
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
    counts: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """AUROC of one confidence function per task × style × granularity, summarised across models.

    For each task, prompt style, granularity (atom, line, generation) and AUROC kind (``auroc_pooled``:
    all units of all responses ranked together; ``auroc_per_response``: mean of the AUROCs inside each
    response), the per-model values (raw ranking, calibration ``"none"``) are summarised by their mean,
    median and inter-quartile range over the models where the value is defined (``n_models``).
    Generation-level per-response AUROC is undefined (one unit per response) and appears as NaN with
    ``n_models = 0``: every task × style × granularity × metric combination of the input is listed, so a
    missing value is visible instead of silently absent.

    ``n_correct`` / ``n_incorrect``: the units the summarised AUROCs rank (:func:`auroc_unit_counts` of the
    same function and flavour, ``counts``), summed over the models whose value is defined (0 when none is);
    null when ``counts`` is not given. An AUROC resting on few units of either class is noise: the figure
    and the findings page mark estimates below ``analysis.min_units`` (docs/explorer.md §5).

    Args:
        metrics: concatenated metrics tables.
        confidence: confidence function.
        flavour: ``"topk"`` or ``"full"``.
        counts: :func:`auroc_unit_counts` output.
    """
    require_columns(metrics, METRICS_SCHEMA, "metrics")
    if confidence not in CONFIDENCE_FUNCTIONS:
        raise ValueError(f"confidence must be one of {tuple(CONFIDENCE_FUNCTIONS)}, got {confidence!r}")
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be one of {FLAVOURS}, got {flavour!r}")
    rows = _auroc_rows(metrics, confidence, flavour)
    grid = _complete_grid(metrics)
    grouped = _values_over_models(_per_model_values(rows, counts), counted=counts is not None)
    summary = _summary_table(grouped)
    result = grid.join(summary, on=list(_SUMMARY_KEYS), how="left", maintain_order="left")
    filled = [pl.col("n_models").fill_null(0)]
    if counts is not None:
        filled += [pl.col("n_correct").fill_null(0), pl.col("n_incorrect").fill_null(0)]
    return nan_for_null(result.with_columns(filled))


def too_few_units(min_units: int) -> pl.Expr:
    """True on the rows of a granularity table whose estimate rests on fewer than ``min_units`` correct or
    fewer than ``min_units`` incorrect units (``analysis.min_units``); null where the units were not
    counted."""
    return (pl.col("n_correct") < min_units) | (pl.col("n_incorrect") < min_units)
