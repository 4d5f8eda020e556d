"""The workflow's contracts in one place: shared names and the schema of every artifact a stage writes.

Names (each defined once in the package; stages, rules, the config schema and the analysis import them):

* prompt styles :data:`STYLES`, unit granularities :data:`GRANULARITIES`, unit statuses :data:`STATUSES`
  and the subset the model wrote, :data:`RESPONSE_STATUSES`; intervention placements :data:`PLACEMENTS`
  (:data:`PLACEMENT_LABELS` in tables);
* confidence columns follow one naming rule, :func:`confidence_column` (``"{flavour}.{function}"``, e.g.
  ``topk.mean_probability``), in the units table and the interventions table alike; the flavours are
  :data:`saltbench.core.vocabulary.FLAVOURS`, the functions are defined beside their formulas in
  :mod:`saltbench.confidence` (a registry, plugins included); the task slugs beside the task classes
  (:data:`saltbench.tasks.TASK_SLUGS`); the metrics of the metrics table in their registry
  (:func:`saltbench.core.metric_registry.metric_registry`, plugins included).

Artifacts (:data:`ARTIFACTS`): each has its required columns with exact dtypes, whether confidence columns
or other extra columns may follow, and cheap invariants between columns (``is_correct`` is ``status ==
"correct"``; the generated text is the concatenation of its token texts; per-token lists have one entry
per generated token). Each analysis table ``results/tables/{name}.parquet`` has its own artifact,
``table.{name}`` (:data:`TABLES`, by table name): its columns, closed, and invariants such as rates in
[0, 1], ``ci_low <= ci_high`` and known metric and granularity names. :func:`saltbench.io.write_table`
refuses a frame that breaks its artifact's contract and :func:`saltbench.io.read_table` refuses a file that
does, or that holds another artifact (see ``docs/architecture.md``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import polars as pl

from saltbench.core.metric_registry import metric_names
from saltbench.core.vocabulary import (
    ANSWER_STATUSES,
    CONFIDENCE_NAME_PATTERN,
    ESTIMATOR_FAMILIES,
    FINISH_REASONS,
    GRANULARITIES,
    PLACEMENT_LABELS,
    SECOND_PASS_KINDS,
    SECOND_PASS_STATUSES,
    SOURCES,
    STATUSES,
)


def confidence_column(flavour: str, function: str) -> str:
    """Name of a confidence column.

    E.g. ``confidence_column("topk", "mean_probability")`` → ``topk.mean_probability``.
    """
    return f"{flavour}.{function}"


CONFIDENCE_COLUMN_PATTERN = re.compile(rf"(?:{'|'.join(SOURCES)})\.{CONFIDENCE_NAME_PATTERN.pattern}")
"""A confidence column of the units and interventions tables: ``{flavour}.{function}`` for any function of
the registry (:data:`saltbench.confidence.CONFIDENCE_FUNCTIONS`, plugins included), so the contract does not
list them, or ``{source}.{function}`` for an estimator that reads no token distribution (a source of
:data:`saltbench.core.vocabulary.SOURCES`: ``draws`` for the sampling-consistency columns,
:data:`saltbench.evaluation.CONSISTENCY_COLUMNS`, docs/confidence.md §7; ``second_pass``; ``trace``)."""


def is_confidence_column(name: str) -> bool:
    """Whether ``name`` is a confidence column (:data:`CONFIDENCE_COLUMN_PATTERN`).

    >>> is_confidence_column("topk.mean_probability"), is_confidence_column("n_tokens")
    (True, False)
    """
    return CONFIDENCE_COLUMN_PATTERN.fullmatch(name) is not None


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
            if self.confidence_columns and is_confidence_column(name):
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


def _known(column: str, names: tuple[str, ...] | Callable[[], tuple[str, ...]], what: str) -> Check:
    """``column`` holds one of ``names`` (or of what ``names()`` returns when the check runs)."""
    return _check(
        f"{column} is a known {what}",
        lambda: pl.col(column).is_in(names() if callable(names) else names),
        column,
    )


_KNOWN_METRIC = _known("metric", metric_names, "metric")
"""A metric of the registry (:func:`saltbench.core.metric_registry.metric_names`, plugins included: read
when the check runs)."""


DATASET = Artifact(
    "dataset",
    {
        "sample_id": pl.String(),
        "task": pl.String(),
        "variant": pl.String(),
        "input": pl.String(),
        "reference": pl.String(),
    },
    open=True,  # tasks may keep generation parameters after the five standard columns
    checks=(_check("sample_id is unique", lambda: pl.col("sample_id").is_unique(), "sample_id"),),
)
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
            _check(
                f"{name} has one entry per generated token",
                lambda name=name: pl.col(name).list.len() == pl.col("num_generated_tokens"),  # type: ignore[misc]
                name,
                "num_generated_tokens",
            )
            for name in _PER_TOKEN
        ),
        _check(
            "text is the concatenation of token_texts",
            lambda: pl.col("text") == pl.col("token_texts").list.join(""),
            "text",
            "token_texts",
        ),
    ),
)
"""``data/generations/{model}/{style}/{task}.parquet`` and its shards: one row per prompt."""

DRAW_META: Mapping[str, pl.DataType] = {**GENERATION_META, "draw": pl.Int32()}
"""Columns in front of the per-token columns of a draws file: a generation's, then ``draw`` (0 … n−1)."""

