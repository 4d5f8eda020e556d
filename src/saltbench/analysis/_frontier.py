"""The cost/quality frontier (docs/metrics.md §11): each estimator's ranking quality against what it costs
beyond the greedy answer.

Per granularity and estimator, over the cells (model × style × task) where its pooled AUROC is defined: the
mean pooled AUROC and the mean PRR with intervals combined from the cells' bootstrap intervals
(:func:`~saltbench.analysis._common.combine_intervals`), the number of cells, and the mean extra tokens per
response of its family over the same cells (``estimator_cost``: generated and scored; 0 for a single pass).
Token functions are read in one flavour (``analysis.flavour``); the estimators of the draws, the second pass
and the trace join it, as in the dominance table; CCP only in ``topk``, its source.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from saltbench.confidence import CONFIDENCE_FUNCTIONS, estimator_family
from saltbench.core.contracts import FRONTIER_TABLE

from ._common import combine_intervals
from ._dominance import across_families

FRONTIER_SCHEMA: Mapping[str, pl.DataType] = FRONTIER_TABLE.columns
"""Columns of :func:`frontier` (the contract :data:`saltbench.core.contracts.FRONTIER_TABLE`)."""

_CELL = ("model", "style", "task")
_BOUNDS = {"auroc_pooled": (0.0, 1.0), "prr": (-np.inf, 1.0)}


def _cell_rows(metrics: pl.DataFrame, flavour: str) -> pl.DataFrame:
    """The ranking rows (pooled AUROC, PRR; raw scores) of every estimator in ``flavour``'s cells."""
    rows = metrics.filter(
        pl.col("metric").is_in(list(_BOUNDS))
        & (pl.col("calibration") == "none")
        & pl.col("confidence").is_not_null()
    )
    return across_families(rows).filter(pl.col("flavour") == flavour)


def _costs(cells: pl.DataFrame, cost: pl.DataFrame | None) -> pl.DataFrame:
    """``cells`` (model, style, task, granularity, confidence) with the extra tokens per response of each
    estimator's family in that (model, style, task): 0 for a single pass, null where ``cost`` has no row."""
    cells = cells.with_columns(
        pl.col("confidence").map_elements(estimator_family, return_dtype=pl.String).alias("family")
    )
    extra = ("extra_generated_tokens", "extra_scored_tokens")
    if cost is None or cost.is_empty():
        cost = pl.DataFrame(
            schema={**{k: pl.String() for k in (*_CELL, "family")}, **dict.fromkeys(extra, pl.Float64())}
        )
    joined = cells.join(cost.select(*_CELL, "family", *extra), on=[*_CELL, "family"], how="left")
    single = pl.col("family") == "single_pass"
    return joined.with_columns(pl.when(single).then(0.0).otherwise(pl.col(c)).alias(c) for c in extra)


def frontier(
    metrics: pl.DataFrame, cost: pl.DataFrame | None = None, *, flavour: str = "topk"
) -> pl.DataFrame:
    """One row per granularity × estimator: ranking quality and extra cost (module docstring).

    Args:
        metrics: concatenated metrics tables (eligible cells only, docs/metrics.md §10).
        cost: the ``estimator_cost`` table (:func:`saltbench.analysis.estimator_cost`); without it the extra
            cost of the families beyond a single pass is NaN.
        flavour: the flavour of the token functions.

    Returns:
        :data:`FRONTIER_SCHEMA`, by granularity then the registry's order.
    """
    rows = _cell_rows(metrics, flavour)
    auroc = rows.filter((pl.col("metric") == "auroc_pooled") & pl.col("value").is_finite())
    keys = ["granularity", "confidence"]
    defined = _costs(auroc.select(*_CELL, *keys).unique(), cost)
    rows = rows.join(auroc.select(*_CELL, *keys).unique(), on=[*_CELL, *keys], how="semi")
    out: list[dict[str, object]] = []
    for (granularity, name), part in rows.group_by(keys, maintain_order=True):
        record: dict[str, object] = {"granularity": granularity, "confidence": name}
        record["family"] = estimator_family(str(name))
        record["source"] = (
            part["flavour"][0] if name not in CONFIDENCE_FUNCTIONS else _source(str(name), flavour)
        )
        for metric, prefix in (("auroc_pooled", "auroc"), ("prr", "prr")):
            sub = part.filter(pl.col("metric") == metric)
            mean, low, high, n = combine_intervals(
                sub["value"].to_numpy(),
                sub["ci_low"].to_numpy(),
                sub["ci_high"].to_numpy(),
                bounds=_BOUNDS[metric],
            )
            record |= {prefix: mean, f"{prefix}_ci_low": low, f"{prefix}_ci_high": high}
            if metric == "auroc_pooled":
                record["n_cells"] = n
        spent = defined.filter((pl.col("granularity") == granularity) & (pl.col("confidence") == name))
        generated, scored = _mean(spent["extra_generated_tokens"]), _mean(spent["extra_scored_tokens"])
        record |= {
            "extra_generated_tokens": generated,
            "extra_scored_tokens": scored,
            "extra_tokens": generated + scored,
        }
        out.append(record)
    if not out:
        return pl.DataFrame(schema=dict(FRONTIER_SCHEMA))
    order = {name: i for i, name in enumerate(CONFIDENCE_FUNCTIONS)}
    table = pl.DataFrame(out, schema=dict(FRONTIER_SCHEMA), orient="row")
    return table.sort(
        pl.col("granularity").replace_strict(
            {"atom": 0, "line": 1, "generation": 2}, default=3, return_dtype=pl.Int64
        ),
        pl.col("confidence").replace_strict(order, default=len(order), return_dtype=pl.Int64),
        "confidence",
    )


def _mean(values: pl.Series) -> float:
    """The mean of the non-null ``values``; NaN when there is none."""
    return float(values.mean()) if values.null_count() < values.len() else float("nan")  # type: ignore[arg-type]


def _source(name: str, flavour: str) -> str:
    """The source a registered estimator is read from in ``flavour``'s comparison."""
    spec = CONFIDENCE_FUNCTIONS[name]
    return spec.source or flavour
