"""Export a run's generations as the JSONL schema (docs/backends.md §9.2), so that they travel to other
tools — and come back: importing the file as a ``generations`` source (format ``jsonl``) gives the same
tables (:mod:`saltbench.stages.imports`).

Command line::

    python -m saltbench.stages.export OUT.jsonl data/generations/MODEL/STYLE/TASK.parquet [...]
    python -m saltbench.stages.export OUT.jsonl data/generations/MODEL        # every table below the folder

Each table is read and verified as a generations artifact (:func:`saltbench.io.read_table`); the lines follow
the tables in the order given (a folder's in sorted path order) and their rows in order.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from saltbench.inference.imports import write_jsonl

log = logging.getLogger(__name__)


def generations_files(paths: Sequence[str | Path]) -> list[Path]:
    """The generations tables named: files as given, a folder's ``*/*.parquet`` (style/task) in sorted
    order; ``FileNotFoundError`` naming a path that is neither."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob("*/*.parquet"))
            if not found:
                raise FileNotFoundError(f"no generations table (STYLE/TASK.parquet) below {str(path)!r}")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"no generations table or folder at {str(path)!r}")
    return files


def export_generations(paths: Sequence[str | Path], out: str | Path) -> int:
    """Write the generations tables ``paths`` (files or model folders, :func:`generations_files`) to the JSONL
    file ``out``; returns the number of lines written."""
    from saltbench.io import read_table

    frames = [read_table(path, "generations") for path in generations_files(paths)]
    return write_jsonl(pl.concat(frames, how="vertical"), out)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m saltbench.stages.export OUT.jsonl TABLE_OR_FOLDER [...]`` (module docstring)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the JSONL file to write")
    parser.add_argument(
        "tables", nargs="+", help="generations tables, or a model's folder data/generations/MODEL"
    )
    args = parser.parse_args(argv)
    lines = export_generations(args.tables, args.out)
    log.info("wrote %d responses to %s", lines, args.out)
    return 0


__all__ = ["export_generations", "generations_files", "main"]


if __name__ == "__main__":
    sys.exit(main())