DRAWS = Artifact(
    "draws",
    {**DRAW_META, **GENERATION_COLUMNS},
    checks=(
        *GENERATIONS.checks,
        _check("draw is >= 0", lambda: pl.col("draw") >= 0, "draw"),
        _check(
            "(sample_id, draw) is unique",
            lambda: pl.struct("sample_id", "draw").is_unique(),
            "sample_id",
            "draw",
        ),
    ),
)
"""``data/draws/{model}/{style}/{task}.parquet`` and its shards: one row per (prompt, draw), the draws of a
prompt in draw order after each other, rows in dataset order; the generations columns (status columns
``finish_reason``, ``error``, token counts included) plus ``draw`` (docs/generation.md §7). A prompt that
could not run has ``n`` error rows."""

SECOND_PASS_COLUMNS: Mapping[str, pl.DataType] = {
    "sample_id": pl.String(),
    "granularity": pl.Enum(GRANULARITIES),
    "unit_index": pl.Int32(),
    "kind": pl.String(),
    "reply": pl.String(),
    "value": pl.Float64(),
    "status": pl.String(),
    "prompt_tokens": pl.Int32(),
    "n_tokens": pl.Int32(),
}
"""Columns of a second-pass file, one row per question (docs/confidence.md §8)."""

SECOND_PASS = Artifact(
    "second_pass",
    SECOND_PASS_COLUMNS,
    checks=(
        _check(
            f"kind is one of {SECOND_PASS_KINDS}", lambda: pl.col("kind").is_in(SECOND_PASS_KINDS), "kind"
        ),
        _check(
            f"status is one of {SECOND_PASS_STATUSES}",
            lambda: pl.col("status").is_in(SECOND_PASS_STATUSES),
            "status",
        ),
        _check(
            "value is in [0, 1] where status is ok, NaN elsewhere",
            lambda: (
                pl.when(pl.col("status") == "ok")
                .then(pl.col("value").is_between(0.0, 1.0))
                .otherwise(pl.col("value").is_nan())
            ),
            "value",
            "status",
        ),
        _check("unit_index >= 0", lambda: pl.col("unit_index") >= 0, "unit_index"),
        _check(
            "(sample_id, granularity, unit_index, kind) is unique",
            lambda: pl.struct("sample_id", "granularity", "unit_index", "kind").is_unique(),
            "sample_id",
            "granularity",
            "unit_index",
            "kind",
        ),
    ),
)
"""``data/second_pass/{model}/{style}/{task}.parquet``: one row per question a model was asked about a unit
of its own greedy answer — ``kind`` verbalized or p_true, its ``reply``, the confidence read from it
(``value``, NaN unless ``status`` is ok), ``prompt_tokens`` scored and ``n_tokens`` generated
(docs/confidence.md §8). ``granularity`` and ``unit_index`` are the units table's."""

UNIT_COLUMNS: Mapping[str, pl.DataType] = {
    "model": pl.String(),
    "style": pl.String(),
    "task": pl.String(),
    "sample_id": pl.String(),
    "variant": pl.String(),
    "answer_status": pl.Enum(ANSWER_STATUSES),
    "finish_reason": pl.Enum(FINISH_REASONS),
    "num_generated_tokens": pl.Int32(),
    "num_reasoning_tokens": pl.Int32(),
    "max_new_tokens": pl.Int32(),
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
        _check(
            'is_correct is status == "correct"',
            lambda: pl.col("is_correct") == (pl.col("status") == "correct"),
            "is_correct",
            "status",
        ),
        _check(
            "span_start <= span_end",
            lambda: pl.col("span_start") <= pl.col("span_end"),
            "span_start",
            "span_end",
        ),
        _check("unit_index >= 0", lambda: pl.col("unit_index") >= 0, "unit_index"),
        _check(
            "0 <= num_reasoning_tokens <= num_generated_tokens",
            lambda: pl.col("num_reasoning_tokens").is_between(0, pl.col("num_generated_tokens")),
            "num_reasoning_tokens",
            "num_generated_tokens",
        ),
    ),
)
"""``data/units/{model}/{style}/{task}.parquet``: one row per unit per granularity, then one Float64
column per ``{flavour}.{function}`` (NaN for ``missing`` units, which have no response text). The response's
own columns repeat on each of its units: ``answer_status`` (what the response holds: answered, truncated,
no_fence, error; docs/reasoning.md §2), ``finish_reason``, ``num_generated_tokens``,
``num_reasoning_tokens`` (the tokens before its final content; all of them when its reasoning never ended)
and ``max_new_tokens`` (its budget; 0 where unknown)."""

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
"""Columns of one metrics row (:func:`saltbench.stages.metrics.compute_metrics`)."""

