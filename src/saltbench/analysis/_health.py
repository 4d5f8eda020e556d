"""Generation health: what each model's responses hold, before anything is read into them
(docs/reasoning.md §3).

One row per (model, style, task), from the response columns of the units tables: the number of responses;
the share of each answer status — ``answered`` (a fenced answer), ``truncated`` (the budget ran out before a
complete answer: inside the reasoning or the answer), ``no_fence`` (ended without a fenced answer),
``error`` (an error row); the mean completion and reasoning tokens per response; the budget and how much of
it a response used on average; the share that stopped at the budget. With draws (``inference.samples``,
docs/generation.md §7) the cell also counts its sampled answers: ``draws_expected`` (``n`` × responses, for a
model the run asks draws of; 0 otherwise), ``draws`` (rows present), ``draw_errors`` (error rows) and
``draws_answered`` (the share of draws with a fenced answer; NaN without draws).

A model whose every answer was cut off shows up in the accuracy tables as "precision 0" beside the others;
here it shows up as truncated, and :func:`thin_models` names every (model, style) whose estimates rest on
fewer than ``min_answered`` answered responses, for the findings page and the report.

The second pass (docs/confidence.md §8) adds its replies' counts: ``second_pass_replies`` and one count per
status, ``second_pass_ok`` … ``second_pass_no_true_false`` (:func:`second_pass_counts`; all 0 where no
second pass was asked) — an unparsable verbalized reply is counted here, never read as 0 or 1.
"""

from __future__ import annotations

from collections.abc import Collection

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


DRAW_HEALTH_COLUMNS: dict[str, pl.DataType] = {
    "draws_expected": pl.Int64(),
    "draws": pl.Int64(),
    "draw_errors": pl.Int64(),
    "draws_answered": pl.Float64(),
}
"""The health table's draw counts (module docstring), after the response columns."""


def generation_health(
    units: pl.DataFrame,
    draws: pl.DataFrame | None = None,
    *,
    n_draws: int = 0,
    draw_models: Collection[str] = (),
    second_pass: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The health table of ``units`` (at least :data:`RESPONSE_COLUMNS`; any granularity, each response
    counted once). ``budget`` is the largest ``max_new_tokens`` of the cell's responses (one budget per
    model, style and task); ``budget_used`` is NaN where it is unknown (0). ``draws``: one row per draw of
    the models ``draw_models`` (``model, style, task, answer_status``, the draw's status as a response's),
    ``n_draws`` draws asked per prompt; without them the draw counts are 0 (:func:`draw_counts`).
    ``second_pass``: the second-pass rows with ``model, style, task, status`` (:func:`second_pass_counts`;
    ``None``: none asked).

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
    table = draw_counts(table, draws, n_draws=n_draws, draw_models=draw_models)
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
            *DRAW_HEALTH_COLUMNS.keys(),
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


def draw_counts(
    health: pl.DataFrame, draws: pl.DataFrame | None, *, n_draws: int, draw_models: Collection[str]
) -> pl.DataFrame:
    """``health`` (``model, style, task, responses`` per cell) with :data:`DRAW_HEALTH_COLUMNS`:
    ``draws_expected = n_draws × responses`` for a model of ``draw_models`` (0 otherwise), and per cell of
    ``draws`` (one row per draw, ``model, style, task, answer_status``) the rows present, the error rows and
    the share answered (NaN without draws).

    Example:
        >>> health = pl.DataFrame({"model": ["m"], "style": ["direct"], "task": ["dna"], "responses": [2]})
        >>> draws = pl.DataFrame({"model": "m", "style": "direct", "task": "dna",
        ...     "answer_status": ["answered", "answered", "error", "no_fence", "answered"]})
        >>> counted = draw_counts(health, draws, n_draws=3, draw_models=["m"])
        >>> counted.select(*DRAW_HEALTH_COLUMNS.keys()).row(0)
        (6, 5, 1, 0.6)
    """
    status = pl.col("answer_status").cast(pl.String)
    if draws is None:
        draws = pl.DataFrame(schema={**dict.fromkeys(_CELL, pl.String()), "answer_status": pl.String()})
    counts = draws.group_by(_CELL).agg(
        pl.len().cast(pl.Int64).alias("draws"),
        (status == "error").sum().cast(pl.Int64).alias("draw_errors"),
        (status == "answered").mean().cast(pl.Float64).alias("draws_answered"),
    )
    asked = pl.col("model").is_in(list(draw_models))
    return health.join(counts, on=_CELL, how="left").with_columns(
        draws_expected=pl.when(asked).then(pl.col("responses") * n_draws).otherwise(0).cast(pl.Int64),
        draws=pl.col("draws").fill_null(0),
        draw_errors=pl.col("draw_errors").fill_null(0),
        draws_answered=pl.col("draws_answered").fill_null(float("nan")),
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
    "DRAW_HEALTH_COLUMNS",
    "RESPONSE_COLUMNS",
    "SECOND_PASS_COUNTS",
    "draw_counts",
    "generation_health",
    "second_pass_counts",
    "thin_models",
]
