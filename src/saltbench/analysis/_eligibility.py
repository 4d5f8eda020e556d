"""Which models and cells enter a pooled or compared estimate: one rule, applied before anything is pooled or
compared (docs/metrics.md §10).

* A **model and prompt style** is eligible when the share of its responses answered (generation health,
  pooled over tasks: ``Σ answered·responses / Σ responses``) is at least ``min_answered_share``
  (``analysis.eligible_answered_share``).
* A **cell** (model, style, task, granularity) of an eligible model enters a confidence estimate when the
  units an AUROC of the default confidence ranks there (:func:`~saltbench.analysis.auroc_unit_counts`)
  hold at least ``min_model_units`` correct and as many incorrect ones (``analysis.min_model_units``).
  Accuracy rows (precision, recall) need only an eligible model.

:func:`eligibility_table` states the rule's verdict on every cell, with its reason; :func:`eligible_metrics`,
:func:`eligible_units` and :func:`eligible_styles` apply it; :func:`exclusion_lines` names what it excluded,
for the findings page and the figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import polars as pl

from saltbench.core.metric_registry import metric_registry

CELL = ["model", "style", "task", "granularity"]
"""The columns that name a cell."""


def _answered_by_style(health: pl.DataFrame) -> pl.DataFrame:
    """``model, style, answered``: the answered share of each (model, style) over every task (the answered
    responses counted back from each task's share, so that one task's share comes back exactly)."""
    weight = pl.col("responses")
    return health.group_by("model", "style", maintain_order=True).agg(
        ((pl.col("answered") * weight).round(0).sum() / weight.sum()).alias("answered")
    )


def eligibility_table(
    health: pl.DataFrame,
    counts: pl.DataFrame,
    *,
    min_answered_share: float,
    min_model_units: int,
) -> pl.DataFrame:
    """One row per (model, style, task, granularity) of ``health`` × the granularities of ``counts``:
    ``answered`` (the model and style's share over every task), ``n_correct``, ``n_incorrect`` (0 where the
    cell has no scored unit), ``eligible_model``, ``eligible`` (the cell) and ``reason`` (empty when
    eligible; else what failed, with the numbers).

    Args:
        health: :func:`saltbench.analysis.generation_health` (model, style, task, responses, answered).
        counts: :func:`saltbench.analysis.auroc_unit_counts` (model, style, task, granularity, n_correct,
            n_incorrect).
        min_answered_share: ``analysis.eligible_answered_share``.
        min_model_units: ``analysis.min_model_units``.

    Example:
        >>> health = pl.DataFrame({"model": ["a", "b"], "style": "direct", "task": "dna",
        ...     "responses": [10, 10], "answered": [1.0, 0.0]})
        >>> counts = pl.DataFrame({"model": ["a", "b"], "style": "direct", "task": "dna",
        ...     "granularity": "atom", "n_correct": [40, 1], "n_incorrect": [5, 60]})
        >>> table = eligibility_table(health, counts, min_answered_share=0.5, min_model_units=10)
        >>> for row in table.select("model", "eligible", "reason").rows():
        ...     print(row)
        ('a', False, '40 correct and 5 incorrect units (fewer than 10 of either)')
        ('b', False, 'answered share 0.000 (below 0.5)')
    """
    granularities = counts.select(pl.col("granularity").cast(pl.String).unique(maintain_order=True))
    keys = (
        health.select("model", "style", "task").unique(maintain_order=True).join(granularities, how="cross")
    )
    n_units = counts.select(*(pl.col(c).cast(pl.String) for c in CELL), "n_correct", "n_incorrect")
    table = (
        keys.join(_answered_by_style(health), on=["model", "style"], how="left")
        .join(n_units, on=CELL, how="left")
        .with_columns(pl.col("n_correct", "n_incorrect").fill_null(0).cast(pl.Int64))
    )
    table = table.with_columns(eligible_model=pl.col("answered") >= min_answered_share).with_columns(
        eligible=pl.col("eligible_model") & (pl.min_horizontal("n_correct", "n_incorrect") >= min_model_units)
    )
    reasons = [
        f"answered share {answered:.3f} (below {min_answered_share:g})"
        if not model_ok
        else f"{n_correct} correct and {n_incorrect} incorrect units (fewer than {min_model_units} of either)"
        if not ok
        else ""
        for answered, n_correct, n_incorrect, model_ok, ok in table.select(
            "answered", "n_correct", "n_incorrect", "eligible_model", "eligible"
        ).iter_rows()
    ]  # one per cell: at most models x styles x tasks x granularities rows
    return table.with_columns(reason=pl.Series(reasons, dtype=pl.String)).sort(CELL, maintain_order=True)


def _accuracy_metrics() -> list[str]:
    """The registry's metrics of aspect ``accuracy`` (they need only an eligible model)."""
    return [name for name, spec in metric_registry().items() if spec.aspect == "accuracy"]