METRICS = Artifact(
    "metrics",
    {"model": pl.String(), "style": pl.String(), "task": pl.String(), **METRIC_ROW_COLUMNS},
    checks=(
        _KNOWN_METRIC,
        _check(
            "granularity is a known granularity",
            lambda: pl.col("granularity").is_in(GRANULARITIES),
            "granularity",
        ),
        _check(
            "n_units >= 0 and n_responses >= 0",
            lambda: (pl.col("n_units") >= 0) & (pl.col("n_responses") >= 0),
            "n_units",
            "n_responses",
        ),
    ),
)
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
        _check(
            "placement is a known placement", lambda: pl.col("placement").is_in(PLACEMENT_LABELS), "placement"
        ),
        _check(
            "one corrupted position per corrupted atom",
            lambda: pl.col("corrupted_positions").list.len() == pl.col("n_corrupted"),
            "corrupted_positions",
            "n_corrupted",
        ),
        _check(
            "0 <= n_corrupted <= position <= n_atoms",
            lambda: (
                (pl.col("n_corrupted") >= 0)
                & (pl.col("n_corrupted") <= pl.col("position"))
                & (pl.col("position") <= pl.col("n_atoms"))
            ),
            "n_corrupted",
            "position",
            "n_atoms",
        ),
    ),
)
"""``data/interventions/{model}/{task}.parquet`` and its shards: one row per intervention, then one Float64
column per ``{flavour}.{function}`` for the next atom."""

TRAIN_LOG = Artifact(
    "train_log",
    {
        "step": pl.Int64(),
        "loss": pl.Float64(),
        "lr": pl.Float64(),
        "tokens": pl.Int64(),
        "answer_tokens": pl.Int64(),
        "tokens_per_s": pl.Float64(),
        "elapsed_s": pl.Float64(),
    },
    checks=(_check("step is 1, 2, ...", lambda: pl.col("step") == pl.int_range(1, pl.len() + 1), "step"),),
)
"""``data/models/{name}/train_log.parquet``: one row per optimizer step (``tokens`` excludes padding)."""

# --- analysis tables: results/tables/{name}.parquet -------------------------------------------------------
#
# One artifact per table, named ``table.{name}``; every table's columns are fixed (none depends on the
# configuration: the grid a configuration chooses — functions, granularities, noise levels, bins — is in
# the rows), so every table is closed. Undefined floats are NaN (docs/metrics.md), so each range check
# lets NaN through; an interval check holds where both bounds are defined.

_TOLERANCE = 1e-9
"""Slack of the order checks between floats (an interval bound and its estimate, quartiles): rounding."""


def _unit_interval(*columns: str) -> tuple[Check, ...]:
    """Each float column in [0, 1] (or NaN): a rate, a probability, an AUROC."""

    def one(column: str) -> Check:
        return _check(
            f"{column} is in [0, 1]",
            lambda: pl.col(column).is_nan() | pl.col(column).is_between(0.0, 1.0),
            column,
        )

    return tuple(one(c) for c in columns)


def _at_least(bound: int, *columns: str) -> tuple[Check, ...]:
    """Each integer column ``>= bound`` (counts: ``bound = 0``)."""

    def one(column: str) -> Check:
        return _check(f"{column} >= {bound}", lambda: pl.col(column) >= bound, column)

    return tuple(one(c) for c in columns)


def _ordered(*columns: str) -> Check:
    """``columns[0] <= columns[1] <= ...`` (within :data:`_TOLERANCE`) where none of them is NaN."""

    def expr() -> pl.Expr:
        pairs = [pl.col(a) <= pl.col(b) + _TOLERANCE for a, b in zip(columns, columns[1:])]
        return pl.any_horizontal([pl.col(c).is_nan() for c in columns]) | pl.all_horizontal(pairs)

    return _check(" <= ".join(columns), expr, *columns)


def _interval(name: str, low: str = "ci_low", high: str = "ci_high") -> dict[str, pl.DataType]:
    """An estimate and its interval bounds (Float64)."""
    return {name: pl.Float64(), low: pl.Float64(), high: pl.Float64()}


def _table(name: str, columns: Mapping[str, pl.DataType], *checks: Check) -> Artifact:
    return Artifact(f"table.{name}", columns, checks=checks)


_KNOWN_GRANULARITY = _known("granularity", GRANULARITIES, "granularity")
_KNOWN_FLAVOUR = _known("flavour", SOURCES, "flavour")  # a flavour, or a source independent of one
_KNOWN_FAMILY = _known("family", ESTIMATOR_FAMILIES, "estimator family")


def _confidence_name(column: str) -> Check:
    """A confidence function's name (the registry is not known here: the naming rule is checked)."""
    pattern = f"^{CONFIDENCE_NAME_PATTERN.pattern}$"
    return _check(
        f"{column} is a confidence function name", lambda: pl.col(column).str.contains(pattern), column
    )


_KNOWN_CONFIDENCE = _confidence_name("confidence")

_LEADERBOARD_METRICS: tuple[str, ...] = (
    *(f"precision_{g}" for g in GRANULARITIES),
    "ece",
    "auroc_pooled",
    "auroc_per_response",
    "aurc",
)

