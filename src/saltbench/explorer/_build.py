"""Writing the explorer: the page, its script and style, a manifest and one data file per chunk.

Layout of the output folder (docs/explorer.md §2)::

    index.html  explorer.js  explorer.css      # the page (package data, copied verbatim)
    data/index.js                              # manifest: cells, confidence columns, run-wide lists
    data/chunk-0000.js ...                     # one per (model, style, task), loaded when picked
    data/interventions-0000.js ...             # one per (model, task) with interventions

Every data file is a script that hands its JSON to ``SALT_EXPLORER_LOADED(kind, id, data)``: the page loads
it with a ``<script>`` element, which works from ``file://`` (a browser refuses ``fetch`` of local files).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from saltbench.core.contracts import GENERATIONS, UNITS
from saltbench.io import read_table, table_columns, write_atomic

from ._chunks import ChunkKey, build_chunk, chunk_candidates, confidence_columns, orientation, run_lists
from ._chunks import token_vocabulary as _vocabulary
from ._interventions import intervention_chunk

logger = logging.getLogger(__name__)

ASSETS: tuple[str, ...] = ("index.html", "explorer.js", "explorer.css")
"""The page's files, shipped in ``saltbench/explorer/assets``."""

CALLBACK = "SALT_EXPLORER_LOADED"
"""The function every data file calls with its kind, id and JSON."""

GENERATION_COLUMNS: tuple[str, ...] = (
    "sample_id",
    "variant",
    "prompt",
    "text",
    "finish_reason",
    "error",
    "num_generated_tokens",
    "token_ids",
    "token_texts",
    "token_offsets",
    "chosen_logprob",
    "topk_ids",
    "topk_logprobs",
)
"""The columns of a generations file the explorer reads (not the entropies)."""


@dataclass(frozen=True)
class CellFiles:
    """The units and generations files of one (model, style, task)."""

    model: str
    style: str
    task: str
    units: str | os.PathLike[str]
    generations: str | os.PathLike[str]


