"""Generations made elsewhere: reading them from a file (a ``generations`` source of the model registry)
and writing a run's generations as the JSONL schema (docs/backends.md §9).

Formats (:data:`saltbench.core.vocabulary.IMPORT_FORMATS`): ``salt_cache`` — the authors' release's
generation cache; ``jsonl`` — the documented JSONL schema any harness can write, and the export's format;
``inspect`` — inspect_ai evaluation logs (an optional extra). Each reader returns
:class:`ImportedResponse` objects; :func:`to_record` turns one into the generation record a backend would have
written. Matching the responses to the dataset rows and writing the generations tables is the import stage's
(:mod:`saltbench.stages.imports`).
"""

from __future__ import annotations

from pathlib import Path

from saltbench.core.vocabulary import IMPORT_FORMATS, ImportFormat
from saltbench.inference.imports._inspect import STOP_REASONS, read_inspect_log
from saltbench.inference.imports._jsonl import (
    DRAW_KEYS,
    EXPORT_COLUMNS,
    FINISH_ALIASES,
    SCHEMA_KEYS,
    read_jsonl,
    write_jsonl,
)
from saltbench.inference.imports._response import (
    PAD_ID,
    REASONING_WRAPPERS,
    GenerationsFileError,
    ImportedResponse,
    string_ids,
    to_record,
)
from saltbench.inference.imports._salt_cache import CACHE_VERSION, read_salt_cache


def read_generations_file(path: str | Path, format: ImportFormat) -> list[ImportedResponse]:
    """Every response of the file ``path`` in ``format`` (structure checked; not yet matched to rows).

    Raises:
        ValueError: ``format`` is not one of :data:`~saltbench.core.vocabulary.IMPORT_FORMATS`.
        FileNotFoundError: no file at ``path``.
        GenerationsFileError: the file refused, naming where and why.
    """
    readers = {"salt_cache": read_salt_cache, "jsonl": read_jsonl, "inspect": read_inspect_log}
    if format not in IMPORT_FORMATS:
        raise ValueError(f"import format {format!r} is not one of {list(IMPORT_FORMATS)}")
    if not Path(path).is_file():
        raise FileNotFoundError(f"no generations file at {str(path)!r}")
    return readers[format](path)


__all__ = [
    "CACHE_VERSION",
    "DRAW_KEYS",
    "EXPORT_COLUMNS",
    "FINISH_ALIASES",
    "PAD_ID",
    "REASONING_WRAPPERS",
    "SCHEMA_KEYS",
    "STOP_REASONS",
    "GenerationsFileError",
    "ImportedResponse",
    "read_generations_file",
    "read_inspect_log",
    "read_jsonl",
    "read_salt_cache",
    "string_ids",
    "to_record",
    "write_jsonl",
]
