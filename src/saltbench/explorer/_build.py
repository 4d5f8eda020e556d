"""Writing the explorer: the page, its script and style, a manifest and one data file per chunk.

Layout of the output folder (docs/explorer.md §2)::

    index.html  explorer.js  explorer.css      # the page (package data, copied verbatim)
    data/index.js                              # manifest: cells, confidence columns, eligibility
    data/chunk-0000.js ...                     # one per (model, style, task), loaded when picked
    data/interventions-0000.js ...             # one per (model, task) with interventions

Every data file is a script that hands its JSON to ``SALT_EXPLORER_LOADED(kind, id, data)``: the page loads
it with a ``<script>`` element, which works from ``file://`` (a browser refuses ``fetch`` of local files).

The build is split the way the workflow runs it (docs/explorer.md §2): :func:`build_model_part` writes the
chunks of one model into a part folder (one job per model); :func:`build_index` copies every part's chunks
and writes the interventions and the manifest (one cheap job). :func:`build_explorer` runs both in one
process and writes the same bytes.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from saltbench.confidence import estimator_family
from saltbench.core.contracts import GENERATIONS, UNITS
from saltbench.core.vocabulary import ALIGNMENTS
from saltbench.io import read_table, table_columns, write_atomic

from ._chunks import ChunkKey, build_chunk, confidence_columns, orientation
from ._chunks import token_vocabulary as _vocabulary
from ._interventions import intervention_chunk
from ._lists import list_candidates, task_lists

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
    metrics: str | os.PathLike[str] | None = None
    """The metrics stage's file of the cell (``results/metrics/...``): the page's summary header."""


@dataclass(frozen=True)
class ExplorerOptions:
    """What the page offers.

    Attributes:
        top_k: alternatives shown per token on hover (at most the generations' top-k).
        list_size: entries of each list ("confident and wrong", "unsure and right"; of a cell or a task).
        default_column: the confidence column picked when the page opens (``{flavour}.{function}``).
        min_units: correct and incorrect units a pooled estimate needs (``analysis.min_units``), shown in
            the page's notes.
        eligible_answered_share: a (model, style) whose share of answered responses is below it enters no
            estimate (``analysis.eligible_answered_share``, docs/metrics.md §10): marked "excluded" in the
            model picker, and the page does not open on it.
        min_model_units: correct and incorrect units a cell's estimate needs (``analysis.min_model_units``),
            said beside the cell's AUROC.
        alignment: the run's ``scoring.alignment`` (strict or dynamic, docs/evaluation.md §5–6), shown in
            every cell's summary.
    """

    top_k: int = 5
    list_size: int = 25
    default_column: str = "topk.mean_probability"
    min_units: int = 20
    eligible_answered_share: float = 0.5
    min_model_units: int = 10
    alignment: str = "strict"

    def __post_init__(self) -> None:
        for name in ("top_k", "list_size", "min_units"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.min_model_units < 0:  # 0: no per-cell floor (docs/metrics.md §10)
            raise ValueError(f"min_model_units must be >= 0, got {self.min_model_units!r}")
        if not 0 <= self.eligible_answered_share <= 1:
            raise ValueError(
                f"eligible_answered_share must be in [0, 1], got {self.eligible_answered_share!r}"
            )
        if self.alignment not in ALIGNMENTS:
            raise ValueError(f"alignment must be one of {list(ALIGNMENTS)}, got {self.alignment!r}")


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


PART_FILE = "part.json"
"""What a part folder says about its chunks (:func:`build_model_part`), read by :func:`build_index`."""

CANDIDATES_FILE = "candidates-{:04d}.parquet"
"""A chunk's candidates for the lists of every model on a task (:func:`.list_candidates`), in its part."""


def model_groups(cells: Sequence[CellFiles]) -> list[tuple[str, list[CellFiles], int]]:
    """The cells grouped by model, in first-seen order, each group with the id of its first chunk (the
    chunks are numbered in the order of ``cells``; a model's cells must be consecutive)."""
    groups: list[tuple[str, list[CellFiles], int]] = []
    for index, cell in enumerate(cells):
        if groups and groups[-1][0] == cell.model:
            groups[-1][1].append(cell)
        elif any(model == cell.model for model, _, _ in groups):
            raise ValueError(f"the cells of model {cell.model!r} are not consecutive (cell {index})")
        else:
            groups.append((cell.model, [cell], index))
    return groups


def build_explorer(
    out: str | os.PathLike[str],
    cells: Sequence[CellFiles],
    datasets: Mapping[str, str | os.PathLike[str]],
    interventions: Sequence[str | os.PathLike[str]] = (),
    *,
    options: ExplorerOptions | None = None,
    meta: Mapping[str, Any] | None = None,
) -> ExplorerSummary:
    """Write the explorer of a run into the folder ``out`` (created; files already there are replaced): the
    workflow's per-model jobs and its index job in one process, the same bytes (docs/explorer.md §2).

    Args:
        out: the output folder (``results/explorer`` in the workflow).
        cells: the units, generations (and metrics) files of every (model, style, task), a model's cells
            consecutive.
        datasets: task -> dataset file (the references).
        interventions: the interventions files (``data/interventions/{model}/{task}.parquet``).
        options: what the page offers (:class:`ExplorerOptions`).
        meta: provenance shown in the page's footer (package version, commit, config hash ...).

    Memory: one model's generations at a time (for its token vocabulary) and one chunk.
    """
    start = time.perf_counter()
    options = options or ExplorerOptions()
    Path(out).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(out).parent, prefix=".explorer-parts-") as folder:
        parts = []
        for _, model_cells, first in model_groups(cells):
            parts.append(Path(folder) / f"part-{first:04d}")
            build_model_part(parts[-1], model_cells, datasets, first_id=first, options=options)
        summary = build_index(out, parts, datasets, interventions, options=options, meta=meta)
    return _summary(Path(out), summary.chunks, seconds=time.perf_counter() - start)


