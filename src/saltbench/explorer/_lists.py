"""The lists of every model on a task: "confident and wrong" and "unsure and right" (docs/explorer.md §1).

The page ranks the units of one cell from the cell's own data file; for every model on a task it reads one
small file per (task, style) instead of every model's cell (at paper size a cell's file is megabytes).

Exactness: the page filters by unit status (which wrong statuses count) and response status, then keeps
the ``n`` most confident wrong units and the ``n`` least confident correct ones. The top ``n`` of a union of
groups lies within the union of each group's top ``n``; so each model's job keeps, per (column, granularity,
unit status, response status), its top ``n`` (:func:`list_candidates`), and the index job keeps, per (task,
style) and group, the top ``n`` over all models and over the eligible ones (:func:`task_lists`). Values are
rounded to the page's four decimals before ranking, so the page's ranking of the rounded values and the
selection agree; ties are broken by chunk, response and unit, as in the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from saltbench.core.vocabulary import RESPONSE_STATUSES

from ._chunks import DIGITS, confidence_columns, orientation

ENTRY_FIELDS: tuple[str, ...] = (
    "chunk",
    "r",
    "sample_id",
    "unit_index",
    "status",
    "answer_status",
    "value",
    "response_unit",
    "reference_unit",
)
"""The fields of one list entry, in the order the page reads them."""

_GROUP = ["column", "granularity", "status", "answer_status"]
_TIES = ["chunk", "r", "unit_index"]


def list_candidates(chunk_id: int, units: pl.DataFrame, responses: Mapping[str, int], n: int) -> pl.DataFrame:
    """One cell's candidates: per confidence column, granularity, unit status and response status, the
    ``n`` units the lists could show — the most confident of each wrong status (incorrect, selective,
    redundant), the least confident correct ones — by the oriented value ``sign * round(value, 4)``
    (:func:`~saltbench.explorer.orientation`: higher = more confident). Units without a value are left
    out. ``responses``: ``sample_id -> r``."""
    columns = confidence_columns(units)
    keys = [
        "sample_id",
        "granularity",
        "unit_index",
        "status",
        "answer_status",
        "response_unit",
        "reference_unit",
    ]
    scored = units.filter(pl.col("status").cast(pl.String).is_in(RESPONSE_STATUSES)).select(
        *(
            pl.col(k).cast(pl.String) if k in ("granularity", "status", "answer_status") else pl.col(k)
            for k in keys
        ),
        *columns,
    )
    if scored.is_empty() or not columns:
        return _empty()
    signs = pl.DataFrame({"column": columns, "sign": [float(orientation(c)) for c in columns]})
    r_of = pl.DataFrame(
        {"sample_id": list(responses), "r": list(responses.values())},
        schema={"sample_id": pl.String, "r": pl.Int64},
    )
    long = (
        scored.unpivot(on=columns, index=keys, variable_name="column")
        .filter(pl.col("value").is_finite())
        .with_columns(pl.col("value").round(DIGITS))
        .join(signs, on="column")
        .join(r_of, on="sample_id")
        .with_columns(
            chunk=pl.lit(chunk_id, pl.Int64),
            unit_index=pl.col("unit_index").cast(pl.Int64),
            oriented=pl.col("value") * pl.col("sign"),
        )
    )
    return _top(long, n).select("column", "granularity", *ENTRY_FIELDS, "oriented")


def _top(frame: pl.DataFrame, n: int, by: Sequence[str] = ()) -> pl.DataFrame:
    """Per ``by`` and group: the ``n`` most confident wrong units and the ``n`` least confident correct ones
    (ties: chunk, response, unit)."""
    wrong = frame.filter(pl.col("status") != "correct")
    right = frame.filter(pl.col("status") == "correct")
    order = [*by, *_GROUP, "oriented", *_TIES]
    return pl.concat(
        [
            part.sort(order, descending=[False] * (len(by) + 4) + [desc] + [False] * 3)
            .group_by([*by, *_GROUP], maintain_order=True)
            .head(n)
            for part, desc in ((wrong, True), (right, False))
        ]
    )


def _empty() -> pl.DataFrame:
    schema = {"column": pl.String(), "granularity": pl.String()} | {
        "chunk": pl.Int64(),
        "r": pl.Int64(),
        "sample_id": pl.String(),
        "unit_index": pl.Int64(),
        "status": pl.String(),
        "answer_status": pl.String(),
        "value": pl.Float64(),
        "response_unit": pl.String(),
        "reference_unit": pl.String(),
        "oriented": pl.Float64(),
    }
    return pl.DataFrame(schema=schema)


def task_lists(
    candidates: pl.DataFrame, chunks: Sequence[Mapping[str, Any]], eligible: Sequence[tuple[str, str]], n: int
) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (task, style): ``{"samples": [...], "lists": {column: {granularity: [entry, ...]}}}``
    (:data:`ENTRY_FIELDS`; an entry's ``sample_id`` is its index in ``samples``), the union of
    the top ``n`` of each group over every model and over the eligible (model, style) pairs only (the page
    drops the others' entries when asked for eligible models, then ranks); entries by chunk, response and
    unit.
    ``candidates``: every cell's :func:`list_candidates`; ``chunks``: the manifest's chunk entries."""
    if candidates.is_empty():
        return {}
    cells = pl.DataFrame(
        {
            "chunk": [c["id"] for c in chunks],
            "model": [c["model"] for c in chunks],
            "style": [c["style"] for c in chunks],
            "task": [c["task"] for c in chunks],
        },
        schema={"chunk": pl.Int64, "model": pl.String, "style": pl.String, "task": pl.String},
    )
    framed = candidates.join(cells, on="chunk")
    pairs = pl.DataFrame(
        {"model": [m for m, _ in eligible], "style": [s for _, s in eligible]},
        schema={"model": pl.String, "style": pl.String},
    )
    top = pl.concat(
        [
            _top(framed, n, by=["task", "style"]),
            _top(framed.join(pairs, on=["model", "style"], how="semi"), n, by=["task", "style"]),
        ]
    )
    keys = ["task", "style", "column", "granularity", "chunk", "r", "unit_index"]
    top = top.unique(keys).sort(keys)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for (task, style), part in top.group_by("task", "style", maintain_order=True):
        samples = part["sample_id"].unique().sort()
        part = part.with_columns(
            sample_id=pl.col("sample_id").replace_strict(samples, pl.int_range(samples.len(), eager=True))
        )
        lists: dict[str, Any] = {}
        for (column, granularity), rows in part.group_by("column", "granularity", maintain_order=True):
            lists.setdefault(str(column), {})[str(granularity)] = [
                list(x) for x in rows.select(ENTRY_FIELDS).rows()
            ]
        out[(str(task), str(style))] = {"samples": samples.to_list(), "lists": lists}
    return out