GENERATION_HEALTH_TABLE = _table(
    "generation_health",
    {
        "model": pl.String(),
        "style": pl.String(),
        "task": pl.String(),
        "responses": pl.Int64(),
        **{s: pl.Float64() for s in ANSWER_STATUSES},
        "mean_completion_tokens": pl.Float64(),
        "mean_reasoning_tokens": pl.Float64(),
        "budget": pl.Int64(),
        "budget_used": pl.Float64(),
        "at_budget": pl.Float64(),
        "second_pass_replies": pl.Int64(),
        **{f"second_pass_{s}": pl.Int64() for s in SECOND_PASS_STATUSES},
        # draws (docs/generation.md §7): expected (n × responses), present, error rows, share answered
        "draws_expected": pl.Int64(),
        "draws": pl.Int64(),
        "draw_errors": pl.Int64(),
        "draws_answered": pl.Float64(),
    },
    *_unit_interval(*ANSWER_STATUSES, "at_budget", "draws_answered"),
    *_at_least(0, "second_pass_replies"),
    _check(
        "the second-pass status counts sum to second_pass_replies",
        lambda: (
            pl.sum_horizontal(*(f"second_pass_{s}" for s in SECOND_PASS_STATUSES))
            == pl.col("second_pass_replies")
        ),
        "second_pass_replies",
        *(f"second_pass_{s}" for s in SECOND_PASS_STATUSES),
    ),
    *_at_least(1, "responses"),
    *_at_least(0, "budget", "draws_expected", "draws", "draw_errors"),
    _check("draw_errors <= draws", lambda: pl.col("draw_errors") <= pl.col("draws"), "draw_errors", "draws"),
    _check(
        "the status shares sum to 1",
        lambda: (pl.sum_horizontal(*ANSWER_STATUSES) - 1.0).abs() <= _TOLERANCE,
        *ANSWER_STATUSES,
    ),
    _ordered("mean_reasoning_tokens", "mean_completion_tokens"),
)
"""``generation_health``: per (model, style, task), the share of each answer status, the mean completion
and reasoning tokens, the budget used, the second pass's replies by status (counts, 0 where none was
asked) and the draws' counts (:func:`saltbench.analysis.generation_health`)."""

ELIGIBILITY_TABLE = _table(
    "eligibility",
    {
        "model": pl.String(),
        "style": pl.String(),
        "task": pl.String(),
        "granularity": pl.String(),
        "answered": pl.Float64(),
        "n_correct": pl.Int64(),
        "n_incorrect": pl.Int64(),
        "eligible_model": pl.Boolean(),
        "eligible": pl.Boolean(),
        "reason": pl.String(),
    },
    _KNOWN_GRANULARITY,
    *_unit_interval("answered"),
    *_at_least(0, "n_correct", "n_incorrect"),
    _check(
        "an eligible cell is of an eligible model",
        lambda: ~pl.col("eligible") | pl.col("eligible_model"),
        "eligible",
        "eligible_model",
    ),
    _check(
        "an excluded cell says why",
        lambda: pl.col("eligible") | (pl.col("reason").str.len_chars() > 0),
        "eligible",
        "reason",
    ),
)
"""``eligibility``: per (model, style, task, granularity), whether it enters pooled and compared estimates,
and why not (:func:`saltbench.analysis.eligibility_table`, docs/metrics.md §10)."""

LEADERBOARD_TABLE = _table(
    "leaderboard",
    {
        "model": pl.String(),
        "style": pl.String(),
        "family": pl.String(),
        **{
            k: v for m in _LEADERBOARD_METRICS for k, v in _interval(m, f"{m}_ci_low", f"{m}_ci_high").items()
        },
        "n_tasks": pl.Int64(),
        "eligible": pl.Boolean(),
    },
    *_unit_interval(*(c for m in _LEADERBOARD_METRICS for c in (m, f"{m}_ci_low", f"{m}_ci_high"))),
    *(_ordered(f"{m}_ci_low", m, f"{m}_ci_high") for m in _LEADERBOARD_METRICS),
    *_at_least(0, "n_tasks"),
)
"""``leaderboard``: one row per (model, style), the family of its estimator, each metric the mean over tasks
with its combined interval,
which contains it (:func:`saltbench.analysis.leaderboard`), and whether the model and style enter pooled
estimates (``eligible``, docs/metrics.md §10)."""

ACCURACY_BY_TASK_TABLE = _table(
    "accuracy_by_task",
    {
        "model": pl.String(),
        "style": pl.String(),
        "task": pl.String(),
        "granularity": pl.String(),
        **_interval("value"),
        "n_units": pl.Int64(),
        "n_responses": pl.Int64(),
        "eligible": pl.Boolean(),
    },
    _KNOWN_GRANULARITY,
    *_unit_interval("value"),
    _ordered("ci_low", "ci_high"),
    *_at_least(0, "n_units", "n_responses"),
)
"""``accuracy_by_task``: precision (or recall) per model, style, task and granularity with the metrics
stage's bootstrap interval (:func:`saltbench.analysis.accuracy_by_task`), and whether the model and style
enter pooled estimates (``eligible``, docs/metrics.md §10)."""

