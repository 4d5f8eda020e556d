"""Units files read for the study's tables: a few columns at a time, one file at a time (bounded memory);
the model registry's raw entries (docs/architecture.md §1)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import polars as pl

from saltbench.core.contracts import confidence_column
from saltbench.io import read_table, table_columns


def iter_units(paths: Sequence[str | os.PathLike[str]], columns: Sequence[str]) -> Iterator[pl.DataFrame]:
    """Units tables one file at a time, reading only ``columns`` that the file has (bounded memory)."""
    for path in paths:
        available = set(table_columns(path))
        yield read_table(path, "units", columns=[c for c in columns if c in available])


def read_units(paths: Sequence[str | os.PathLike[str]], columns: Sequence[str]) -> pl.DataFrame:
    """Concatenation of :func:`iter_units` (diagonal: files lacking a column get nulls)."""
    frames = list(iter_units(paths, columns))
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def units_path_key(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(model, style) of a units file ``data/units/{model}/{style}/{task}.parquet``."""
    parent = os.path.dirname(os.fspath(path))
    return os.path.basename(os.path.dirname(parent)), os.path.basename(parent)


def units_by_task_style(paths: Sequence[str | os.PathLike[str]]) -> list[list[str | os.PathLike[str]]]:
    """The units files ``data/units/{model}/{style}/{task}.parquet`` grouped by (style, task): each group
    every model's files of one task and style, groups in the order of their first file.

    >>> units_by_task_style(["u/a/direct/dna.parquet", "u/a/cot/dna.parquet", "u/b/direct/dna.parquet"])
    [['u/a/direct/dna.parquet', 'u/b/direct/dna.parquet'], ['u/a/cot/dna.parquet']]
    """
    groups: dict[tuple[str, str], list[str | os.PathLike[str]]] = {}
    for path in paths:
        stem = os.path.splitext(os.path.basename(os.fspath(path)))[0]
        groups.setdefault((units_path_key(path)[1], stem), []).append(path)
    return list(groups.values())


def reasoning_tradeoff_from_unit_files(
    paths: Sequence[str | os.PathLike[str]],
    cmps: Sequence[Any],
    *,
    seed: int,
    confidence: str,
    flavour: str,
    **options: Any,
) -> pl.DataFrame:
    """The sample-level reasoning trade-off (:func:`saltbench.analysis.reasoning_tradeoff_units`) of each
    comparison, reading only the units files of its two conditions (bounded memory); each comparison draws
    its bootstrap with :func:`~saltbench.analysis.comparison_seed` ``(seed, comparison)``, as in one call
    for all.
    No comparison: the empty table (:func:`~saltbench.analysis.empty_tradeoff`)."""
    from saltbench.analysis import empty_tradeoff, reasoning_tradeoff_units

    columns = [
        "model",
        "style",
        "task",
        "sample_id",
        "granularity",
        "status",
        "is_correct",
        confidence_column(flavour, confidence),
    ]
    parts = []
    for comparison in cmps:
        wanted = {(comparison.model_a, comparison.style_a), (comparison.model_b, comparison.style_b)}
        units = read_units([p for p in paths if units_path_key(p) in wanted], columns)
        parts.append(
            reasoning_tradeoff_units(
                units,
                [comparison],
                seed=seed,
                confidence=confidence,
                flavour=flavour,
                **options,
            )
        )
    return pl.concat(parts) if parts else empty_tradeoff()


def registry_entries(path: str | os.PathLike[str]) -> Mapping[str, Any]:
    """The raw ``models`` mapping of a model registry YAML (keeps optional keys such as ``pair_with``)."""
    import yaml

    with open(path, encoding="utf-8") as handle:
        raw = yaml.safe_load(handle) or {}
    models = raw.get("models", {})
    if not isinstance(models, Mapping):
        raise ValueError(f"{path}: 'models' must be a mapping, got {type(models).__name__}")
    return models
