"""Helpers for the thin analysis / figure workflow scripts: named outputs, provenance, lazy units reading."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import polars as pl

from saltbench.analysis import TABLE_FORMATS, write_table_outputs
from saltbench.config import AnalysisConfig
from saltbench.core.contracts import Artifact, confidence_column
from saltbench.io import config_hash, provenance, read_table, table_columns
from saltbench.workflow.tables import table_output

logger = logging.getLogger(__name__)


ANALYSIS_DEFAULTS: Mapping[str, Any] = AnalysisConfig().to_dict()
"""Options of config ``analysis`` read by rules/analysis.smk and rules/figures.smk, with their defaults: the
fields of the configuration model's :class:`~saltbench.config.AnalysisConfig`, where each option is
described (docs/architecture.md §5)."""


def analysis_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """Config ``analysis`` resolved by the configuration model (validated, defaults filled in) as plain
    values; a wrong key or value raises ``ConfigError`` (a ``ValueError``) naming ``analysis.<key>``.

    ``config`` may be unvalidated (only its ``analysis`` block is read), so that the analysis rules also run
    under a Snakefile that does not validate its config (tests/analysis).
    """
    from saltbench.config import resolve_block

    return resolve_block("analysis", config.get("analysis"), AnalysisConfig).to_dict()


def table_outputs(name: str, report: Callable[..., Any], prefix: str = "") -> dict[str, Any]:
    """Named outputs ``{prefix}{fmt}`` = ``results/tables/{name}.{fmt}`` for the table's formats
    (:data:`saltbench.workflow.tables.TABLE_OUTPUTS`); the CSV, where the table has one, is wrapped in
    ``report``.

    ``report`` is Snakemake's ``report()`` (passed in, so this module does not import Snakemake); the
    caption is ``report/table_{name}.rst`` (path relative to the rules folder), category "Tables".
    """
    formats = table_output(name).formats
    files: dict[str, Any] = {f"{prefix}{fmt}": f"results/tables/{name}.{fmt}" for fmt in formats}
    if f"{prefix}csv" in files:
        files[f"{prefix}csv"] = report(
            files[f"{prefix}csv"],
            caption=f"../report/table_{name}.rst",
            category="Tables",
            labels={"table": name},
        )
    return files


def figure_outputs(name: str, category: str, report: Callable[..., Any]) -> dict[str, Any]:
    """Named outputs ``pdf``/``png`` = ``figures/{name}.{ext}``; the PNG is wrapped in ``report`` (caption
    ``report/figure_{name}.rst``, the given category)."""
    return {
        "pdf": f"figures/{name}.pdf",
        "png": report(
            f"figures/{name}.png",
            caption=f"../report/figure_{name}.rst",
            category=category,
            labels={"figure": name},
        ),
    }


def named_paths(output: Any, prefix: str = "") -> dict[str, str]:
    """``{format: path}`` from Snakemake named outputs ``{prefix}{format}`` (format in parquet, csv, tex)."""
    out = {}
    for key, value in output.items():
        if key.startswith(prefix) and key[len(prefix) :] in TABLE_FORMATS:
            out[key[len(prefix) :]] = str(value)
    if not out:
        names = list(output.keys())
        raise ValueError(f"output has no entries named {prefix!r} + one of {TABLE_FORMATS}: {names}")
    return out


def rule_meta(snakemake: Any, **fields: Any) -> dict[str, Any]:
    """Provenance for an analysis output: package version, git commit, rule name, params and their hash."""
    params = {k: v for k, v in snakemake.params.items()}
    return provenance(
        stage="analysis", rule=snakemake.rule, params=params, config_hash=config_hash(params), **fields
    )


def write_rule_tables(
    snakemake: Any, frame: pl.DataFrame, artifact: Artifact, prefix: str = "", **fields: Any
) -> None:
    """Write ``frame``, the table of ``artifact`` (:data:`saltbench.core.contracts.TABLES`), to the rule's
    named outputs ``{prefix}parquet/csv/tex`` with provenance.

    The outputs must be ``results/tables/{name}.*`` of the artifact ``table.{name}``: a table written under
    another table's name raises ``ValueError``, a frame that breaks the contract ``ContractError``.
    """
    paths = named_paths(snakemake.output, prefix)
    stems = {os.path.splitext(os.path.basename(p))[0] for p in paths.values()}
    if {f"table.{stem}" for stem in stems} != {artifact.name}:
        raise ValueError(f"{', '.join(paths.values())}: not the files of the {artifact.name!r} table")
    write_table_outputs(frame, paths, rule_meta(snakemake, **fields), artifact)
    logger.info("wrote %d rows to %s", frame.height, ", ".join(paths.values()))


def iter_units(paths: Sequence[str | os.PathLike[str]], columns: Sequence[str]) -> Iterator[pl.DataFrame]:
    """Units tables one file at a time, reading only ``columns`` that the file has (bounded memory)."""
    for path in paths:
        available = set(table_columns(path))
        yield read_table(path, "units", columns=[c for c in columns if c in available])


def read_units(paths: Sequence[str | os.PathLike[str]], columns: Sequence[str]) -> pl.DataFrame:
    """Concatenation of :func:`iter_units` (diagonal: files lacking a column get nulls)."""
    frames = list(iter_units(paths, columns))
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def units_path_key(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(model, style) of a units file ``data/units/{model}/{style}/{task}.parquet``."""
    parent = os.path.dirname(os.fspath(path))
    return os.path.basename(os.path.dirname(parent)), os.path.basename(parent)


def reasoning_tradeoff_from_unit_files(
    paths: Sequence[str | os.PathLike[str]],
    cmps: Sequence[Any],
    *,
    seed: int,
    confidence: str,
    flavour: str,
    **options: Any,
) -> pl.DataFrame:
    """The sample-level reasoning trade-off (:func:`saltbench.analysis.reasoning_tradeoff_units`) of each
    comparison, reading only the units files of its two conditions (bounded memory); comparison ``k`` draws
    its bootstrap with :func:`~saltbench.analysis.comparison_seed` ``(seed, k)``, as in one call for all.
    No comparison: the empty table (:func:`~saltbench.analysis.empty_tradeoff`)."""
    from saltbench.analysis import comparison_seed, empty_tradeoff, reasoning_tradeoff_units

    columns = [
        "model",
        "style",
        "task",
        "sample_id",
        "granularity",
        "status",
        "is_correct",
        confidence_column(flavour, confidence),
    ]
    parts = []
    for index, comparison in enumerate(cmps):
        wanted = {(comparison.model_a, comparison.style_a), (comparison.model_b, comparison.style_b)}
        units = read_units([p for p in paths if units_path_key(p) in wanted], columns)
        parts.append(
            reasoning_tradeoff_units(
                units,
                [comparison],
                seed=comparison_seed(seed, index),
                confidence=confidence,
                flavour=flavour,
                **options,
            )
        )
    return pl.concat(parts) if parts else empty_tradeoff()


def registry_entries(path: str | os.PathLike[str]) -> Mapping[str, Any]:
    """The raw ``models`` mapping of a model registry YAML (keeps optional keys such as ``pair_with``)."""
    import yaml

    with open(path, encoding="utf-8") as handle:
        raw = yaml.safe_load(handle) or {}
    models = raw.get("models", {})
    if not isinstance(models, Mapping):
        raise ValueError(f"{path}: 'models' must be a mapping, got {type(models).__name__}")
    return models