DOMINANCE_TABLE = _table(
    "dominance",
    {
        "aspect": pl.String(),
        "metric": pl.String(),
        "granularity": pl.String(),
        "flavour": pl.String(),
        "confidence": pl.String(),
        "family": pl.String(),
        "wins": pl.Float64(),
        "n_cells": pl.Int64(),
        "win_share": pl.Float64(),
        "mean_margin": pl.Float64(),
        "mean_rank": pl.Float64(),
        "mean_value": pl.Float64(),
    },
    _KNOWN_METRIC,
    _KNOWN_GRANULARITY,
    _KNOWN_FLAVOUR,
    _KNOWN_CONFIDENCE,
    _KNOWN_FAMILY,
    _check("wins >= 0", lambda: pl.col("wins") >= 0, "wins"),
    *_at_least(0, "n_cells"),
    *_unit_interval("win_share"),
    _check(
        "mean_margin >= 0",
        lambda: pl.col("mean_margin").is_nan() | (pl.col("mean_margin") >= 0),
        "mean_margin",
    ),
    _check("mean_rank >= 1", lambda: pl.col("mean_rank").is_nan() | (pl.col("mean_rank") >= 1), "mean_rank"),
)
"""``dominance``: per aspect × granularity × flavour × confidence estimator (and its family), its wins over
the cells (:func:`saltbench.analysis.dominance`); an estimator of a source independent of the flavour
(draws, second pass, trace) competes in every flavour's cells (docs/metrics.md §11)."""

DOMINANCE_CELLS_TABLE = _table(
    "dominance_cells",
    {
        "aspect": pl.String(),
        "metric": pl.String(),
        **{k: pl.String() for k in ("model", "style", "task", "granularity", "flavour")},
        "winner": pl.String(),
        "winner_family": pl.String(),
        "winners": pl.String(),
        "n_tied": pl.Int64(),
        "best_value": pl.Float64(),
        "runner_up": pl.String(),
        "runner_up_value": pl.Float64(),
        "margin": pl.Float64(),
        "n_functions": pl.Int64(),
    },
    _KNOWN_METRIC,
    _KNOWN_GRANULARITY,
    _KNOWN_FLAVOUR,
    _confidence_name("winner"),
    _known("winner_family", ESTIMATOR_FAMILIES, "estimator family"),
    *_at_least(1, "n_tied"),
    _check(
        "n_tied <= n_functions", lambda: pl.col("n_tied") <= pl.col("n_functions"), "n_tied", "n_functions"
    ),
    _check("margin >= 0", lambda: pl.col("margin").is_nan() | (pl.col("margin") >= 0), "margin"),
)
"""``dominance_cells``: the winning confidence function of every aspect × cell, its family, and its margin
(:func:`saltbench.analysis.dominance_cells`)."""

ESTIMATOR_COST_TABLE = _table(
    "estimator_cost",
    {
        "model": pl.String(),
        "style": pl.String(),
        "task": pl.String(),
        "family": pl.String(),
        "responses": pl.Int64(),
        "extra_generated_tokens": pl.Float64(),
        "extra_scored_tokens": pl.Float64(),
    },
    _KNOWN_FAMILY,
    *_at_least(0, "responses"),
    _check(
        "extra tokens >= 0",
        lambda: (
            (pl.col("extra_generated_tokens").is_nan() | (pl.col("extra_generated_tokens") >= 0))
            & (pl.col("extra_scored_tokens").is_nan() | (pl.col("extra_scored_tokens") >= 0))
        ),
        "extra_generated_tokens",
        "extra_scored_tokens",
    ),
    _check(
        "single_pass costs nothing extra",
        lambda: (
            (pl.col("family") != "single_pass")
            | ((pl.col("extra_generated_tokens") == 0) & (pl.col("extra_scored_tokens") == 0))
        ),
        "family",
        "extra_generated_tokens",
        "extra_scored_tokens",
    ),
)
"""``estimator_cost``: per model × style × task × estimator family, the greedy responses and the extra tokens
generated and scored per response beyond the greedy answer, measured from the draws and the second-pass
files (:func:`saltbench.analysis.estimator_cost`; docs/confidence.md §Families)."""

FRONTIER_TABLE = _table(
    "frontier",
    {
        "granularity": pl.String(),
        "confidence": pl.String(),
        "family": pl.String(),
        "source": pl.String(),
        **_interval("auroc", "auroc_ci_low", "auroc_ci_high"),
        **_interval("prr", "prr_ci_low", "prr_ci_high"),
        "n_cells": pl.Int64(),
        "extra_generated_tokens": pl.Float64(),
        "extra_scored_tokens": pl.Float64(),
        "extra_tokens": pl.Float64(),
    },
    _KNOWN_GRANULARITY,
    _KNOWN_CONFIDENCE,
    _KNOWN_FAMILY,
    _known("source", SOURCES, "source"),
    *_unit_interval("auroc", "auroc_ci_low", "auroc_ci_high"),
    _ordered("auroc_ci_low", "auroc", "auroc_ci_high"),
    _ordered("prr_ci_low", "prr", "prr_ci_high"),
    *_at_least(0, "n_cells"),
    _check(
        "extra_tokens = generated + scored",
        lambda: (
            pl.col("extra_tokens").is_nan()
            | (
                (
                    pl.col("extra_tokens") - pl.col("extra_generated_tokens") - pl.col("extra_scored_tokens")
                ).abs()
                <= _TOLERANCE
            )
        ),
        "extra_tokens",
        "extra_generated_tokens",
        "extra_scored_tokens",
    ),
)
"""``frontier``: per granularity × confidence estimator, its family and source, the mean pooled AUROC and PRR
over the eligible cells with combined intervals, and its family's mean extra tokens per response over the same
cells (:func:`saltbench.analysis.frontier`; docs/metrics.md §11): the table behind figure ``frontier``."""

