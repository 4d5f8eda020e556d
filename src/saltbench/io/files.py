"""Files the workflow writes: atomic writes, write errors that name the file, digests.

* :func:`write_atomic` writes bytes or text under a temporary name in the target's folder and renames it
  into place, so a killed job or a full disk never leaves a half-written output that a rerun would trust.
* :func:`naming_write_errors` turns an ``OSError`` of writing (disk full, quota, read-only file system,
  permission, file too large) into :class:`OutputWriteError`, whose message names the output and the free
  space of its file system (docs/reliability.md §2.2): ``OSError: [Errno 28] No space left on device`` alone
  names neither.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG})
"""``errno`` values :func:`naming_write_errors` explains: no space, quota, read-only, permission, size."""


class CorruptFileError(RuntimeError):
    """A workflow file exists but cannot be trusted: truncated, damaged, of another kind, or not ours."""


class OutputWriteError(OSError):
    """An output could not be written; the message names it and the free space where it was going.

    ``errno`` and ``filename`` are those of the underlying error, so ``except OSError`` still catches it.
    """


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of a file's bytes (read in blocks, ``hashlib.file_digest``)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def human_size(size: int) -> str:
    """A byte count for people: ``1536`` → ``"1.5 KiB"``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def free_space(path: str | os.PathLike[str]) -> str:
    """``"<free> free of <total>"`` on the file system holding ``path`` (its nearest existing parent)."""
    probe = Path(path).absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        usage = shutil.disk_usage(probe)
    except OSError as exc:
        return f"free space unknown ({exc.strerror or exc})"
    return f"{human_size(usage.free)} free of {human_size(usage.total)}"


@contextlib.contextmanager
def naming_write_errors(path: str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, a write ``OSError`` of :data:`WRITE_ERRNOS` becomes :class:`OutputWriteError`:
    ``cannot write <path>: <reason> (<free> free of <total> on its file system)``.

    >>> with naming_write_errors("/no/out.csv"):
    ...     raise OSError(28, "No space left on device")
    Traceback (most recent call last):
    ...
    saltbench.io.files.OutputWriteError: [Errno 28] cannot write /no/out.csv: No space left on device (...)
    """
    try:
        yield
    except OutputWriteError:
        raise
    except OSError as exc:
        if exc.errno not in WRITE_ERRNOS:
            raise
        reason = exc.strerror or os.strerror(exc.errno)
        detail = f" (file {exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        raise OutputWriteError(
            exc.errno, f"cannot write {path}: {reason}{detail} ({free_space(path)} on its file system)"
        ) from exc


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` (``str``: UTF-8) to ``path`` through a temporary sibling renamed into place.

    The folder is created if needed; the file gets the usual ``0o666 & ~umask`` mode. On any error the
    temporary file is removed and ``path`` is left as it was; a write error is an :class:`OutputWriteError`
    naming ``path`` (:func:`naming_write_errors`).
    """
    target = Path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    with naming_write_errors(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


__all__ = [
    "WRITE_ERRNOS",
    "CorruptFileError",
    "OutputWriteError",
    "file_sha256",
    "free_space",
    "human_size",
    "naming_write_errors",
    "write_atomic",
]
