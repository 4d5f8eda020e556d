"""Ranking quality by unit granularity: AUROC at atom vs line vs generation, pooled and per response."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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
    rows = metrics.filter(
        pl.col("metric").is_in(AUROC_METRICS)
        & (pl.col("confidence") == confidence)
        & (pl.col("flavour") == flavour)
        & (pl.col("calibration") == "none")
    )
    tasks = metrics["task"].unique(maintain_order=True).to_list()
    styles = metrics["style"].unique(maintain_order=True).to_list()
    grid = pl.DataFrame(
        [(t, s, g, m) for t in tasks for s in styles for g in GRANULARITIES for m in AUROC_METRICS],
        schema={"task": pl.String(), "style": pl.String(), "granularity": pl.String(), "metric": pl.String()},
        orient="row",
    )
    per_model = rows.group_by(["task", "style", "granularity", "metric", "model"], maintain_order=True).agg(
        pl.col("value").mean()
    )
    if counts is not None:
        per_model = per_model.join(
            counts, on=["model", "style", "task", "granularity"], how="left", maintain_order="left"
        ).with_columns(
            # a model's units count where its value is defined (the models the summary is over)
            pl.when(pl.col("value").is_finite()).then(pl.col(c).fill_null(0)).otherwise(0).alias(c)
            for c in ("n_correct", "n_incorrect")
        )
    else:
        per_model = per_model.with_columns(
            pl.lit(None, pl.Int64).alias("n_correct"), pl.lit(None, pl.Int64).alias("n_incorrect")
        )
    grouped = per_model.group_by(["task", "style", "granularity", "metric"], maintain_order=True).agg(
        pl.col("value"),
        pl.col("n_correct").sum().cast(pl.Int64) if counts is not None else pl.col("n_correct").first(),
        pl.col("n_incorrect").sum().cast(pl.Int64) if counts is not None else pl.col("n_incorrect").first(),
    )
    out = []
    for rec in grouped.iter_rows(named=True):
        v = np.asarray(rec["value"], dtype=np.float64)
        v = v[np.isfinite(v)]
        stats = (
            (float(v.mean()), float(np.median(v)), *map(float, np.quantile(v, [0.25, 0.75])))
            if v.size
            else (np.nan,) * 4
        )
        keys = {k: rec[k] for k in ("task", "style", "granularity", "metric")}
        out.append(
            keys
            | dict(zip(("mean", "median", "q25", "q75"), stats))
            | {"n_models": int(v.size), "n_correct": rec["n_correct"], "n_incorrect": rec["n_incorrect"]}
        )
    summary = pl.DataFrame(out, schema=dict(GRANULARITY_SCHEMA))
    on = ["task", "style", "granularity", "metric"]
    result = grid.join(summary, on=on, how="left", maintain_order="left")
    filled = [pl.col("n_models").fill_null(0)]
    if counts is not None:
        filled += [pl.col("n_correct").fill_null(0), pl.col("n_incorrect").fill_null(0)]
    return nan_for_null(result.with_columns(filled))


def too_few_units(min_units: int) -> pl.Expr:
    """True on the rows of a granularity table whose estimate rests on fewer than ``min_units`` correct or
    fewer than ``min_units`` incorrect units (``analysis.min_units``); null where the units were not
    counted."""
    return (pl.col("n_correct") < min_units) | (pl.col("n_incorrect") < min_units)
