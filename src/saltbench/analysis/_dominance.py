"""Which confidence function dominates each uncertainty aspect (calibration, ranking, rejection)?

A *cell* is one (model, style, task, granularity, flavour). In every cell the confidence estimators of every
family are compared (docs/metrics.md §11): the token functions of the flavour, CCP where the flavour is its
source (``topk``), and the estimators of a source independent of the flavour — the draws, the second pass, the
trace — which join each flavour's cells of the same model, style, task and granularity (a cell without any
flavour's rows keeps their source as its flavour). They are compared on the aspect's metric
(:data:`~saltbench.core.metric_registry.ASPECT_METRICS`: calibration = ECE of the calibrated confidence, lower
is better; ranking = pooled AUROC, higher is better; rejection = AURC, lower is better — not PRR, which on
pooled binary units is 2·AUROC − 1 and would repeat the ranking aspect; each metric's direction is its
registry entry's). Functions whose value is NaN in a cell do not compete there, and rejection is compared only
where the function's AUROC is defined (units of both classes: otherwise every ranking has AURC 0 or 1).

* :func:`dominance_cells` — the winner of every cell and its margin to the runner-up.
* :func:`dominance` — per aspect × granularity × flavour × estimator (with its family): how often it
  wins, its share of the cells, its mean margin when it wins, and its mean rank.

Ties: functions within ``atol`` of the best value share the win; each gets credit ``1/k`` for a
``k``-way tie, and the margin of a tied cell is 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from saltbench.confidence import CONFIDENCE_FUNCTIONS, estimator_family
from saltbench.core.contracts import DOMINANCE_CELLS_TABLE, DOMINANCE_TABLE
from saltbench.core.metric_registry import metric_spec
from saltbench.core.vocabulary import CALIBRATION_METHODS, FLAVOURS

from ._common import ASPECT_METRICS, METRICS_SCHEMA, Aspect, nan_for_null, require_columns

CELL_KEYS: tuple[str, ...] = ("model", "style", "task", "granularity", "flavour")

CELLS_SCHEMA: Mapping[str, pl.DataType] = DOMINANCE_CELLS_TABLE.columns
"""Columns of :func:`dominance_cells` (the contract
:data:`saltbench.core.contracts.DOMINANCE_CELLS_TABLE`)."""

SUMMARY_SCHEMA: Mapping[str, pl.DataType] = DOMINANCE_TABLE.columns
"""Columns of :func:`dominance` (the contract :data:`saltbench.core.contracts.DOMINANCE_TABLE`)."""


def _function_order(name: str) -> int:
    names = list(CONFIDENCE_FUNCTIONS)
    return names.index(name) if name in names else len(names)


def _families(names: pl.Expr) -> pl.Expr:
    """The family of each estimator name (:func:`saltbench.confidence.estimator_family`)."""
    return names.map_elements(estimator_family, return_dtype=pl.String)


def across_families(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with every row of a source independent of the flavour (draws, second pass, trace) repeated in
    each flavour's cell of its model, style, task and granularity (module docstring); a cell with no
    flavour's rows keeps them under their own source.

    >>> m = pl.DataFrame({"model": ["m"] * 3, "style": ["direct"] * 3, "task": ["dna"] * 3,
    ...     "granularity": ["atom"] * 3, "flavour": ["topk", "full", "draws"],
    ...     "confidence": ["perplexity", "perplexity", "agreement"]})
    >>> across_families(m).select("flavour", "confidence").rows()
    [('topk', 'perplexity'), ('full', 'perplexity'), ('topk', 'agreement'), ('full', 'agreement')]
    """
    token = rows.filter(pl.col("flavour").is_in(FLAVOURS))
    other = rows.filter(~pl.col("flavour").is_in(FLAVOURS))
    if other.is_empty():
        return rows
    base = [k for k in CELL_KEYS if k != "flavour"]
    cells = token.select(*base, "flavour").unique(maintain_order=True)
    joined = other.drop("flavour").join(cells, on=base, how="inner", nulls_equal=True).select(rows.columns)
    alone = other.join(cells.select(base).unique(), on=base, how="anti", nulls_equal=True)
    return pl.concat([token, joined, alone])


