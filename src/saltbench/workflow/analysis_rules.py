"""Helpers for the thin analysis / figure workflow scripts: named outputs, provenance, lazy units reading."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from saltbench.analysis import TABLE_FORMATS, write_table_outputs
from saltbench.config import AnalysisConfig
from saltbench.core.contracts import Artifact
from saltbench.io import config_hash, provenance

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


def table_outputs(
    name: str, formats: Sequence[str], report: Callable[..., Any], prefix: str = ""
) -> dict[str, Any]:
    """Named outputs ``{prefix}{fmt}`` = ``results/tables/{name}.{fmt}`` for each of the table's ``formats``
    (its declaration's, :data:`saltbench.workflow.tables.TABLE_OUTPUTS`); the CSV, where the table has one,
    is wrapped in ``report``.

    ``report`` is Snakemake's ``report()`` (passed in, so this module does not import Snakemake); the
    caption is ``report/table_{name}.rst`` (path relative to the rules folder), category "Tables".
    """
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
