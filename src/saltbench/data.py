"""Dataset frames: our generators, and the authors' reproduction data (docs/tasks.md §8).

A dataset frame has the columns ``sample_id, task, variant, input, reference`` (``variant``: the Code
variant or the Words subject, null otherwise). Frames loaded from the paper data also carry
``source_task`` (the legacy class name stored upstream) and, for Words Collection, ``vocabulary`` (the
row's ``subject_set``; for ``numbers`` rows upstream stores the reference tokens there).
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow.ipc as ipc

from saltbench.core.paper import PAPER_FOLDERS, PAPER_ROWS
from saltbench.core.seeds import derive_seed
from saltbench.tasks import CODE_VARIANTS, get_task
from saltbench.tasks.base import dataset_frame
from saltbench.tasks.code import CODE_VARIANT_LEGACY

if TYPE_CHECKING:
    from saltbench.config import DatasetsConfig

log = logging.getLogger(__name__)


def _read_arrow_folder(folder: Path) -> list[dict[str, Any]]:
    files = sorted(folder.glob("data-*.arrow"))
    if not files:
        raise FileNotFoundError(f"{folder}: no data-*.arrow file (expected a HF save_to_disk folder)")
    rows: list[dict[str, Any]] = []
    for file in files:
        with open(file, "rb") as fh:
            rows.extend(ipc.open_stream(fh).read_all().to_pylist())
    return rows


def _vocabulary(value: Any) -> list[str]:
    if isinstance(value, str):
        parsed = ast.literal_eval(value)
        return [str(v) for v in parsed]
    return [str(v) for v in value]


def load_paper_task(path: str | Path, task: str) -> pl.DataFrame:
    """Load one task's reproduction folder as a dataset frame (sample ids ``paper-{task}-{i:05d}``)."""
    folder = Path(path) / PAPER_FOLDERS[task]
    raw = _read_arrow_folder(folder)
    expected = PAPER_ROWS[task]
    if len(raw) != expected:
        log.warning("%s: %d rows, the authors' release has %d", folder, len(raw), expected)
    rows: list[dict[str, Any]] = []
    for i, rec in enumerate(raw):
        row: dict[str, Any] = {
            "sample_id": f"paper-{task}-{i:05d}",
            "task": task,
            "variant": None,
            "input": rec["input"],
            "reference": rec["reference"],
            "source_task": rec["task"],
        }
        if task == "code":
            legacy = rec.get("variant") or rec["task"]
            if legacy in CODE_VARIANTS:
                row["variant"] = legacy
            elif legacy in CODE_VARIANT_LEGACY:
                row["variant"] = CODE_VARIANT_LEGACY[legacy]
            else:
                raise ValueError(f"{folder} row {i}: cannot infer the Code variant from task {legacy!r}")
        elif task == "words":
            row["variant"] = rec["subject"]
            row["vocabulary"] = _vocabulary(rec["subject_set"])
        rows.append(row)
    return dataset_frame(rows)


def load_paper_datasets(path: str | Path, tasks: tuple[str, ...] | None = None) -> dict[str, pl.DataFrame]:
    """The authors' reproduction data as our dataset frames, keyed by task slug.

    Args:
        path: folder holding ``DNA_dataset``, ``Code_dataset``, ... (docs/tasks.md §8.1).
        tasks: subset of task slugs to load (default: all six).
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"paper data folder {str(root)!r} does not exist")
    return {t: load_paper_task(root, t) for t in (tasks or tuple(PAPER_FOLDERS))}


def build_dataset(datasets: DatasetsConfig, seed: int, task: str) -> pl.DataFrame:
    """The dataset frame of ``task`` for the ``datasets`` block of a validated workflow config.

    ``datasets.source: generated`` calls the task generator with a seed derived from the master ``seed``
    and the task slug; ``paper`` loads the reproduction rows (optionally the first ``n_samples``).
    """
    n = datasets.samples_for(task)
    if datasets.source == "paper":
        if datasets.paper_path is None:
            raise ValueError("datasets.paper_path: required when datasets.source is 'paper'")
        frame = load_paper_task(datasets.paper_path, task)
        return frame if n is None else frame.head(n)
    if n is None:
        raise ValueError(f"datasets.n_samples: a sample count for task {task!r} is required")
    params = dict(datasets.params.get(task, {}))
    return get_task(task).generate(n, derive_seed("dataset", seed, task), **params)


__all__ = ["PAPER_FOLDERS", "PAPER_ROWS", "build_dataset", "load_paper_datasets", "load_paper_task"]
