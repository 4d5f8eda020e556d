"""Ranking quality by unit granularity: AUROC at atom vs line vs generation, pooled and per response."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from saltbench.confidence import CONFIDENCE_FUNCTIONS
from saltbench.core.contracts import GRANULARITY_TABLE
from saltbench.core.vocabulary import FLAVOURS, GRANULARITIES

from ._common import METRICS_SCHEMA, nan_for_null, require_columns

GRANULARITY_SCHEMA: Mapping[str, pl.DataType] = GRANULARITY_TABLE.columns
"""Columns of :func:`granularity_table` (the contract :data:`saltbench.core.contracts.GRANULARITY_TABLE`)."""

AUROC_METRICS: tuple[str, ...] = ("auroc_pooled", "auroc_per_response")


def granularity_table(
    metrics: pl.DataFrame, *, confidence: str = "mean_probability", flavour: str = "topk"
) -> pl.DataFrame:
    """AUROC of one confidence function per task × style × granularity, summarised across models.

    For each task, prompt style, granularity (atom, line, generation) and AUROC kind (``auroc_pooled``:
    all units of all responses ranked together; ``auroc_per_response``: mean of the AUROCs inside each
    response), the per-model values (raw ranking, calibration ``"none"``) are summarised by their mean,
    median and inter-quartile range over the models where the value is defined (``n_models``).
    Generation-level per-response AUROC is undefined (one unit per response) and appears as NaN with
    ``n_models = 0``: every task × style × granularity × metric combination of the input is listed, so a
    missing value is visible instead of silently absent.

    Args:
        metrics: concatenated metrics tables.
        confidence: confidence function.
        flavour: ``"topk"`` or ``"full"``.
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
    grouped = per_model.group_by(["task", "style", "granularity", "metric"], maintain_order=True).agg(
        pl.col("value")
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
        out.append(keys | dict(zip(("mean", "median", "q25", "q75"), stats)) | {"n_models": int(v.size)})
    summary = pl.DataFrame(out, schema=dict(GRANULARITY_SCHEMA))
    on = ["task", "style", "granularity", "metric"]
    result = grid.join(summary, on=on, how="left", maintain_order="left")
    return nan_for_null(result.with_columns(pl.col("n_models").fill_null(0)))