def build_model_part(
    out: str | os.PathLike[str],
    cells: Sequence[CellFiles],
    datasets: Mapping[str, str | os.PathLike[str]],
    *,
    first_id: int,
    options: ExplorerOptions | None = None,
) -> dict[str, Any]:
    """One model's chunks, ``chunk-{id:04d}.js`` numbered from ``first_id`` in the order of ``cells``, and
    :data:`PART_FILE` (their manifest entries and confidence columns) in the folder ``out``: the job of one
    model (rule ``explorer_model``). Returns what :data:`PART_FILE` holds."""
    options = options or ExplorerOptions()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    models = sorted({cell.model for cell in cells})
    if len(models) > 1:
        raise ValueError(f"a part holds one model's cells, got {models}")
    generations = [_read_generations(c.generations) for c in cells]
    vocabulary = _vocabulary(generations)
    part: dict[str, Any] = {"first_id": first_id, "chunks": [], "columns": []}
    references: dict[str, pl.DataFrame] = {}
    for offset, (cell, generation) in enumerate(zip(cells, generations)):
        if cell.task not in references:
            references[cell.task] = read_table(datasets[cell.task], "dataset")
        units = _read_units(cell.units)
        part["columns"] += [c for c in confidence_columns(units) if c not in part["columns"]]
        metrics = read_table(cell.metrics, "metrics") if cell.metrics is not None else None
        key = ChunkKey(cell.model, cell.style, cell.task)
        chunk = build_chunk(
            key, units, generation, references[cell.task], vocabulary, top_k=options.top_k, metrics=metrics
        )
        ident = first_id + offset
        name = f"chunk-{ident:04d}.js"
        write_atomic(out / name, script("chunk", ident, chunk))
        statuses = chunk["responses"]["answer_status"]
        r_of = {sample: r for r, sample in enumerate(chunk["responses"]["sample_id"])}
        list_candidates(ident, units, r_of, options.list_size).write_parquet(
            out / CANDIDATES_FILE.format(ident)
        )
        part["chunks"].append(
            {
                "id": ident,
                "file": f"data/{name}",
                "model": cell.model,
                "style": cell.style,
                "task": cell.task,
                "responses": len(statuses),
                "answered": statuses.count("answered"),
                "units": units.height,
            }
        )
    write_atomic(out / PART_FILE, json.dumps(part, ensure_ascii=False, indent=1) + "\n")
    return part


