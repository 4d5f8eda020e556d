"""Writing analysis tables as Parquet (with provenance), CSV and a booktabs LaTeX table."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import polars as pl

from saltbench.core.contracts import Artifact, ContractError
from saltbench.core.contracts import artifact as artifact_spec
from saltbench.io import write_atomic, write_table

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}

TABLE_FORMATS: tuple[str, ...] = ("parquet", "csv", "tex")


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters.

    Example:
        >>> latex_escape("auroc_pooled & 50%")
        'auroc\\\\_pooled \\\\& 50\\\\%'
    """
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _fmt(value: Any, digits: int) -> str:
    if value is None:
        return "--"
    if isinstance(value, float):
        return "--" if not math.isfinite(value) else f"{value:.{digits}f}"
    return latex_escape(str(value))


def _ci_groups(columns: list[str]) -> dict[str, tuple[str, str]]:
    """Columns with ``_ci_low``/``_ci_high`` partners (``value``/``estimate``: ``ci_low``/``ci_high``)."""
    groups = {}
    for c in columns:
        if f"{c}_ci_low" in columns and f"{c}_ci_high" in columns:
            groups[c] = (f"{c}_ci_low", f"{c}_ci_high")
    for c in ("value", "estimate", "accuracy"):
        if c in columns and "ci_low" in columns and "ci_high" in columns and c not in groups:
            groups[c] = ("ci_low", "ci_high")
            break
    return groups


def to_latex(frame: pl.DataFrame, *, digits: int = 3, merge_ci: bool = True) -> str:
    """A booktabs ``tabular`` of ``frame``: floats to ``digits`` decimals, NaN/null as ``--``.

    With ``merge_ci``, a column ``x`` with partners ``x_ci_low``/``x_ci_high`` (or ``value``/``estimate``/
    ``accuracy`` with ``ci_low``/``ci_high``) is printed as one cell ``x [low, high]``.
    """
    columns = frame.columns
    groups = _ci_groups(columns) if merge_ci else {}
    hidden = {c for pair in groups.values() for c in pair}
    shown = [c for c in columns if c not in hidden]
    numeric = {c for c in shown if frame.schema[c].is_numeric()}
    align = "".join("r" if c in numeric else "l" for c in shown)
    header = " & ".join(latex_escape(c) for c in shown) + r" \\"
    lines = [f"\\begin{{tabular}}{{{align}}}", "\\toprule", header, "\\midrule"]
    for row in frame.iter_rows(named=True):
        cells = []
        for c in shown:
            text = _fmt(row[c], digits)
            if c in groups and text != "--":
                lo, hi = (_fmt(row[k], digits) for k in groups[c])
                if lo != "--" and hi != "--":
                    text = f"{text} [{lo}, {hi}]"
            cells.append(text)
        lines.append(" & ".join(cells) + r" \\")
    lines += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(lines)


def write_table_outputs(
    frame: pl.DataFrame,
    paths: Mapping[str, str | os.PathLike[str]],
    meta: Mapping[str, Any] | None,
    artifact: str | Artifact,
    *,
    digits: int = 3,
) -> None:
    """Write ``frame``, the table of artifact ``artifact`` (:data:`saltbench.core.contracts.TABLES`), to
    each of
    ``paths`` (keys among :data:`TABLE_FORMATS`).

    The frame is checked against its artifact before anything is written: a frame that breaks the contract
    raises :class:`saltbench.core.contracts.ContractError` naming the file and the column, and no format is
    written. Parquet goes through :func:`saltbench.io.write_table` (atomic, provenance and the artifact in
    the metadata); CSV is rendered by polars (full precision, NaN as ``NaN``), TeX by :func:`to_latex`, both
    written atomically by :func:`saltbench.io.write_atomic`.
    """
    unknown = set(paths) - set(TABLE_FORMATS)
    if unknown:
        raise ValueError(f"paths keys must be drawn from {TABLE_FORMATS}, got {sorted(unknown)}")
    spec = artifact_spec(artifact)
    try:
        spec.validate(frame, f"{spec.name} frame")
    except ContractError as exc:
        raise ContractError(f"{paths.get('parquet', next(iter(paths.values()), ''))}: {exc}") from None
    for kind, path in paths.items():
        if kind == "parquet":
            write_table(frame, path, meta, spec)
        else:  # rendered in memory, then written atomically (a write error names the file)
            write_atomic(path, frame.write_csv() if kind == "csv" else to_latex(frame, digits=digits))
