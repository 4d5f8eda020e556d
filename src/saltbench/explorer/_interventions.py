"""The explorer's intervention data: per (model, task), each sample's prefix-corruption runs.

For each intervention row (docs/interventions.md §2, §6): the prefix given to the model with the spans of
its corrupted atoms, the forced continuation, and the next atom the model wrote beside the reference's, with
its status and confidence. The corrupted spans come from the same layout the intervention stage built the
prefix from (:class:`saltbench.interventions.AnswerLayout`: the reference's atoms as the evaluator splits
them, the corrupted ones substituted); a prefix that is not that layout's beginning gets no marks.
"""

from __future__ import annotations

import logging
from typing import Any

import polars as pl

from saltbench.interventions import AnswerLayout

from ._chunks import DIGITS

logger = logging.getLogger(__name__)

ROW_FIELDS: tuple[str, ...] = (
    "position",
    "n_atoms",
    "placement",
    "n_corrupted",
    "corrupted_positions",
    "corrupted_atoms",
    "prefix",
    "continuation",
    "next_atom",
    "reference_atom",
    "next_status",
    "next_correct",
    "next_confidence",
)
"""Columns of the interventions table the explorer shows, in its order."""


def corrupted_spans(
    layout: AnswerLayout, prefix: str, positions: list[int], atoms: list[str]
) -> list[list[int]] | None:
    """``[start, end)`` in ``prefix`` of each corrupted atom (1-based ``positions``), or ``None`` when the
    prefix is not the beginning of the substituted layout (then nothing is marked)."""
    changed = layout.substitute(dict(zip(positions, atoms)))
    if not changed.text.startswith(prefix):
        return None
    return [[changed.starts[p - 1], min(changed.ends[p - 1], len(prefix))] for p in positions]


def intervention_chunk(model: str, task: str, rows: pl.DataFrame, dataset: pl.DataFrame) -> dict[str, Any]:
    """``{"model", "task", "samples": {sample_id: [row, ...]}}``; each row holds :data:`ROW_FIELDS` and
    ``spans`` (:func:`corrupted_spans`), ordered by position, corrupted count and placement."""
    ordered = rows.sort("sample_id", "position", "n_corrupted", "placement", maintain_order=True).join(
        dataset.select("sample_id", "reference"), on="sample_id", how="left", maintain_order="left"
    )
    samples: dict[str, list[dict[str, Any]]] = {}
    unmarked = 0
    for (sample_id,), part in ordered.group_by("sample_id", maintain_order=True):
        first = part.row(0, named=True)
        layout = (
            AnswerLayout.from_reference(first["reference"], task, first["variant"])
            if first["reference"] is not None
            else None
        )
        entries = []
        for row in part.select(*ROW_FIELDS).iter_rows(named=True):
            spans = (
                corrupted_spans(layout, row["prefix"], row["corrupted_positions"], row["corrupted_atoms"])
                if layout is not None
                else None
            )
            unmarked += spans is None and row["n_corrupted"] > 0
            confidence = row["next_confidence"]
            row["next_confidence"] = (
                None if confidence is None or confidence != confidence else round(confidence, DIGITS)
            )
            entries.append({**row, "spans": spans})
        samples[str(sample_id)] = entries
    if unmarked:
        logger.warning("%s, %s: %d corrupted prefixes could not be marked", model, task, unmarked)
    return {"model": model, "task": task, "samples": samples}