GRANULARITY_TABLE = _table(
    "granularity",
    {
        "task": pl.String(),
        "style": pl.String(),
        "granularity": pl.String(),
        "metric": pl.String(),
        "mean": pl.Float64(),
        "median": pl.Float64(),
        "q25": pl.Float64(),
        "q75": pl.Float64(),
        "n_models": pl.Int64(),
        "n_correct": pl.Int64(),
        "n_incorrect": pl.Int64(),
        "n_responses": pl.Int64(),
        **_interval("delta_vs_line", "delta_ci_low", "delta_ci_high"),
        "n_models_delta": pl.Int64(),
    },
    _KNOWN_GRANULARITY,
    _KNOWN_METRIC,
    *_unit_interval("mean", "median", "q25", "q75"),
    _ordered("q25", "median", "q75"),
    _ordered("delta_ci_low", "delta_ci_high"),
    *_at_least(0, "n_models", "n_correct", "n_incorrect", "n_responses", "n_models_delta"),
)
"""``granularity``: AUROC per task × style × granularity × AUROC kind, summarised over models, with the
correct and incorrect units the AUROCs rank and the responses they lie in (summed over those models; the
per-response AUROC's: responses holding both classes only; null where not counted) and, on the
atom and generation rows of the pooled AUROC, its paired difference from the line level with a bootstrap
interval (:func:`saltbench.analysis.granularity_table`, :func:`saltbench.analysis.granularity_deltas`)."""

REASONING_TRADEOFF_TABLE = _table(
    "reasoning_tradeoff",
    {
        **{
            k: pl.String()
            for k in ("kind", "label", "base_model", "model_a", "style_a", "model_b", "style_b", "level")
        },
        "n_pairs": pl.Int64(),
        "n_pairs_auroc": pl.Int64(),
        "precision_a": pl.Float64(),
        "precision_b": pl.Float64(),
        **_interval("delta_precision", "delta_precision_ci_low", "delta_precision_ci_high"),
        "p_precision": pl.Float64(),
        "auroc_a": pl.Float64(),
        "auroc_b": pl.Float64(),
        **_interval("rel_delta_auroc", "rel_delta_auroc_ci_low", "rel_delta_auroc_ci_high"),
        "p_auroc": pl.Float64(),
        "status_precision": pl.String(),
        "status_auroc": pl.String(),
    },
    *_at_least(0, "n_pairs", "n_pairs_auroc"),
    *_unit_interval("precision_a", "precision_b", "auroc_a", "auroc_b", "p_precision", "p_auroc"),
    _ordered("delta_precision_ci_low", "delta_precision_ci_high"),
    _ordered("rel_delta_auroc_ci_low", "rel_delta_auroc_ci_high"),
)
"""``reasoning_tradeoff``: one row per paired comparison, task or sample level
(:func:`saltbench.analysis.reasoning_tradeoff`, :func:`saltbench.analysis.reasoning_tradeoff_units`).
The intervals are percentile-bootstrap intervals, which need not contain the point estimate."""

LABEL_NOISE_TABLE = _table(
    "label_noise",
    {
        "granularity": pl.String(),
        "mode": pl.String(),
        "epsilon": pl.Float64(),
        "metric": pl.String(),
        **_interval("value"),
        "expected": pl.Float64(),
        "n_cells": pl.Int64(),
        "n_units": pl.Int64(),
        "confidence": pl.String(),
        "flavour": pl.String(),
    },
    _KNOWN_GRANULARITY,
    _KNOWN_METRIC,
    _KNOWN_CONFIDENCE,
    _KNOWN_FLAVOUR,
    _check("epsilon is in [0, 0.5]", lambda: pl.col("epsilon").is_between(0.0, 0.5), "epsilon"),
    _ordered("ci_low", "ci_high"),
    *_at_least(0, "n_cells", "n_units"),
)
"""``label_noise``: each metric per granularity × noise mode × flipped fraction ``epsilon``, with a
percentile band over replicates and the analytic expectation
(:func:`saltbench.analysis.label_noise_sensitivity`)."""

