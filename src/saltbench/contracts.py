"""The workflow's contracts in one place: shared names and the schema of every artifact a stage writes.

Names (each defined once in the package; stages, rules, the config schema and the analysis import them):

* prompt styles :data:`STYLES`, unit granularities :data:`GRANULARITIES`, unit statuses :data:`STATUSES`
  and the subset the model wrote, :data:`RESPONSE_STATUSES`; intervention placements :data:`PLACEMENTS`
  (:data:`PLACEMENT_LABELS` in tables);
* confidence columns follow one naming rule, :func:`confidence_column` (``"{flavour}.{function}"``, e.g.
  ``topk.mean_probability``), in the units table and the interventions table alike; the flavours and the
  functions themselves are defined beside their formulas in :mod:`saltbench.confidence`; the task slugs
  beside the task classes (:data:`saltbench.tasks.TASK_SLUGS`).

Artifacts (:data:`ARTIFACTS`): each has its required columns with exact dtypes, whether confidence columns
or other extra columns may follow, and cheap invariants between columns (``is_correct`` is ``status ==
"correct"``; the generated text is the concatenation of its token texts; per-token lists have one entry
per generated token). :func:`saltbench.io.write_table` refuses a frame that breaks its artifact's contract
and :func:`saltbench.io.read_table` refuses a file that does (see ``docs/architecture.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from saltbench.confidence import CONFIDENCE_NAMES, FLAVOURS

Granularity = Literal["atom", "line", "generation"]
GRANULARITIES: tuple[Granularity, ...] = ("atom", "line", "generation")
"""Unit granularities, finest first."""

Status = Literal["correct", "incorrect", "missing", "redundant", "selective"]
STATUSES: tuple[Status, ...] = ("correct", "incorrect", "missing", "redundant", "selective")
"""Status of a compared unit (docs/evaluation.md): a reference unit the response lacks is ``missing``."""

RESPONSE_STATUSES: tuple[Status, ...] = ("correct", "incorrect", "selective", "redundant")
"""Statuses of units the model wrote; ``missing`` reference units have no response text and no score."""

Style = Literal["direct", "cot"]
STYLES: tuple[Style, ...] = ("direct", "cot")
"""Prompt styles: answer directly, or reason step by step before the fenced answer."""

Placement = Literal["random", "local", "distant"]
PLACEMENTS: tuple[Placement, ...] = ("random", "local", "distant")
"""Where an intervention puts its ``c`` corrupted atoms among the ``k - 1`` prefix atoms.

See docs/interventions.md.
"""

PLACEMENT_LABELS: tuple[str, ...] = ("clean", *PLACEMENTS)
"""Values of the interventions table's ``placement`` column (``clean``: no corrupted atom, ``c = 0``)."""

METRIC_NAMES: tuple[str, ...] = (
    "precision", "recall", "ece", "mce", "brier", "auroc_pooled", "auroc_per_response", "prr", "aurc",
)  # fmt: skip
"""Metrics of the metrics table (docs/metrics.md)."""

LOWER_IS_BETTER: frozenset[str] = frozenset({"ece", "mce", "brier", "aurc"})
"""Metrics where smaller is better; every other metric (precision, recall, AUROC, PRR) is higher-better."""


def confidence_column(flavour: str, function: str) -> str:
    """Name of a confidence column.

    E.g. ``confidence_column("topk", "mean_probability")`` → ``topk.mean_probability``.
    """
    return f"{flavour}.{function}"


CONFIDENCE_COLUMNS: tuple[str, ...] = tuple(
    confidence_column(f, n) for f in FLAVOURS for n in CONFIDENCE_NAMES
)
"""Every confidence column name, flavour by flavour (units and interventions tables)."""


class ContractError(ValueError):
    """A frame does not match the contract of the artifact it is written or read as."""


Check = tuple[str, Callable[[], pl.Expr], tuple[str, ...]]
"""An invariant: description, expression that must be true on every row (null counts as true), columns."""