@dataclass(frozen=True)
class ExplorerOptions:
    """What the page offers.

    Attributes:
        top_k: alternatives shown per token on hover (at most the generations' top-k).
        list_size: entries of each run-wide list ("confident and wrong", "unsure and right").
        default_column: the confidence column picked when the page opens (``{flavour}.{function}``).
        min_units: correct and incorrect units an estimate needs (``analysis.min_units``), shown in the
            page's notes.
    """

    top_k: int = 5
    list_size: int = 25
    default_column: str = "topk.mean_probability"
    min_units: int = 20

    def __post_init__(self) -> None:
        for name in ("top_k", "list_size", "min_units"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class ExplorerSummary:
    """What a build wrote: files, bytes and seconds."""

    path: Path
    n_chunks: int
    n_responses: int
    n_units: int
    n_files: int
    n_bytes: int
    seconds: float
    chunks: list[dict[str, Any]] = field(default_factory=list)


def script(kind: str, ident: int, data: Any) -> str:
    """The text of a data file: one call of :data:`CALLBACK` with compact JSON (``NaN`` is never written)."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return f"{CALLBACK}({json.dumps(kind)},{ident},{payload});\n"


def _read_units(path: str | os.PathLike[str]) -> pl.DataFrame:
    return read_table(path, UNITS)


def _read_generations(path: str | os.PathLike[str]) -> pl.DataFrame:
    available = set(table_columns(path))
    return read_table(path, GENERATIONS, columns=[c for c in GENERATION_COLUMNS if c in available])


def _copy_assets(out: Path) -> None:
    folder = resources.files("saltbench.explorer") / "assets"
    for name in ASSETS:
        with resources.as_file(folder / name) as source:
            shutil.copyfile(source, out / name)


def build_explorer(
    out: str | os.PathLike[str],
    cells: Sequence[CellFiles],
    datasets: Mapping[str, str | os.PathLike[str]],
    interventions: Sequence[str | os.PathLike[str]] = (),
    *,
    options: ExplorerOptions | None = None,
    meta: Mapping[str, Any] | None = None,
) -> ExplorerSummary:
    """Write the explorer of a run into the folder ``out`` (created; files already there are replaced).

    Args:
        out: the output folder (``results/explorer`` in the workflow).
        cells: the units and generations files of every (model, style, task).
        datasets: task -> dataset file (the references).
        interventions: the interventions files (``data/interventions/{model}/{task}.parquet``).
        options: what the page offers (:class:`ExplorerOptions`).
        meta: provenance shown in the page's footer (package version, commit, config hash ...).

    Memory: one model's generations at a time (for its token vocabulary) and one chunk.
    """
    start = time.perf_counter()
    options = options or ExplorerOptions()
    out = Path(out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    dataset_frames = {task: read_table(path, "dataset") for task, path in datasets.items()}
    written = _write_cell_chunks(out, cells, dataset_frames, options)
    manifest_interventions = _write_intervention_chunks(out, interventions, dataset_frames)
    columns = written.columns
    default = options.default_column
    manifest = {
        "meta": dict(meta or {}),
        "models": list(dict.fromkeys(c["model"] for c in written.chunks)),
        "styles": list(dict.fromkeys(c["style"] for c in written.chunks)),
        "tasks": list(dict.fromkeys(c["task"] for c in written.chunks)),
        "columns": [
            {"name": c, "flavour": c.split(".", 1)[0], "function": c.split(".", 1)[1], "sign": orientation(c)}
            for c in columns
        ],
        "default_column": default if default in columns else next(iter(columns), None),
        "top_k": options.top_k,
        "list_size": options.list_size,
        "min_units": options.min_units,
        "chunks": written.chunks,
        "interventions": manifest_interventions,
        "lists": run_lists(
            pl.concat(written.candidates) if written.candidates else pl.DataFrame(), options.list_size
        ),
    }
    write_atomic(out / "data" / "index.js", script("index", 0, manifest))
    _copy_assets(out)
    return _summary(out, written.chunks, seconds=time.perf_counter() - start)


@dataclass
class _WrittenCells:
    """What :func:`_write_cell_chunks` wrote: the manifest entry of each chunk, each chunk's candidates for
    the run-wide lists, and the confidence columns seen (first seen first)."""

    chunks: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[pl.DataFrame] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)


def _write_cell_chunks(
    out: Path,
    cells: Sequence[CellFiles],
    dataset_frames: Mapping[str, pl.DataFrame],
    options: ExplorerOptions,
) -> _WrittenCells:
    """One chunk file per cell, model by model (one model's generations in memory, for its vocabulary)."""
    written = _WrittenCells()
    by_model: dict[str, list[CellFiles]] = {}
    for cell in cells:
        by_model.setdefault(cell.model, []).append(cell)
    for model, model_cells in by_model.items():
        generations = {id(c): _read_generations(c.generations) for c in model_cells}
        vocabulary = _vocabulary(list(generations.values()))
        for cell in model_cells:
            units = _read_units(cell.units)
            written.columns += [c for c in confidence_columns(units) if c not in written.columns]
            ident = len(written.chunks)
            chunk = build_chunk(
                ChunkKey(model, cell.style, cell.task),
                units,
                generations[id(cell)],
                dataset_frames[cell.task],
                vocabulary,
                top_k=options.top_k,
            )
            name = f"data/chunk-{ident:04d}.js"
            write_atomic(out / name, script("chunk", ident, chunk))
            sample_ids = chunk["responses"]["sample_id"]
            response_of = {sample_id: index for index, sample_id in enumerate(sample_ids)}
            written.candidates.append(chunk_candidates(ident, units, response_of, options.list_size))
            written.chunks.append(
                {
                    "id": ident,
                    "file": name,
                    "model": model,
                    "style": cell.style,
                    "task": cell.task,
                    "responses": len(sample_ids),
                    "units": units.height,
                }
            )
        del generations
    return written


def _write_intervention_chunks(
    out: Path, interventions: Sequence[str | os.PathLike[str]], dataset_frames: Mapping[str, pl.DataFrame]
) -> list[dict[str, Any]]:
    """One data file per non-empty interventions file; their manifest entries."""
    entries: list[dict[str, Any]] = []
    for path in interventions:
        rows = read_table(path, "interventions")
        if rows.is_empty():
            continue
        model, task = rows["model"][0], rows["task"][0]
        ident = len(entries)
        name = f"data/interventions-{ident:04d}.js"
        chunk = intervention_chunk(model, task, rows, dataset_frames[task])
        write_atomic(out / name, script("interventions", ident, chunk))
        entries.append(
            {"id": ident, "file": name, "model": model, "task": task, "samples": sorted(chunk["samples"])}
        )
    return entries


def _summary(out: Path, chunks: list[dict[str, Any]], *, seconds: float) -> ExplorerSummary:
    """The summary of a written explorer folder, logged."""
    files = [p for p in out.rglob("*") if p.is_file()]
    summary = ExplorerSummary(
        path=out,
        n_chunks=len(chunks),
        n_responses=sum(chunk["responses"] for chunk in chunks),
        n_units=sum(chunk["units"] for chunk in chunks),
        n_files=len(files),
        n_bytes=sum(p.stat().st_size for p in files),
        seconds=seconds,
        chunks=chunks,
    )
    logger.info(
        "explorer: %d chunks, %d responses, %d units, %d files, %.1f MB in %.1f s",
        summary.n_chunks,
        summary.n_responses,
        summary.n_units,
        summary.n_files,
        summary.n_bytes / 1e6,
        summary.seconds,
    )
    return summary