LABEL_NOISE_CELLS = Artifact(
    "table_part.label_noise",
    {
        **{k: pl.String() for k in ("model", "style", "task", "granularity", "mode")},
        "epsilon": pl.Float64(),
        "n_units": pl.Int64(),
        "replicate": pl.Int64(),
        **{k: pl.Float64() for k in ("ece", "auroc_pooled", "auroc_per_response", "prr", "expected")},
    },
    checks=(
        _KNOWN_GRANULARITY,
        _check("epsilon is in [0, 0.5]", lambda: pl.col("epsilon").is_between(0.0, 0.5), "epsilon"),
        *_at_least(0, "n_units", "replicate"),
    ),
)
"""``results/tables/parts/label_noise/{model}.parquet``: one model's part of the ``label_noise`` table, every
replicate of every (model, style, task, granularity) cell at each mode and ``epsilon``
(:func:`saltbench.analysis.label_noise_cells`; merged by :func:`saltbench.analysis.label_noise_summary`)."""

TABLE_PARTS: Mapping[str, Artifact] = {"label_noise": LABEL_NOISE_CELLS}
"""The artifact of each table computed one job per model, by table name (docs/architecture.md §4)."""

RELIABILITY_TABLE = _table(
    "reliability",
    {
        "granularity": pl.String(),
        "confidence": pl.String(),
        "bin": pl.Int64(),
        "bin_low": pl.Float64(),
        "bin_high": pl.Float64(),
        "n": pl.Int64(),
        "mean_confidence": pl.Float64(),
        "accuracy": pl.Float64(),
        "ece": pl.Float64(),
        "n_units": pl.Int64(),
        "n_cells": pl.Int64(),
        "calibration": pl.String(),
        "flavour": pl.String(),
        "models": pl.String(),
        "styles": pl.String(),
        "tasks": pl.String(),
    },
    _KNOWN_GRANULARITY,
    _KNOWN_CONFIDENCE,
    _KNOWN_FLAVOUR,
    *_at_least(0, "bin", "n", "n_cells"),
    _check("n <= n_units", lambda: pl.col("n") <= pl.col("n_units"), "n", "n_units"),
    *_unit_interval("bin_low", "bin_high", "mean_confidence", "accuracy", "ece"),
    _ordered("bin_low", "bin_high"),
)
"""``reliability``: one row per granularity × confidence function × calibrated-confidence bin
(:func:`saltbench.analysis.reliability_table`)."""

REJECTION_TABLE = _table(
    "rejection",
    {
        "granularity": pl.String(),
        "confidence": pl.String(),
        "coverage": pl.Float64(),
        "selective_risk": pl.Float64(),
        "aurc": pl.Float64(),
        "n_cells": pl.Int64(),
    },
    _KNOWN_GRANULARITY,
    *_unit_interval("coverage", "selective_risk", "aurc"),
    *_at_least(0, "n_cells"),
)
"""``rejection``: the risk–coverage curve of each granularity × confidence function (or the ``oracle`` and
``random`` baselines) on a grid of coverages (:func:`saltbench.analysis.rejection_table`)."""

INTERVENTIONS_TABLE = _table(
    "interventions",
    {
        "model": pl.String(),
        "task": pl.String(),
        "term": pl.String(),
        **_interval("estimate"),
        "n_rows": pl.Int64(),
        "n_samples": pl.Int64(),
        "method": pl.String(),
        "status": pl.String(),
    },
    _ordered("ci_low", "ci_high"),
    *_at_least(0, "n_samples"),
    _check("n_samples <= n_rows", lambda: pl.col("n_samples") <= pl.col("n_rows"), "n_samples", "n_rows"),
)
"""``interventions``: the fitted effects, one row per model × task × regression term, with
cluster-bootstrap intervals (which need not contain the estimate) and a status
(:func:`saltbench.analysis.fit_intervention_effects`)."""

_NEXT_ATOM_ACCURACY: Mapping[str, pl.DataType] = {
    "model": pl.String(),
    "task": pl.String(),
    "n": pl.Int64(),
    "n_correct": pl.Int64(),
    **_interval("accuracy"),
    "mean_confidence": pl.Float64(),
    "mean_m_accuracy": pl.Float64(),
    "mean_tf_logprob": pl.Float64(),
}
"""Columns shared by the ``interventions_by_*`` tables: next-atom accuracy of a group of interventions with
its Wilson interval (which contains it)."""

_NEXT_ATOM_ACCURACY_CHECKS: tuple[Check, ...] = (
    *_at_least(0, "n", "n_correct"),
    _check("n_correct <= n", lambda: pl.col("n_correct") <= pl.col("n"), "n_correct", "n"),
    *_unit_interval("accuracy"),
    _ordered("ci_low", "accuracy", "ci_high"),
)

_BIN: Mapping[str, pl.DataType] = {
    "bin": pl.Int64(),
    "x": pl.Float64(),
    "bin_low": pl.Float64(),
    "bin_high": pl.Float64(),
}
"""Columns of a binned ``interventions_by_*`` table: the bin, the mean of the binned variable in it, its
bounds."""

_BIN_CHECKS: tuple[Check, ...] = (*_unit_interval("bin_low", "bin_high"), _ordered("bin_low", "bin_high"))

_KNOWN_PLACEMENT = _known("placement", PLACEMENT_LABELS, "placement")