def _aspect_rows(metrics: pl.DataFrame, aspect: Aspect, calibration: str) -> pl.DataFrame:
    """The rows an aspect compares: its metric, defined, per (cell, function).

    Rejection rows are kept only where the same function's pooled AUROC is defined, i.e. where the
    cell's units are neither all correct nor all incorrect: there every ranking has the same AURC (0 or
    1), so the functions would tie by construction, not by merit.
    """
    metric = ASPECT_METRICS[aspect]
    cal = calibration if aspect == "calibration" else "none"
    rows = metrics.filter(
        (pl.col("metric") == metric)
        & (pl.col("calibration") == cal)
        & pl.col("confidence").is_not_null()
        & pl.col("value").is_finite()
    )
    rows = across_families(rows)
    if aspect != "rejection":
        return rows
    ranked = (
        _aspect_rows(metrics, "ranking", calibration)
        .select(*CELL_KEYS, "confidence")
        .unique(maintain_order=True)
    )
    return rows.join(ranked, on=[*CELL_KEYS, "confidence"], how="semi", nulls_equal=True)


def dominance_cells(
    metrics: pl.DataFrame,
    *,
    calibration: str = "zscore_sigmoid",
    aspects: tuple[Aspect, ...] = ("calibration", "ranking", "rejection"),
    atol: float = 1e-12,
) -> pl.DataFrame:
    """The winning confidence function of every cell, for each aspect.

    Args:
        metrics: concatenated metrics tables (:data:`~saltbench.analysis._common.METRICS_SCHEMA`).
        calibration: calibration method whose ECE defines the calibration aspect.
        aspects: which aspects to analyse.
        atol: values within ``atol`` of the best count as tied winners.

    Returns:
        One row per aspect × cell (:data:`CELLS_SCHEMA`): ``winner`` (first tied winner in paper order),
        ``winners`` (all tied winners joined by ``"+"``), ``n_tied``, ``best_value``, ``runner_up`` (best
        non-winning function, null if none), ``runner_up_value``, ``margin`` (``|best - runner-up|``: 0 for
        ties, NaN when only one function is defined) and ``n_functions`` (functions defined in the cell).

    Example:
        >>> cell = {"model": "m", "style": "direct", "task": "dna", "granularity": "atom", "flavour": "topk",
        ...         "calibration": "zscore_sigmoid", "metric": "ece", "ci_low": 0.0, "ci_high": 1.0,
        ...         "n_units": 100, "n_responses": 10}
        >>> values = {"mean_probability": 0.10, "perplexity": 0.05}
        >>> m = pl.DataFrame([{**cell, "confidence": c, "value": v} for c, v in values.items()],
        ...                  schema=dict(METRICS_SCHEMA))
        >>> row = dominance_cells(m, aspects=("calibration",)).row(0, named=True)
        >>> row["winner"], round(row["margin"], 6)
        ('perplexity', 0.05)
    """
    require_columns(metrics, METRICS_SCHEMA, "metrics")
    if calibration not in CALIBRATION_METHODS:
        raise ValueError(f"calibration must be one of {CALIBRATION_METHODS}, got {calibration!r}")
    bad = [a for a in aspects if a not in ASPECT_METRICS]
    if bad:
        raise ValueError(f"aspects must be drawn from {tuple(ASPECT_METRICS)}, got {bad}")
    if not atol >= 0:
        raise ValueError(f"atol must be >= 0, got {atol!r}")
    rows: list[dict[str, object]] = []
    for aspect in aspects:
        metric = ASPECT_METRICS[aspect]
        sign = 1.0 if metric_spec(metric).lower_is_better else -1.0
        sub = _aspect_rows(metrics, aspect, calibration)
        grouped = sub.group_by(list(CELL_KEYS), maintain_order=True).agg("confidence", "value")
        for rec in grouped.iter_rows(named=True):
            names = list(rec["confidence"])
            values = np.asarray(rec["value"], dtype=np.float64)
            # One value per function (duplicates averaged).
            uniq = sorted(set(names), key=_function_order)
            vals = np.array([values[[n == u for n in names]].mean() for u in uniq])
            signed = sign * vals
            best = signed.min()
            tied = np.abs(signed - best) <= atol
            winners = [u for u, t in zip(uniq, tied) if t]
            others = np.flatnonzero(~tied)
            if others.size:
                j = others[np.argmin(signed[others])]
                runner, runner_value, margin = uniq[j], float(vals[j]), float(abs(signed[j] - best))
            else:
                runner, runner_value = None, float("nan")
                margin = 0.0 if len(winners) > 1 else float("nan")
            rows.append(
                {
                    "aspect": aspect,
                    "metric": metric,
                    **{k: rec[k] for k in CELL_KEYS},
                    "winner": winners[0],
                    "winner_family": estimator_family(winners[0]),
                    "winners": "+".join(winners),
                    "n_tied": len(winners),
                    "best_value": float(sign * best),
                    "runner_up": runner,
                    "runner_up_value": runner_value,
                    "margin": margin,
                    "n_functions": len(uniq),
                }
            )
    return pl.DataFrame(rows, schema=dict(CELLS_SCHEMA))