def build_index(
    out: str | os.PathLike[str],
    parts: Sequence[str | os.PathLike[str]],
    datasets: Mapping[str, str | os.PathLike[str]],
    interventions: Sequence[str | os.PathLike[str]] = (),
    *,
    options: ExplorerOptions | None = None,
    meta: Mapping[str, Any] | None = None,
) -> ExplorerSummary:
    """The explorer folder ``out`` from the part folders of every model (:func:`build_model_part`, in
    chunk order): their chunks linked (:func:`_place`), the interventions and the manifest written, the
    page copied (rule ``explorer``: its work follows the cells and the interventions, not the units)."""
    start = time.perf_counter()
    options = options or ExplorerOptions()
    out = Path(out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    chunks: list[dict[str, Any]] = []
    columns: list[str] = []
    candidates: dict[int, Path] = {}
    for folder in map(Path, parts):
        part = json.loads((folder / PART_FILE).read_text(encoding="utf-8"))
        if part["first_id"] != len(chunks):
            raise ValueError(f"{folder}: its chunks start at {part['first_id']}, expected {len(chunks)}")
        for entry in part["chunks"]:
            _place(folder / Path(entry["file"]).name, out / entry["file"])
        chunks += part["chunks"]
        columns += [c for c in part["columns"] if c not in columns]
        candidates |= {c["id"]: folder / CANDIDATES_FILE.format(c["id"]) for c in part["chunks"]}
    manifest = _manifest(chunks, columns, options, meta)
    manifest["task_lists"] = _write_task_lists(out, candidates, manifest, options.list_size)
    manifest["interventions"] = _write_intervention_chunks(out, interventions, datasets)
    write_atomic(out / "data" / "index.js", script("index", 0, manifest))
    _copy_assets(out)
    return _summary(out, chunks, seconds=time.perf_counter() - start)


def _place(source: Path, target: Path) -> None:
    """``target`` with the bytes of ``source``: a hard link (no copy of a paper-size run's gigabytes; the
    parts are written by replacing files, never in place, so a link never changes under the page), or a
    copy where the file system has no links."""
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _manifest(
    chunks: list[dict[str, Any]], columns: list[str], options: ExplorerOptions, meta: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The manifest's cells, columns, options and eligibility (:func:`eligibility`)."""
    default = options.default_column
    entries = eligibility(chunks, options.eligible_answered_share)
    return {
        "meta": dict(meta or {}),
        "models": list(dict.fromkeys(c["model"] for c in chunks)),
        "styles": list(dict.fromkeys(c["style"] for c in chunks)),
        "tasks": list(dict.fromkeys(c["task"] for c in chunks)),
        "columns": [
            {
                "name": c,
                "flavour": c.split(".", 1)[0],
                "function": c.split(".", 1)[1],
                "sign": orientation(c),
                "family": estimator_family(c.split(".", 1)[1]),
            }
            for c in columns
        ],
        "default_column": default if default in columns else next(iter(columns), None),
        "top_k": options.top_k,
        "list_size": options.list_size,
        "min_units": options.min_units,
        "min_model_units": options.min_model_units,
        "eligible_answered_share": options.eligible_answered_share,
        "alignment": options.alignment,
        "eligibility": entries,
        "open": opening_cell(chunks, entries),
        "chunks": chunks,
    }


def eligibility(chunks: Sequence[Mapping[str, Any]], threshold: float) -> list[dict[str, Any]]:
    """Per (model, style), in roster order: its responses, answered responses, answered share (answered
    / responses over every task; 0 without responses) and whether it is eligible (share >= ``threshold``,
    ``analysis.eligible_answered_share``; docs/metrics.md §10)."""
    totals: dict[tuple[str, str], list[int]] = {}
    for chunk in chunks:
        total = totals.setdefault((chunk["model"], chunk["style"]), [0, 0])
        total[0] += chunk["responses"]
        total[1] += chunk["answered"]
    out = []
    for (model, style), (responses, answered) in totals.items():
        share = answered / responses if responses else 0.0
        out.append(
            {
                "model": model,
                "style": style,
                "responses": responses,
                "answered": answered,
                "share": round(share, 4),
                "eligible": share >= threshold,
            }
        )
    return out


def opening_cell(chunks: Sequence[Mapping[str, Any]], entries: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The cell the page opens on (docs/explorer.md §1): the eligible (model, style) with the highest
    answered share (ties: roster order), on its task with the most answered responses (ties: task order);
    without an eligible one, the first cell."""
    eligible = [e for e in entries if e["eligible"]]
    if not eligible:
        first = chunks[0] if chunks else {"model": "", "style": "", "task": ""}
        return {"m": first["model"], "s": first["style"], "t": first["task"]}
    best = max(eligible, key=lambda e: e["share"])  # max keeps the first of equals: roster order
    own = [c for c in chunks if (c["model"], c["style"]) == (best["model"], best["style"])]
    task = max(own, key=lambda c: c["answered"])["task"]
    return {"m": best["model"], "s": best["style"], "t": task}


def _write_task_lists(
    out: Path, candidates: Mapping[int, Path], manifest: Mapping[str, Any], n: int
) -> list[dict[str, Any]]:
    """One data file per (task, style), tasks then styles in the run's order (``data/lists-0000.js`` ...):
    the lists of every model on the task (:func:`~saltbench.explorer.task_lists`), from the candidates
    files of its cells only (memory: one task and style's candidates); their manifest entries."""
    eligible = [(e["model"], e["style"]) for e in manifest["eligibility"] if e["eligible"]]
    entries: list[dict[str, Any]] = []
    for task in manifest["tasks"]:
        for style in manifest["styles"]:
            cells = [c for c in manifest["chunks"] if (c["task"], c["style"]) == (task, style)]
            frames = [pl.read_parquet(candidates[c["id"]]) for c in cells]
            lists = task_lists(pl.concat(frames) if frames else pl.DataFrame(), cells, eligible, n)
            if (task, style) not in lists:
                continue
            ident = len(entries)
            name = f"data/lists-{ident:04d}.js"
            write_atomic(
                out / name, script("lists", ident, {"task": task, "style": style, **lists[(task, style)]})
            )
            entries.append({"id": ident, "file": name, "task": task, "style": style})
    return entries


def _write_intervention_chunks(
    out: Path, interventions: Sequence[str | os.PathLike[str]], datasets: Mapping[str, str | os.PathLike[str]]
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
        chunk = intervention_chunk(model, task, rows, read_table(datasets[task], "dataset"))
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
