"""Kept copies of expensive outputs: a finished shard survives Snakemake deleting it (docs/reliability.md
§2.3).

When a *group* job fails — a workflow-managed server dies, one client of the group fails, a SLURM group job
runs past its time — Snakemake removes the outputs of *every* job of the group "since they might be
corrupted", the ones that finished too. saltbench writes every table atomically (an output exists only
complete), so those files were good: for the outputs that cost model time (generations, interventions) the
job that writes one also keeps a hard link to it, ``{folder}/.kept/{name}`` (no extra disk while the output
exists). The rerun of that job, before loading any model, restores the output from its kept copy when the
copy verifies (:func:`saltbench.io.read_table`) and was made from the same inputs (its provenance field
``inputs_key`` equals the job's); otherwise it computes the output and replaces the copy.

Every real run starts by pruning (:func:`prune_kept`): a kept copy whose output exists is removed, so a copy
only ever outlives the run that wrote it when Snakemake deleted its output. A rerun forced on an output that
exists (``--forcerun``) therefore computes it again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from saltbench.io import CorruptFileError, read_provenance, read_table

log = logging.getLogger(__name__)

KEPT_FOLDER = ".kept"
"""The folder, beside an output, that holds its kept copy."""

INPUTS_KEY = "inputs_key"
"""The provenance field of a kept output that names what it was computed from."""


def kept_path(output: str | os.PathLike[str]) -> Path:
    """Where the kept copy of ``output`` lives: ``{folder}/.kept/{name}`` (same file system: a hard link)."""
    path = Path(output)
    return path.parent / KEPT_FOLDER / path.name


def keep_output(output: str | os.PathLike[str]) -> Path:
    """Keep a copy of the finished ``output`` (a hard link; a copy where the file system has none), replacing
    an older copy; returns the copy's path."""
    path, kept = Path(output), kept_path(output)
    kept.parent.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_name(f".{kept.name}.link.tmp")  # removed at start if a kill leaves it
    tmp.unlink(missing_ok=True)
    try:
        os.link(path, tmp)
    except OSError:
        import shutil

        shutil.copyfile(path, tmp)
    os.replace(tmp, kept)
    return kept


def restore_output(output: str | os.PathLike[str], *, artifact: str, inputs_key: str) -> bool:
    """Put ``output`` back from its kept copy if the copy verifies as an ``artifact`` table and its
    ``inputs_key`` provenance equals ``inputs_key``; ``False`` (and nothing changed but a damaged or stale
    copy removed) otherwise."""
    path, kept = Path(output), kept_path(output)
    if not kept.exists():
        return False
    try:
        read_table(kept, artifact)
        recorded = read_provenance(kept).get(INPUTS_KEY)
    except CorruptFileError as exc:
        log.warning("kept copy not used: %s", exc)
        kept.unlink(missing_ok=True)
        return False
    if recorded != inputs_key:
        log.info("kept copy %s was made from other inputs: computing again", kept)
        kept.unlink(missing_ok=True)
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.restore.tmp")
    tmp.unlink(missing_ok=True)
    os.link(kept, tmp)
    os.replace(tmp, path)
    os.utime(path)  # newer than the job's inputs, as a freshly written output would be
    log.info("restored %s from its kept copy (written by an earlier run of this job)", path)
    return True


def prune_kept(roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Remove every kept copy under ``roots`` whose output exists; returns what was removed."""
    removed = []
    for root in roots:
        for kept in Path(root).glob(f"**/{KEPT_FOLDER}/*"):
            output = kept.parent.parent / kept.name
            if kept.is_file() and output.exists():
                kept.unlink(missing_ok=True)
                removed.append(kept)
    return removed


__all__ = ["INPUTS_KEY", "KEPT_FOLDER", "keep_output", "kept_path", "prune_kept", "restore_output"]