@dataclass(frozen=True)
class Artifact:
    """The contract of one kind of file the workflow writes.

    ``columns`` are required, with exactly these dtypes. After them come confidence columns
    (Float64, named by :func:`confidence_column`) when ``confidence_columns``, and any other column when
    ``open``. ``checks`` are invariants between columns, verified on write and on read.
    """

    name: str
    columns: Mapping[str, pl.DataType]
    confidence_columns: bool = False
    open: bool = False
    checks: tuple[Check, ...] = field(default=())

    def validate(self, frame: pl.DataFrame, where: str, *, partial: bool = False) -> None:
        """Raise :class:`ContractError` naming ``where``, the column and what is wrong.

        ``partial``: the frame holds a selection of the columns (a projected read): only the columns present
        are checked, and only the invariants whose columns are all present.
        """
        schema = frame.schema
        for name, dtype in self.columns.items():
            if name not in schema:
                if partial:
                    continue
                raise ContractError(
                    f"{where}: {self.name} column {name!r} is missing (columns: {list(schema)})"
                )
            if schema[name] != dtype:
                raise ContractError(
                    f"{where}: {self.name} column {name!r} has type {schema[name]}, expected {dtype}"
                )
        for name, dtype in schema.items():
            if name in self.columns:
                continue
            if self.confidence_columns and name in CONFIDENCE_COLUMNS:
                if dtype != pl.Float64:
                    raise ContractError(
                        f"{where}: {self.name} column {name!r} has type {dtype}, expected Float64"
                    )
            elif not self.open:
                raise ContractError(f"{where}: {self.name} has an unexpected column {name!r}")
        checks = [c for c in self.checks if set(c[2]) <= set(schema)] if partial else list(self.checks)
        if not checks or frame.height == 0:
            return
        broken = frame.select(
            *[(~c[1]()).fill_null(False).arg_true().first().alias(str(i)) for i, c in enumerate(checks)]
        )
        for i, check in enumerate(checks):
            row = broken[str(i)][0]
            if row is not None:
                raise ContractError(f"{where}: {self.name} breaks '{check[0]}' at row {row}")


def _check(description: str, expr: Callable[[], pl.Expr], *columns: str) -> Check:
    return (description, expr, columns)


DATASET = Artifact(
    "dataset",
    {"sample_id": pl.String(), "task": pl.String(), "variant": pl.String(), "input": pl.String(),
     "reference": pl.String()},
    open=True,  # tasks may keep generation parameters after the five standard columns
    checks=(_check("sample_id is unique", lambda: pl.col("sample_id").is_unique(), "sample_id"),),
)  # fmt: skip
"""``data/datasets/{task}.parquet``: one row per sample (``variant``: the Code variant or Words subject)."""

GENERATION_META: Mapping[str, pl.DataType] = {
    name: pl.String() for name in ("sample_id", "task", "variant", "model", "style", "prompt")
}
"""Columns in front of the per-token columns of a generations file."""

GENERATION_COLUMNS: Mapping[str, pl.DataType] = {
    "token_ids": pl.List(pl.Int32),
    "token_texts": pl.List(pl.String),
    "token_offsets": pl.List(pl.Int32),
    "chosen_logprob": pl.List(pl.Float32),
    "topk_ids": pl.List(pl.List(pl.Int32)),
    "topk_logprobs": pl.List(pl.List(pl.Float32)),
    "entropy": pl.List(pl.Float32),
    "text": pl.String(),
    "finish_reason": pl.String(),
    "error": pl.String(),
    "num_prompt_tokens": pl.Int32(),
    "num_generated_tokens": pl.Int32(),
}
"""Per-generation columns written by :func:`saltbench.inference.records_to_frame`, with their dtypes."""

_PER_TOKEN = (
    "token_ids",
    "token_texts",
    "token_offsets",
    "chosen_logprob",
    "topk_ids",
    "topk_logprobs",
    "entropy",
)

GENERATIONS = Artifact(
    "generations",
    {**GENERATION_META, **GENERATION_COLUMNS},
    checks=(
        *(
            _check(f"{name} has one entry per generated token",
                   lambda name=name: pl.col(name).list.len() == pl.col("num_generated_tokens"),  # type: ignore[misc]
                   name, "num_generated_tokens")
            for name in _PER_TOKEN
        ),
        _check("text is the concatenation of token_texts",
               lambda: pl.col("text") == pl.col("token_texts").list.join(""), "text", "token_texts"),
    ),
)  # fmt: skip
"""``data/generations/{model}/{style}/{task}.parquet`` and its shards: one row per prompt."""

UNIT_COLUMNS: Mapping[str, pl.DataType] = {
    "model": pl.String(),
    "style": pl.String(),
    "task": pl.String(),
    "sample_id": pl.String(),
    "variant": pl.String(),
    "granularity": pl.Enum(GRANULARITIES),
    "unit_index": pl.Int32(),
    "status": pl.Enum(STATUSES),
    "is_correct": pl.Boolean(),
    "response_unit": pl.String(),
    "reference_unit": pl.String(),
    "span_start": pl.Int64(),
    "span_end": pl.Int64(),
    "n_tokens": pl.Int64(),
}

UNITS = Artifact(
    "units",
    UNIT_COLUMNS,
    confidence_columns=True,
    checks=(
        _check('is_correct is status == "correct"',
               lambda: pl.col("is_correct") == (pl.col("status") == "correct"), "is_correct", "status"),
        _check("span_start <= span_end", lambda: pl.col("span_start") <= pl.col("span_end"),
               "span_start", "span_end"),
        _check("unit_index >= 0", lambda: pl.col("unit_index") >= 0, "unit_index"),
    ),
)  # fmt: skip
"""``data/units/{model}/{style}/{task}.parquet``: one row per unit per granularity, then one Float64
column per ``{flavour}.{function}`` (NaN for ``missing`` units, which have no response text)."""

