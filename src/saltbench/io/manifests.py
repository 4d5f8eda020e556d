"""Digest manifests of model directories, written when a directory is built and verified before any load.

A model directory (a converted GGUF model, a trained checkpoint) is a Snakemake ``directory()`` output:
Snakemake trusts it as long as the folder exists, and transformers loads whatever bytes are in it — 4096
bytes overwritten in the middle of ``model.safetensors`` load without complaint and decode different
tokens. :func:`write_manifest` records the size and SHA-256 of every file of the directory in
``saltbench_manifest.json`` together with the rule that builds it; :func:`verify_manifest` checks them all
and raises :class:`~saltbench.io.files.CorruptFileError` naming the first file that differs (missing,
another size, other bytes) and that rule. docs/reliability.md §2.1 has the measured cost (SmolLM2's 542 MB:
about a third of a second).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from saltbench.io.files import CorruptFileError, file_sha256, naming_write_errors

MANIFEST_NAME = "saltbench_manifest.json"
"""The manifest's file name inside the directory it describes."""
MANIFEST_FORMAT = 1


class CorruptDirectoryError(CorruptFileError):
    """A file of a manifest-carrying directory differs from its manifest; ``directory`` and ``rule`` say
    which directory and which rule rebuilds it."""

    def __init__(self, message: str, directory: Path, rule: str) -> None:
        super().__init__(message)
        self.directory = directory
        self.rule = rule


def write_manifest(directory: str | os.PathLike[str], *, rule: str) -> Path:
    """Write ``directory/saltbench_manifest.json``: ``{"format", "rule", "files": {relative path: {"size",
    "sha256"}}}`` over every regular file below ``directory`` (sorted; the manifest itself excluded).

    Call it last, when the directory is complete (before it is renamed into place).
    """
    root = Path(directory)
    files = {
        path.relative_to(root).as_posix(): {"size": path.stat().st_size, "sha256": file_sha256(path)}
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != MANIFEST_NAME
    }
    record = {"format": MANIFEST_FORMAT, "rule": rule, "files": files}
    target = root / MANIFEST_NAME
    with naming_write_errors(target):
        target.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return target


def read_manifest(directory: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The manifest of ``directory``, ``None`` if it has none; a damaged one is a ``CorruptFileError``."""
    path = Path(directory) / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("format") != MANIFEST_FORMAT or not isinstance(record.get("files"), dict):
            raise ValueError(f"format {record.get('format')!r} without a file list")
    except (ValueError, AttributeError, UnicodeDecodeError) as exc:
        raise CorruptFileError(f"{path}: not a saltbench manifest ({exc}); rebuild the directory") from None
    return record


def verify_manifest(directory: str | os.PathLike[str], *, required: bool = True) -> dict[str, Any] | None:
    """Check every file the manifest of ``directory`` lists: present, same size, same SHA-256.

    Returns the manifest, or ``None`` when there is none and ``required`` is false. Files not listed are
    ignored (the manifest lists what the build wrote).

    Raises:
        CorruptDirectoryError: a listed file is missing, has another size or other bytes, or (``required``)
            the directory has no manifest; the message names the file and the rule that rebuilds it.
    """
    root = Path(directory)
    record = read_manifest(root)
    if record is None:
        if required:
            raise CorruptDirectoryError(
                f"{root / MANIFEST_NAME}: missing, so the directory cannot be verified (built by an older "
                "saltbench, or not completely); rebuild it",
                root,
                "",
            )
        return None
    rule = str(record.get("rule", ""))
    hint = f"the rule {rule} rebuilds it" if rule else "rebuild it"
    for name, expected in record["files"].items():
        path = root / name
        problem = _problem(path, expected)
        if problem:
            raise CorruptDirectoryError(f"{path}: {problem}; {hint}", root, rule)
    return record


def _problem(path: Path, expected: dict[str, Any]) -> str:
    """What is wrong with ``path`` against its manifest entry (``""``: nothing)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "missing (the directory's manifest lists it)"
    if size != expected.get("size"):
        return f"{size} bytes where the manifest records {expected.get('size')} (truncated or appended to)"
    if file_sha256(path) != expected.get("sha256"):
        return "SHA-256 differs from the manifest (bytes changed after the directory was built)"
    return ""


def model_files_key(path: str | os.PathLike[str]) -> str:
    """What identifies the model files at ``path`` in a job's inputs key (docs/reliability.md §2.3): for a
    directory with a manifest, its recorded files (size and SHA-256 of each: exact, no file is read); for
    another directory or a file, the relative path, size and modification time (ns) of every file; ``""``
    where ``path`` names no file (a hub id, a served model's name). Another model at the same path gives
    another key."""
    root = Path(path)
    if root.is_dir():
        manifest = read_manifest(root)
        if manifest is not None:
            return json.dumps(manifest["files"], sort_keys=True)
        files = sorted(p for p in root.rglob("*") if p.is_file())
    elif root.is_file():
        root, files = root.parent, [root]
    else:
        return ""
    stats = [(p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    return json.dumps(stats)


def quarantine(directory: str | os.PathLike[str]) -> Path:
    """Move a directory that failed verification out of the way (to ``.{name}.corrupt-{time}`` beside it),
    so that the workflow sees its output missing and rebuilds it; kept for inspection, not deleted.

    Returns the new location (``directory`` itself if it no longer exists: another job moved it first).
    """
    root = Path(directory)
    target = root.with_name(f".{root.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    try:
        os.replace(root, target)
    except FileNotFoundError:
        return root
    return target


__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "CorruptDirectoryError",
    "model_files_key",
    "quarantine",
    "read_manifest",
    "verify_manifest",
    "write_manifest",
]