INTERVENTIONS_BY_POSITION_TABLE = _table(
    "interventions_by_position",
    {**_NEXT_ATOM_ACCURACY, **_BIN},
    *_NEXT_ATOM_ACCURACY_CHECKS,
    *_BIN_CHECKS,
    *_at_least(0, "bin"),
)
"""``interventions_by_position``: clean-prefix next-atom accuracy per model × task × position-fraction bin
(:func:`saltbench.analysis.accuracy_by_position`)."""

INTERVENTIONS_BY_CORRUPTION_TABLE = _table(
    "interventions_by_corruption",
    {**_NEXT_ATOM_ACCURACY, "placement": pl.String(), **_BIN},
    *_NEXT_ATOM_ACCURACY_CHECKS,
    *_BIN_CHECKS,
    _KNOWN_PLACEMENT,
    _check(
        'bin is -1 exactly where placement is "clean"',
        lambda: (pl.col("bin") == -1) == (pl.col("placement") == "clean"),
        "bin",
        "placement",
    ),
    *_at_least(-1, "bin"),
)
"""``interventions_by_corruption``: next-atom accuracy per model × task × placement × corrupted-fraction bin;
clean prefixes are bin -1 (:func:`saltbench.analysis.accuracy_by_corruption`)."""

_PLACEMENT_CONTRAST: Mapping[str, pl.DataType] = {
    column: dtype
    for reference in ("distant", "clean")
    for column, dtype in (
        *_interval(
            f"delta_vs_{reference}", f"delta_ci_low_vs_{reference}", f"delta_ci_high_vs_{reference}"
        ).items(),
        (f"n_samples_vs_{reference}", pl.Int64()),
    )
}
"""A placement's paired accuracy difference from ``distant`` and from ``clean`` with its interval and the
samples it rests on (:func:`saltbench.analysis.placement_contrasts`)."""

INTERVENTIONS_BY_PLACEMENT_TABLE = _table(
    "interventions_by_placement",
    {**_NEXT_ATOM_ACCURACY, "placement": pl.String(), **_PLACEMENT_CONTRAST},
    *_NEXT_ATOM_ACCURACY_CHECKS,
    _KNOWN_PLACEMENT,
    _ordered("delta_ci_low_vs_distant", "delta_ci_high_vs_distant"),
    _ordered("delta_ci_low_vs_clean", "delta_ci_high_vs_clean"),
    *_at_least(0, "n_samples_vs_distant", "n_samples_vs_clean"),
)
"""``interventions_by_placement``: next-atom accuracy per model × task × placement, and the placement's
paired differences from ``distant`` and ``clean`` (:func:`saltbench.analysis.accuracy_by_placement`)."""

RECOVERY_TABLE = _table(
    "recovery",
    {
        "model": pl.String(),
        "style": pl.String(),
        "task": pl.String(),
        "quantity": pl.String(),
        "planted": pl.Float64(),
        "structural": pl.Float64(),
        **_interval("estimate"),
        "error": pl.Float64(),
        "inside": pl.Boolean(),
    },
    _ordered("ci_low", "ci_high"),
)
"""``recovery`` (runs with simulated models): each planted value of the simulated models beside the run's
estimate of it and its interval, and the structural parameter behind an intervention term (NaN elsewhere;
:func:`saltbench.analysis.recovery_table`)."""

TABLES: Mapping[str, Artifact] = {
    a.name.removeprefix("table."): a
    for a in (
        GENERATION_HEALTH_TABLE,
        ELIGIBILITY_TABLE,
        LEADERBOARD_TABLE,
        ACCURACY_BY_TASK_TABLE,
        DOMINANCE_TABLE,
        DOMINANCE_CELLS_TABLE,
        ESTIMATOR_COST_TABLE,
        FRONTIER_TABLE,
        GRANULARITY_TABLE,
        REASONING_TRADEOFF_TABLE,
        LABEL_NOISE_TABLE,
        RELIABILITY_TABLE,
        REJECTION_TABLE,
        INTERVENTIONS_TABLE,
        INTERVENTIONS_BY_POSITION_TABLE,
        INTERVENTIONS_BY_CORRUPTION_TABLE,
        INTERVENTIONS_BY_PLACEMENT_TABLE,
        RECOVERY_TABLE,
    )
}
"""The artifact of each analysis table, by table name (``results/tables/{name}.parquet``; the artifact is
called ``table.{name}``), in the paper's order; one per table the rules of :mod:`saltbench.workflow.tables`
write (checked there)."""

ARTIFACTS: Mapping[str, Artifact] = {
    a.name: a
    for a in (
        DATASET,
        GENERATIONS,
        DRAWS,
        SECOND_PASS,
        UNITS,
        METRICS,
        INTERVENTIONS,
        TRAIN_LOG,
        *TABLES.values(),
        *TABLE_PARTS.values(),
    )
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


FINDINGS_SUMMARY_TITLE = "What this run estimated"
"""Title of the findings page's opening section (``results/findings.md``), which the HTML report's front page
repeats (:func:`saltbench.workflow.rule_support.report_text`)."""
