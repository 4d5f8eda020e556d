"""Kept copies of expensive outputs: a finished shard survives Snakemake deleting it (docs/reliability.md
§2.3).

When a *group* job fails — a workflow-managed server dies, one client of the group fails, a SLURM group job
runs past its time — Snakemake removes the outputs of *every* job of the group "since they might be
corrupted", the ones that finished too. saltbench writes every table atomically (an output exists only
complete), so those files were good: for the outputs that cost model time (generations, interventions) the
job that writes one also keeps a hard link to it, ``{folder}/.kept/{name}`` (no extra disk while the output
exists). The rerun of that job, before loading any model, restores the output from its kept copy when the
copy verifies (:func:`saltbench.io.read_table`) and was made from the same inputs and software (its
provenance field ``inputs_key`` equals the job's, :func:`saltbench.io.inputs_key`: settings, dataset rows,
model files, library versions, plugins); otherwise it computes the output and replaces the copy.

Only an output that *Snakemake* deleted comes back; one deleted by hand is computed again. A run's end
(:func:`finish_run`, the Snakefile's ``onerror`` handler) marks the kept copies whose outputs are missing —
Snakemake deleted them during that run — as restorable (``{folder}/.kept/{name}.restorable``); a run's
start (:func:`start_run`, ``onstart``) removes every kept copy whose output exists, and every unmarked one
(its output was deleted since the last run ended: by hand). During a run every remaining copy is one that
run may restore: marked, or written by the run itself (a job retried after its group failed).
``--forcerun`` on an output that exists therefore computes it again, too.

``python -m saltbench.workflow.kept list|purge [PATH...]`` lists the kept copies with their state, or
removes them (:func:`main`).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from saltbench.io import CorruptFileError, human_size, read_provenance, read_table

log = logging.getLogger(__name__)

KEPT_FOLDER = ".kept"
"""The folder, beside an output, that holds its kept copy."""

INPUTS_KEY = "inputs_key"
"""The provenance field of a kept output that names what it was computed from."""

RESTORABLE_SUFFIX = ".restorable"
"""The mark beside a kept copy, ``{name}.restorable``: Snakemake deleted its output during a run that failed
(:func:`finish_run`)."""

ROOTS = ("data",)
"""Where the workflow's kept copies live (below ``data/generations`` and ``data/interventions``)."""


def kept_path(output: str | os.PathLike[str]) -> Path:
    """Where the kept copy of ``output`` lives: ``{folder}/.kept/{name}`` (same file system: a hard link)."""
    path = Path(output)
    return path.parent / KEPT_FOLDER / path.name


def output_of(kept: str | os.PathLike[str]) -> Path:
    """The output a kept copy ``{folder}/.kept/{name}`` belongs to: ``{folder}/{name}``."""
    path = Path(kept)
    return path.parent.parent / path.name


def _mark(kept: Path) -> Path:
    """The restorable mark of the kept copy ``kept``."""
    return kept.with_name(kept.name + RESTORABLE_SUFFIX)


def _discard(kept: Path) -> None:
    """Remove a kept copy and its mark."""
    kept.unlink(missing_ok=True)
    _mark(kept).unlink(missing_ok=True)


def keep_output(output: str | os.PathLike[str]) -> Path:
    """Keep a copy of the finished ``output`` (a hard link; a copy where the file system has none), replacing
    an older copy and its mark; returns the copy's path."""
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
    _mark(kept).unlink(missing_ok=True)
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
        _discard(kept)
        return False
    if recorded != inputs_key:
        log.info(
            "kept copy %s was made from other inputs (settings, dataset rows, model files, library versions "
            "or plugins): computing again",
            kept,
        )
        _discard(kept)
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.restore.tmp")
    tmp.unlink(missing_ok=True)
    os.link(kept, tmp)
    os.replace(tmp, path)
    os.utime(path)  # newer than the job's inputs, as a freshly written output would be
    _mark(kept).unlink(missing_ok=True)
    log.info(
        "restored %s from its kept copy: Snakemake deleted it after a failed job, and the copy was made from "
        "the same inputs, model files, library versions and plugins (docs/reliability.md §2.3). To compute "
        "it again instead, delete it and rerun: an output deleted by hand is not restored",
        path,
    )
    return True


