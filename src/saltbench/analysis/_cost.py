"""The measured extra cost of each estimator family (docs/confidence.md §Families): what a response costs
beyond its greedy answer, in tokens generated and tokens scored.

* ``single_pass`` — nothing: the token functions, CCP and the trace read the greedy answer's own tokens.
* ``samples`` — the draws (``data/draws``): the tokens generated for the ``n`` sampled answers of each
  response, ``Σ num_generated_tokens`` over its draws.
* ``second_pass`` — the second pass (``data/second_pass``): the prompt tokens scored (``Σ prompt_tokens``)
  and the reply tokens generated (``Σ n_tokens``) over every unit asked about, both kinds together.

Each is divided by the cell's greedy responses (the generation-health table's ``responses``), so the numbers
are per response of the study.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from saltbench.core.contracts import ESTIMATOR_COST_TABLE

COST_SCHEMA: Mapping[str, pl.DataType] = ESTIMATOR_COST_TABLE.columns
"""Columns of :func:`estimator_cost` (the contract :data:`saltbench.core.contracts.ESTIMATOR_COST_TABLE`)."""

Cell = tuple[str, str, str]
"""(model, style, task)."""


def _family_rows(
    family: str, responses: Mapping[Cell, int], sums: Mapping[Cell, tuple[float, float, int]]
) -> list[dict[str, object]]:
    """One row per cell of ``sums`` (generated, scored token sums), per greedy response of the cell (the
    number of distinct responses asked about where the health table lacks the cell)."""
    rows = []
    for (model, style, task), (generated, scored, asked) in sums.items():
        n = responses.get((model, style, task)) or asked
        rows.append(
            {
                "model": model,
                "style": style,
                "task": task,
                "family": family,
                "responses": n,
                "extra_generated_tokens": generated / n if n else float("nan"),
                "extra_scored_tokens": scored / n if n else float("nan"),
            }
        )
    return rows


def estimator_cost(
    health: pl.DataFrame,
    draws: Mapping[Cell, pl.DataFrame] | None = None,
    second_pass: Mapping[Cell, pl.DataFrame] | None = None,
) -> pl.DataFrame:
    """Extra tokens per response of each family, per model × style × task (module docstring).

    Args:
        health: the generation-health table (``model``, ``style``, ``task``, ``responses``): every cell gets
            a ``single_pass`` row with 0 extra tokens.
        draws: each cell's draws (``sample_id``, ``num_generated_tokens``); absent when the run has none.
        second_pass: each cell's second-pass rows (``sample_id``, ``prompt_tokens``, ``n_tokens``).

    Returns:
        :data:`COST_SCHEMA`, sorted by model, style, task and family (in the vocabulary's order).

    Example:
        >>> h = pl.DataFrame({"model": ["m"], "style": ["direct"], "task": ["dna"], "responses": [2]})
        >>> d = pl.DataFrame({"sample_id": ["a", "a", "b"], "num_generated_tokens": [10, 12, 8]})
        >>> estimator_cost(h, {("m", "direct", "dna"): d})["extra_generated_tokens"].to_list()
        [0.0, 15.0]
    """
    responses = {
        (r["model"], r["style"], r["task"]): int(r["responses"]) for r in health.iter_rows(named=True)
    }
    rows = [
        {"model": m, "style": s, "task": t, "family": "single_pass", "responses": n}
        | {"extra_generated_tokens": 0.0, "extra_scored_tokens": 0.0}
        for (m, s, t), n in responses.items()
    ]
    draw_sums = {
        cell: (float(frame["num_generated_tokens"].sum()), 0.0, frame["sample_id"].n_unique())
        for cell, frame in (draws or {}).items()
    }
    pass_sums = {
        cell: (
            float(frame["n_tokens"].sum()),
            float(frame["prompt_tokens"].sum()),
            frame["sample_id"].n_unique(),
        )
        for cell, frame in (second_pass or {}).items()
    }
    rows += _family_rows("samples", responses, draw_sums)
    rows += _family_rows("second_pass", responses, pass_sums)
    if not rows:
        return pl.DataFrame(schema=dict(COST_SCHEMA))
    order = {"single_pass": 0, "samples": 1, "second_pass": 2}
    return (
        pl.DataFrame(rows, schema=dict(COST_SCHEMA), orient="row")
        .with_columns(pl.col("family").replace_strict(order, default=3, return_dtype=pl.Int64).alias("_f"))
        .sort("model", "style", "task", "_f")
        .drop("_f")
    )


def family_costs(cost: pl.DataFrame | None) -> dict[str, tuple[float, float]]:
    """Mean over cells of each family's extra (generated, scored) tokens per response, from the
    :func:`estimator_cost` table (``{}`` without one)."""
    if cost is None or cost.is_empty():
        return {}
    means = cost.group_by("family", maintain_order=True).agg(
        pl.col("extra_generated_tokens").mean(), pl.col("extra_scored_tokens").mean()
    )
    return {
        r["family"]: (r["extra_generated_tokens"], r["extra_scored_tokens"])
        for r in means.iter_rows(named=True)
    }
