"""Generation health: what each model's responses hold, before anything is read into them
(docs/reasoning.md §3).

One row per (model, style, task), from the response columns of the units tables: the number of responses;
the share of each answer status — ``answered`` (a fenced answer), ``truncated`` (the budget ran out before a
complete answer: inside the reasoning or the answer), ``no_fence`` (ended without a fenced answer),
``error`` (an error row); the mean completion and reasoning tokens per response; the budget and how much of
it a response used on average; the share that stopped at the budget.

A model whose every answer was cut off shows up in the accuracy tables as "precision 0" beside the others;
here it shows up as truncated, and :func:`thin_models` names every (model, style) whose estimates rest on
fewer than ``min_answered`` answered responses, for the findings page and the report.

The second pass (docs/confidence.md §8) adds its replies' counts: ``second_pass_replies`` and one count per
status, ``second_pass_ok`` … ``second_pass_no_true_false`` (:func:`second_pass_counts`; all 0 where no
second pass was asked) — an unparsable verbalized reply is counted here, never read as 0 or 1.
"""

from __future__ import annotations

import polars as pl

from saltbench.core.vocabulary import ANSWER_STATUSES, SECOND_PASS_STATUSES

RESPONSE_COLUMNS: tuple[str, ...] = (
    "model",
    "style",
    "task",
    "sample_id",
    "answer_status",
    "finish_reason",
    "num_generated_tokens",
    "num_reasoning_tokens",
    "max_new_tokens",
)
"""The units table's columns the health table reads (one response's values repeat on its units)."""

_CELL = ["model", "style", "task"]

SECOND_PASS_COUNTS: tuple[str, ...] = (
    "second_pass_replies",
    *(f"second_pass_{status}" for status in SECOND_PASS_STATUSES),
)
"""The health table's second-pass columns (Int64 counts): every reply, then the replies of each status."""


def generation_health(units: pl.DataFrame, second_pass: pl.DataFrame | None = None) -> pl.DataFrame:
    """The health table of ``units`` (at least :data:`RESPONSE_COLUMNS`; any granularity, each response
    counted once). ``budget`` is the largest ``max_new_tokens`` of the cell's responses (one budget per
    model, style and task); ``budget_used`` is NaN where it is unknown (0). ``second_pass``: the second-pass
    rows with ``model, style, task, status`` (:func:`second_pass_counts`; ``None``: none asked).

    Example:
        >>> units = pl.DataFrame({
        ...     "model": ["m"] * 3, "style": ["cot"] * 3, "task": ["dna"] * 3, "sample_id": ["a", "a", "b"],
        ...     "answer_status": ["answered", "answered", "truncated"],
        ...     "finish_reason": ["eos", "eos", "length"],
        ...     "num_generated_tokens": [40, 40, 100], "num_reasoning_tokens": [30, 30, 100],
        ...     "max_new_tokens": [100, 100, 100]})
        >>> row = generation_health(units).row(0, named=True)
        >>> row["responses"], row["answered"], row["truncated"], row["budget_used"], row["at_budget"]
        (2, 0.5, 0.5, 0.7, 0.5)
    """
    responses = units.select(RESPONSE_COLUMNS).unique([*_CELL, "sample_id"], maintain_order=True)
    status = pl.col("answer_status").cast(pl.String)
    table = responses.group_by(_CELL, maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("responses"),
        *[(status == s).mean().alias(s) for s in ANSWER_STATUSES],
        pl.col("num_generated_tokens").mean().alias("mean_completion_tokens"),
        pl.col("num_reasoning_tokens").mean().alias("mean_reasoning_tokens"),
        (pl.col("finish_reason").cast(pl.String) == "length").mean().alias("at_budget"),
        pl.col("max_new_tokens").max().cast(pl.Int64).alias("budget"),
    )
    used = pl.col("mean_completion_tokens") / pl.col("budget")
    counts = second_pass_counts(second_pass if second_pass is not None else pl.DataFrame(schema=_REPLIES))
    return (
        table.with_columns(budget_used=pl.when(pl.col("budget") > 0).then(used).otherwise(float("nan")))
        .join(counts, on=_CELL, how="left", maintain_order="left")
        .with_columns(pl.col(SECOND_PASS_COUNTS).fill_null(0))
        .select(
            *_CELL,
            "responses",
            *ANSWER_STATUSES,
            "mean_completion_tokens",
            "mean_reasoning_tokens",
            "budget",
            "budget_used",
            "at_budget",
            *SECOND_PASS_COUNTS,
        )
        .sort(_CELL, maintain_order=True)
    )


_REPLIES = {"model": pl.String(), "style": pl.String(), "task": pl.String(), "status": pl.String()}


def second_pass_counts(replies: pl.DataFrame) -> pl.DataFrame:
    """One row per (model, style, task) of ``replies`` (second-pass rows with ``model, style, task,
    status``; docs/confidence.md §8): :data:`SECOND_PASS_COUNTS`, the number of replies and of each status.

    Example:
        >>> replies = pl.DataFrame({"model": ["m"] * 3, "style": ["direct"] * 3, "task": ["dna"] * 3,
        ...                         "status": ["ok", "unparsable", "ok"]})
        >>> row = second_pass_counts(replies).row(0, named=True)
        >>> row["second_pass_replies"], row["second_pass_ok"], row["second_pass_unparsable"]
        (3, 2, 1)
    """
    return replies.group_by(_CELL, maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("second_pass_replies"),
        *[
            (pl.col("status") == status).sum().cast(pl.Int64).alias(f"second_pass_{status}")
            for status in SECOND_PASS_STATUSES
        ],
    )


def thin_models(health: pl.DataFrame, min_answered: float) -> pl.DataFrame:
    """One row per (model, style) whose responses, over every task, are answered less often than
    ``min_answered``: ``model, style, responses, answered, truncated, no_fence, error`` (shares), worst
    first."""
    weight = pl.col("responses")
    pooled = health.group_by("model", "style", maintain_order=True).agg(
        weight.sum(),
        *[((pl.col(s) * weight).sum() / weight.sum()).alias(s) for s in ANSWER_STATUSES],
    )
    return pooled.filter(pl.col("answered") < min_answered).sort("answered", "model", "style")


__all__ = [
    "RESPONSE_COLUMNS",
    "SECOND_PASS_COUNTS",
    "generation_health",
    "second_pass_counts",
    "thin_models",
]