METRIC_ROW_COLUMNS: Mapping[str, pl.DataType] = {
    "granularity": pl.String(),
    "confidence": pl.String(),
    "flavour": pl.String(),
    "calibration": pl.String(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "n_units": pl.Int64(),
    "n_responses": pl.Int64(),
}
"""Columns of one metrics row (:func:`saltbench.metrics_stage.compute_metrics`)."""

METRICS = Artifact(
    "metrics",
    {"model": pl.String(), "style": pl.String(), "task": pl.String(), **METRIC_ROW_COLUMNS},
    checks=(
        _check("metric is a known metric", lambda: pl.col("metric").is_in(METRIC_NAMES), "metric"),
        _check("granularity is a known granularity", lambda: pl.col("granularity").is_in(GRANULARITIES),
               "granularity"),
        _check("n_units >= 0 and n_responses >= 0", lambda: (pl.col("n_units") >= 0)
               & (pl.col("n_responses") >= 0), "n_units", "n_responses"),
    ),
)  # fmt: skip
"""``results/metrics/{model}/{style}/{task}.parquet``: long format, one value per (granularity, confidence,
flavour, calibration, metric)."""

INTERVENTION_COLUMNS: Mapping[str, pl.DataType] = {
    "model": pl.String(),
    "task": pl.String(),
    "sample_id": pl.String(),
    "variant": pl.String(),
    "n_atoms": pl.Int64(),
    "position": pl.Int64(),
    "position_fraction": pl.Float64(),
    "n_corrupted": pl.Int64(),
    "corrupted_fraction": pl.Float64(),
    "placement": pl.String(),
    "corrupted_positions": pl.List(pl.Int64()),
    "corrupted_atoms": pl.List(pl.String()),
    "next_m": pl.Int64(),
    "next_correct": pl.Boolean(),
    "next_m_accuracy": pl.Float64(),
    "next_status": pl.String(),
    "next_atom": pl.String(),
    "reference_atom": pl.String(),
    "prefix_intact": pl.Boolean(),
    "next_confidence": pl.Float64(),
    "next_n_tokens": pl.Int64(),
    "tf_logprob_correct": pl.Float64(),
    "tf_logprob_with_gap": pl.Float64(),
    "tf_n_tokens": pl.Int64(),
    "prefix_tokens": pl.Int64(),
    "canonical_cut": pl.Boolean(),
    "prefix": pl.String(),
    "continuation": pl.String(),
    "finish_reason": pl.String(),
}
"""Columns of an interventions table besides its confidence columns (docs/interventions.md)."""

INTERVENTIONS = Artifact(
    "interventions",
    INTERVENTION_COLUMNS,
    confidence_columns=True,
    checks=(
        _check("placement is a known placement",
               lambda: pl.col("placement").is_in(PLACEMENT_LABELS), "placement"),
        _check("one corrupted position per corrupted atom",
               lambda: pl.col("corrupted_positions").list.len() == pl.col("n_corrupted"),
               "corrupted_positions", "n_corrupted"),
        _check("0 <= n_corrupted <= position <= n_atoms",
               lambda: (pl.col("n_corrupted") >= 0) & (pl.col("n_corrupted") <= pl.col("position"))
               & (pl.col("position") <= pl.col("n_atoms")), "n_corrupted", "position", "n_atoms"),
    ),
)  # fmt: skip
"""``data/interventions/{model}/{task}.parquet`` and its shards: one row per intervention, then one Float64
column per ``{flavour}.{function}`` for the next atom."""

TRAIN_LOG = Artifact(
    "train_log",
    {"step": pl.Int64(), "loss": pl.Float64(), "lr": pl.Float64(), "tokens": pl.Int64(),
     "answer_tokens": pl.Int64(), "tokens_per_s": pl.Float64(), "elapsed_s": pl.Float64()},
    checks=(_check("step is 1, 2, ...", lambda: pl.col("step") == pl.int_range(1, pl.len() + 1), "step"),),
)  # fmt: skip
"""``data/models/{name}/train_log.parquet``: one row per optimizer step (``tokens`` excludes padding)."""

TABLE = Artifact("table", {}, open=True)
"""``results/tables/{name}.parquet``: an analysis table (its columns are documented with the function that
builds it in :mod:`saltbench.analysis`)."""

ARTIFACTS: Mapping[str, Artifact] = {
    a.name: a for a in (DATASET, GENERATIONS, UNITS, METRICS, INTERVENTIONS, TRAIN_LOG, TABLE)
}
"""Every artifact kind, by name (the name is recorded in each file and checked when it is read back)."""


def artifact(name: str | Artifact) -> Artifact:
    """The artifact called ``name`` (an :class:`Artifact` is returned as is)."""
    if isinstance(name, Artifact):
        return name
    try:
        return ARTIFACTS[name]
    except KeyError:
        raise ValueError(f"unknown artifact {name!r}; known: {', '.join(ARTIFACTS)}") from None