def kept_copies(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The kept copies ``paths`` name, sorted: a folder names every kept copy below it, an output its kept
    copy (if it has one), a kept copy itself; marks and temporary files are not copies."""
    found: set[Path] = set()
    for path in map(Path, paths):
        if path.is_dir():
            below = path.glob("*") if path.name == KEPT_FOLDER else path.glob(f"**/{KEPT_FOLDER}/*")
            found.update(below)
        elif path.parent.name == KEPT_FOLDER:
            found.add(path)
        else:
            found.add(kept_path(path))
    return sorted(
        p
        for p in found
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(RESTORABLE_SUFFIX)
    )


def copy_state(kept: str | os.PathLike[str]) -> str:
    """``"current"`` (its output exists: the copy is removed when the next run starts), ``"restorable"``
    (Snakemake deleted the output during a failed run: the next run of its job restores it, if made from
    the same inputs and software) or ``"dropped"`` (the output was deleted by hand: the next run removes the
    copy and computes the output)."""
    path = Path(kept)
    if output_of(path).exists():
        return "current"
    return "restorable" if _mark(path).exists() else "dropped"


def start_run(roots: Iterable[str | os.PathLike[str]] = ROOTS) -> list[Path]:
    """At the start of a real run (the Snakefile's ``onstart``): remove every kept copy under ``roots`` that
    is not restorable — its output exists, or was deleted by hand (no mark) — and every mark without a
    copy; returns the copies removed."""
    roots = list(roots)
    removed = [kept for kept in kept_copies(roots) if copy_state(kept) != "restorable"]
    for kept in removed:
        _discard(kept)
    for root in map(Path, roots):
        for mark in root.glob(f"**/{KEPT_FOLDER}/*{RESTORABLE_SUFFIX}") if root.is_dir() else ():
            if not mark.with_name(mark.name.removesuffix(RESTORABLE_SUFFIX)).exists():
                mark.unlink(missing_ok=True)
    return removed


def finish_run(roots: Iterable[str | os.PathLike[str]] = ROOTS) -> list[Path]:
    """At the end of a failed run (the Snakefile's ``onerror``): mark every kept copy under ``roots`` whose
    output is missing — Snakemake deleted it during this run — as restorable; returns the copies marked."""
    marked = [kept for kept in kept_copies(roots) if not output_of(kept).exists()]
    for kept in marked:
        _mark(kept).write_text(f"{output_of(kept)} was deleted by Snakemake after a failed job\n")
    return marked


def _count(copies: Sequence[Path]) -> str:
    """``'1 kept copy'``, ``'2 kept copies'``."""
    return f"{len(copies)} kept cop{'y' if len(copies) == 1 else 'ies'}"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m saltbench.workflow.kept list|purge [PATH...]`` (run from the workflow root): list the kept
    copies below ``PATH`` (folders, outputs or kept copies; default ``data``) with their state
    (:func:`copy_state`), size and output, or remove them (``purge``: the run lock is taken first, so
    nothing is purged while a run is going); returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m saltbench.workflow.kept",
        description="List or remove the kept copies of finished shards (docs/reliability.md §2.3).",
    )
    parser.add_argument("command", choices=("list", "purge"), help="list the kept copies, or remove them")
    parser.add_argument(
        "paths", nargs="*", default=list(ROOTS), help="folders, outputs or kept copies (default: data)"
    )
    args = parser.parse_args(argv)
    copies = kept_copies(args.paths)
    if args.command == "purge":
        from saltbench.workflow.runlock import RunLockError, acquire_run_lock

        try:
            acquire_run_lock()
        except RunLockError as exc:
            print(f"saltbench: {exc}", file=sys.stderr)
            return 1
        total = sum(p.stat().st_size for p in copies if not output_of(p).exists())
        for kept in copies:
            _discard(kept)
        print(f"removed {_count(copies)} ({human_size(total)} of disk not shared with an output)")
        return 0
    for kept in copies:
        print(f"{copy_state(kept):<10}  {human_size(kept.stat().st_size):>9}  {output_of(kept)}")
    print(f"{_count(copies)}, {sum(copy_state(p) == 'restorable' for p in copies)} restorable")
    return 0


__all__ = [
    "INPUTS_KEY",
    "KEPT_FOLDER",
    "RESTORABLE_SUFFIX",
    "ROOTS",
    "copy_state",
    "finish_run",
    "keep_output",
    "kept_copies",
    "kept_path",
    "main",
    "output_of",
    "restore_output",
    "start_run",
]


if __name__ == "__main__":
    sys.exit(main())