def eligible_metrics(metrics: pl.DataFrame, eligibility: pl.DataFrame) -> pl.DataFrame:
    """The rows of a metrics table that enter an estimate: accuracy rows of eligible models, every other row
    of eligible cells (docs/metrics.md §10). Cells the eligibility table does not know are dropped."""
    cells = eligibility.filter("eligible").select(CELL)
    models = eligibility.filter("eligible_model").select("model", "style").unique()
    accuracy = pl.col("metric").is_in(_accuracy_metrics())
    return pl.concat(
        [
            metrics.filter(accuracy).join(models, on=["model", "style"], how="semi"),
            metrics.filter(~accuracy).join(cells, on=CELL, how="semi"),
        ]
    )


def eligible_units(units: Iterable[pl.DataFrame], eligibility: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """Each units frame of ``units`` restricted to the eligible cells (one file at a time: bounded memory)."""
    cells = eligibility.filter("eligible").select(CELL)
    for frame in units:
        types = {c: frame.schema[c] for c in CELL}
        yield frame.join(cells.cast(types), on=CELL, how="semi")  # type: ignore[arg-type]


def eligible_styles(eligibility: pl.DataFrame) -> set[tuple[str, str]]:
    """The (model, style) pairs whose answered share passes the rule."""
    rows = eligibility.filter("eligible_model").select("model", "style").unique()
    return set(rows.iter_rows())


def mark_eligible(frame: pl.DataFrame, eligibility: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (a table with ``model`` and ``style`` columns) with a column ``eligible``: whether its model
    and style pass the answered-share rule (a pair the eligibility table does not know is not eligible)."""
    models = eligibility.group_by("model", "style").agg(pl.col("eligible_model").first().alias("eligible"))
    return frame.join(models, on=["model", "style"], how="left").with_columns(
        pl.col("eligible").fill_null(False)
    )


def excluded_models(eligibility: pl.DataFrame) -> pl.DataFrame:
    """``model, style, answered, reason``: one row per excluded (model, style), worst first."""
    return (
        eligibility.filter(~pl.col("eligible_model"))
        .group_by("model", "style", maintain_order=True)
        .agg(pl.col("answered", "reason").first())
        .sort("answered", "model", "style")
    )


def excluded_cells(eligibility: pl.DataFrame) -> pl.DataFrame:
    """The excluded cells of eligible models (too few correct or incorrect units), with their reasons."""
    return eligibility.filter(pl.col("eligible_model") & ~pl.col("eligible"))


def exclusion_lines(eligibility: pl.DataFrame) -> list[str]:
    """One sentence per excluded (model, style), then one that counts the excluded cells of eligible models
    per granularity; empty when nothing is excluded."""
    lines = [
        f"{model} ({style}): {reason}" for model, style, _, reason in excluded_models(eligibility).iter_rows()
    ]
    cells = excluded_cells(eligibility)
    if cells.height:
        per = cells.group_by("granularity", maintain_order=True).len().sort("granularity")
        counted = ", ".join(f"{n} {g}" for g, n in per.iter_rows())
        lines.append(f"cells of eligible models with too few correct or incorrect units: {counted}")
    return lines


__all__ = [
    "CELL",
    "eligibility_table",
    "eligible_metrics",
    "eligible_styles",
    "eligible_units",
    "excluded_cells",
    "mark_eligible",
    "excluded_models",
    "exclusion_lines",
]
