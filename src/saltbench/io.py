"""Parquet I/O with provenance metadata, atomic writes and corruption detection.

Every table the workflow writes goes through :func:`write_table`: the file is written to a temporary
name in the same folder and renamed into place, so an interrupted job never leaves a half-written
output that a rerun would trust. The Parquet key-value metadata carries the provenance record
(package version, git commit, config hash, seed, model id where relevant) as JSON under the key
``saltbench``. :func:`read_table` refuses files whose Parquet footer is damaged with a clear error.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl
from polars.exceptions import PanicException

import saltbench

PROVENANCE_KEY = "saltbench"


class CorruptFileError(RuntimeError):
    """A workflow file exists but cannot be read back (truncated or damaged)."""


@lru_cache(maxsize=1)
def git_commit() -> str:
    """The current git commit of the repository holding this package (``"unknown"`` outside git)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def config_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON form of a config mapping."""
    blob = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def provenance(**fields: Any) -> dict[str, Any]:
    """A provenance record: package version and git commit plus the caller's fields (seed, model, ...)."""
    record: dict[str, Any] = {"package": "saltbench", "version": saltbench.__version__, "git_commit": git_commit()}
    record.update({k: v for k, v in fields.items() if v is not None})
    return record


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_table(frame: pl.DataFrame, path: str | os.PathLike[str], meta: Mapping[str, Any] | None = None) -> None:
    """Write ``frame`` to Parquet atomically with ``meta`` stored as JSON provenance metadata.

    The bytes depend only on the frame and ``meta`` (no timestamps), so reruns are byte-identical.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(dict(meta or {}), sort_keys=True, default=str)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        frame.write_parquet(tmp, metadata={PROVENANCE_KEY: payload}, statistics=False)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_table(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a Parquet table; a damaged file raises :class:`CorruptFileError` naming it.

    A damaged page can make polars' Rust code panic: ``PanicException`` derives from ``BaseException``,
    not ``Exception``, so it is caught explicitly and reported the same way.
    """
    try:
        return pl.read_parquet(path)
    except FileNotFoundError:
        raise
    except (Exception, PanicException) as exc:  # ComputeError/OSError variants for bad footers and pages
        raise CorruptFileError(f"{path}: not a readable Parquet file ({exc}); delete it and rerun") from exc


def read_provenance(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The provenance record stored by :func:`write_table` (empty dict when absent)."""
    try:
        meta = pl.read_parquet_metadata(path)
    except (Exception, PanicException) as exc:
        raise CorruptFileError(f"{path}: cannot read Parquet metadata ({exc})") from exc
    raw = meta.get(PROVENANCE_KEY)
    return json.loads(raw) if raw else {}