def dominance(
    metrics: pl.DataFrame,
    *,
    calibration: str = "zscore_sigmoid",
    aspects: tuple[Aspect, ...] = ("calibration", "ranking", "rejection"),
    atol: float = 1e-12,
) -> pl.DataFrame:
    """How often each confidence estimator wins, per aspect × granularity × flavour, across families
    (module docstring; ``family`` names each estimator's).

        For every aspect, granularity and flavour, over the ``n_cells`` cells (model × style × task) where at
        least one function is defined, and for every function defined in at least one of them:

        * ``wins`` — number of cells won (a ``k``-way tie gives ``1/k`` to each winner);
        * ``win_share`` — ``wins / n_cells``; the shares of one group sum to 1;
        * ``mean_margin`` — mean margin to the runner-up over the cells the function wins (0 for tied wins;
          NaN if it never wins or no runner-up exists);
        * ``mean_rank`` — mean rank among the estimators defined in a cell (1 = best; ties get the minimum
      rank);
        * ``mean_value`` — mean metric value over the cells where the function is defined.

        Sorted by aspect, granularity, flavour and decreasing ``wins``.
    """
    cells = dominance_cells(metrics, calibration=calibration, aspects=aspects, atol=atol)
    if cells.is_empty():
        return pl.DataFrame(schema=dict(SUMMARY_SCHEMA))
    group = ["aspect", "metric", "granularity", "flavour"]
    credit = (
        cells.with_columns(pl.col("winners").str.split("+").alias("confidence"))
        .explode("confidence")
        .with_columns((1.0 / pl.col("n_tied")).alias("credit"))
        .group_by([*group, "confidence"], maintain_order=True)
        .agg(pl.col("credit").sum().alias("wins"), pl.col("margin").mean().alias("mean_margin"))
    )
    n_cells = cells.group_by(group, maintain_order=True).agg(pl.len().cast(pl.Int64).alias("n_cells"))
    # Ranks and mean values over all defined functions.
    ranked = []
    for aspect in aspects:
        metric = ASPECT_METRICS[aspect]
        sub = _aspect_rows(metrics, aspect, calibration)
        if sub.is_empty():
            continue
        signed = pl.col("value") if metric_spec(metric).lower_is_better else -pl.col("value")
        per_fn = sub.group_by([*CELL_KEYS, "confidence"], maintain_order=True).agg(pl.col("value").mean())
        ranked.append(
            per_fn.with_columns(
                pl.lit(aspect).alias("aspect"),
                pl.lit(metric).alias("metric"),
                signed.rank("min").over(list(CELL_KEYS)).cast(pl.Float64).alias("rank"),
            )
            .group_by([*group, "confidence"], maintain_order=True)
            .agg(pl.col("rank").mean().alias("mean_rank"), pl.col("value").mean().alias("mean_value"))
        )
    ranks = pl.concat(ranked)
    out = (
        ranks.join(credit, on=[*group, "confidence"], how="left")
        .join(n_cells, on=group, how="left")
        .with_columns(pl.col("wins").fill_null(0.0), _families(pl.col("confidence")).alias("family"))
        .with_columns((pl.col("wins") / pl.col("n_cells")).alias("win_share"))
    )
    order = {a: i for i, a in enumerate(aspects)}
    out = out.with_columns(
        pl.col("aspect").replace_strict(order, return_dtype=pl.Int64).alias("_a"),
        pl.col("granularity")
        .replace_strict({"atom": 0, "line": 1, "generation": 2}, default=3, return_dtype=pl.Int64)
        .alias("_g"),
    ).sort(["_a", "_g", "flavour", "wins", "confidence"], descending=[False, False, False, True, False])
    return nan_for_null(out.select(list(SUMMARY_SCHEMA)).cast(pl.Schema(SUMMARY_SCHEMA)))
