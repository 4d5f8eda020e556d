"""A run lock that holds: one running workflow per working directory, released by the kernel on death.

Snakemake's own lock (files in ``.snakemake/locks``) does not protect a run: every Snakemake 9 run ends by
deleting the whole folder, other runs' locks included (a ``snakemake <target>`` that finds nothing to
do removes a running workflow's lock), and a run killed with SIGKILL leaves its lock behind, so the next
run fails until ``--unlock``. This lock is an exclusive ``flock`` on ``.snakemake/saltbench-run.lock``,
taken in the Snakefile's ``onstart`` handler (real runs only: dry runs, ``--lint`` and ``--report``
never start jobs and never take it) and held by the main Snakemake process until it exits; the kernel
releases it when that process dies, however it dies. A second run that would start jobs in the same
directory stops with :class:`RunLockError` naming the process that holds the lock.

With this lock in place the profiles turn Snakemake's own lock off (``nolock: true``) and rerun
incomplete outputs (``rerun-incomplete: true``), so after a kill the same command resumes.
:func:`remove_stale_temporaries` then deletes the temporary files an interrupted writer left (safe:
nothing else can be writing while the lock is held).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

LOCK_FILE = Path(".snakemake") / "saltbench-run.lock"
"""The lock file, relative to the workflow's working directory."""

_held: dict[str, int] = {}  # resolved lock path -> open descriptor, kept for the life of the process


class RunLockError(RuntimeError):
    """Another workflow run holds the run lock of this directory."""


def acquire_run_lock(workdir: str | os.PathLike[str] = ".") -> Path:
    """Take the run lock of ``workdir`` for the rest of this process's life (idempotent in one process).

    Raises:
        RunLockError: another process holds it; the message names its process id.
    """
    path = (Path(workdir) / LOCK_FILE).resolve()
    if str(path) in _held:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise RunLockError(
            f"another workflow run (process {holder}) is running in {path.parent.parent}; "
            f"wait for it to finish or stop it. The lock ({path}) is released as soon as that process "
            "exits, also when it is killed."
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[str(path)] = fd
    return path


def remove_stale_temporaries(roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Delete the temporary files and folders interrupted writers left below ``roots``; return them.

    Patterns: ``.{name}.*.tmp`` (:func:`saltbench.io.write_table`) and ``.{name}.tmp-*`` / ``.{name}.old-*``
    folders (:func:`saltbench.inference.convert_gguf_to_safetensors`). Call it only while holding the run
    lock: then no writer of this workflow is running.
    """
    removed: list[Path] = []
    for root in map(Path, roots):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob(".*")):  # listed first: removing a folder must not disturb the walk
            name = path.name
            if not path.exists():  # inside a folder removed above
                continue
            if path.is_file() and name.endswith(".tmp"):
                path.unlink(missing_ok=True)
            elif path.is_dir() and (".tmp-" in name or ".old-" in name):
                shutil.rmtree(path, ignore_errors=True)
            else:
                continue
            removed.append(path)
    for path in removed:
        log.warning("removed %s, left by an interrupted run", path)
    return removed


def remove_stale_job_scripts(folder: str | os.PathLike[str] = ".snakemake/scripts") -> list[Path]:
    """Delete the job scripts Snakemake writes for ``script:`` rules (``tmp*.py``) and removes when a job
    ends — those of killed jobs stay behind. Call it only while holding the run lock, before any job
    starts."""
    root = Path(folder)
    removed = sorted(root.glob("tmp*.py")) if root.is_dir() else []
    for path in removed:
        path.unlink(missing_ok=True)
    if removed:
        log.info("removed %d job script(s) of interrupted jobs from %s", len(removed), root)
    return removed
