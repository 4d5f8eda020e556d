"""One chunk of the explorer: every response of one (model, style, task), ready to be written as JSON.

A chunk joins three tables on ``sample_id`` (docs/explorer.md §2): the generations (prompt, text, tokens with
their chosen and top-k log-probabilities), the units (status, spans, confidence values at every granularity)
and the dataset (the reference answer). Everything is column-oriented (one list per field), so the browser
receives one array per column instead of one object per unit.

The per-token work is done by polars on exploded lists (no Python loop over tokens): only the tokens of the
fenced answer are kept — the ones a unit can hover over — each with its ``top_k`` most likely alternatives.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from saltbench.confidence import confidence_spec
from saltbench.core.contracts import is_confidence_column
from saltbench.core.vocabulary import GRANULARITIES
from saltbench.evaluation import decompose, resolve_task
from saltbench.inference.records import PAD_ID
from saltbench.stages.metrics import response_accuracy

DIGITS = 4
"""Decimals kept of a confidence value and of a log-probability in the page (sizes: docs/explorer.md §4)."""

NO_UNITS = "no_units"
"""``answer_status`` shown for a generation the units table has no row of (should not happen in a run)."""


@dataclass(frozen=True)
class ChunkKey:
    """The cell a chunk holds."""

    model: str
    style: str
    task: str


def confidence_columns(units: pl.DataFrame) -> list[str]:
    """The ``{flavour}.{function}`` columns of a units table, in table order."""
    return [c for c in units.columns if is_confidence_column(c)]


def orientation(column: str) -> int:
    """+1 when higher values of the column's function mean more confident, else -1
    (:func:`saltbench.confidence.confidence_spec`)."""
    return 1 if confidence_spec(column.split(".", 1)[1]).higher_is_confident else -1


def token_vocabulary(generations: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """``token_id -> token_text`` from the tokens a model generated (the most frequent text of each id).

    The generations store the top-k alternatives by id only; this map names every alternative the model
    also chose somewhere in the run. Others are shown by their id (docs/explorer.md §3).
    """
    frames = [g.select("token_ids", "token_texts").explode("token_ids", "token_texts") for g in generations]
    if not frames:
        return pl.DataFrame(schema={"token_id": pl.Int32(), "token_text": pl.String()})
    pairs = pl.concat(frames).drop_nulls().rename({"token_ids": "token_id", "token_texts": "token_text"})
    return (
        pairs.group_by("token_id", "token_text")
        .len()
        .sort(["token_id", "len", "token_text"], descending=[False, True, False])
        .unique("token_id", keep="first", maintain_order=True)
        .select("token_id", "token_text")
    )


def _responses(units: pl.DataFrame, generations: pl.DataFrame, dataset: pl.DataFrame) -> pl.DataFrame:
    """One row per generation, in generation order, with what the response list and view need."""
    per_response = units.group_by("sample_id", maintain_order=True).agg(
        pl.col("answer_status").first().cast(pl.String),
        pl.col("num_reasoning_tokens").first(),
    )
    spans = (
        units.filter(pl.col("granularity") == "generation")
        .group_by("sample_id", maintain_order=True)
        .agg(answer_start=pl.col("span_start").min(), answer_end=pl.col("span_end").max())
    )
    frame = (
        generations.select(
            "sample_id",
            "variant",
            "prompt",
            "text",
            "finish_reason",
            "error",
            "num_generated_tokens",
            "token_offsets",
        )
        .with_row_index("r")
        .join(per_response, on="sample_id", how="left", maintain_order="left")
        .join(spans, on="sample_id", how="left", maintain_order="left")
        .join(dataset.select("sample_id", "reference"), on="sample_id", how="left", maintain_order="left")
    )
    # where the final content starts: the character offset of the first token after the reasoning
    reasoning_end = (
        pl.col("token_offsets").list.get(pl.col("num_reasoning_tokens").fill_null(0), null_on_oob=True)
    ).fill_null(pl.col("text").str.len_chars())
    return frame.with_columns(
        pl.col("answer_status").fill_null(NO_UNITS),
        pl.when(pl.col("num_reasoning_tokens").fill_null(0) > 0)
        .then(reasoning_end)
        .otherwise(0)
        .alias("reasoning_end"),
    ).drop("token_offsets", "num_reasoning_tokens")


def _json_logprob(value: pl.Expr) -> pl.Expr:
    """A log-probability as the page receives it: rounded to :data:`DIGITS` decimals, NaN ("absent": an
    imported response without log-probabilities, docs/backends.md §9.4) as ``null``; −∞ stays a float here
    and is written as the text ``"-inf"`` by :func:`_infinite_as_text` (JSON has no infinity;
    docs/explorer.md §2)."""
    return value.cast(pl.Float64).fill_nan(None).round(DIGITS)


def _answer_tokens(generations: pl.DataFrame, responses: pl.DataFrame, top_k: int) -> pl.DataFrame:
    """The tokens overlapping each response's fenced answer: offset, text, chosen log-probability and the
    ``top_k`` alternatives (ids and log-probabilities), one list per response (``r`` order). Padding
    alternatives (id :data:`~saltbench.inference.records.PAD_ID`: a server or file that gave fewer
    than ``k``) are left out; an absent log-probability is ``null`` (:func:`_json_logprob`)."""
    exploded = (
        generations.select(
            "sample_id",
            "token_ids",
            "token_texts",
            "token_offsets",
            "chosen_logprob",
            "topk_ids",
            "topk_logprobs",
            length=pl.col("text").str.len_chars(),
        )
        .join(responses.select("sample_id", "r", "answer_start", "answer_end"), on="sample_id")
        .filter(pl.col("answer_start").is_not_null())
        .explode("token_ids", "token_texts", "token_offsets", "chosen_logprob", "topk_ids", "topk_logprobs")
        .with_columns(end=pl.col("token_offsets").shift(-1).over("r").fill_null(pl.col("length")))
        .filter((pl.col("token_offsets") < pl.col("answer_end")) & (pl.col("end") > pl.col("answer_start")))
        .with_columns(
            kept=pl.col("topk_ids").list.eval(pl.arg_where(pl.element() != PAD_ID)).list.head(top_k)
        )
    )
    return exploded.group_by("r", maintain_order=True).agg(
        o=pl.col("token_offsets"),
        i=pl.col("token_ids"),
        t=pl.col("token_texts"),
        lp=_json_logprob(pl.col("chosen_logprob")),
        k=pl.col("topk_ids").list.gather(pl.col("kept")),
        kl=pl.col("topk_logprobs").list.gather(pl.col("kept")).list.eval(_json_logprob(pl.element())),
    )


def _infinite_as_text(tokens: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """One response's ``tokens`` entry with every infinite log-probability (``lp``, ``kl``) as the text
    ``"-inf"`` (``"inf"``), which the page shows as −∞ (JSON has no infinity). Only the responses that hold
    one are walked (:func:`_with_infinity`; −∞ is rare: a token the model gave no probability)."""
    return {
        **tokens,
        "lp": [_text_if_infinite(v) for v in tokens["lp"]],
        "kl": [[_text_if_infinite(v) for v in row] for row in tokens["kl"]],
    }


def _text_if_infinite(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return "-inf" if value < 0 else "inf"


def _with_infinity(tokens: pl.DataFrame) -> set[int]:
    """The responses ``r`` whose answer tokens hold an infinite log-probability (chosen or alternative)."""
    infinite = pl.element().is_infinite()
    return set(
        tokens.filter(
            pl.col("lp").list.eval(infinite).list.any()
            | pl.col("kl").list.eval(pl.element().list.eval(infinite).list.any()).list.any()
        )["r"].to_list()
    )


def _column(frame: pl.DataFrame, name: str) -> list[Any]:
    return frame[name].to_list()


def _values(frame: pl.DataFrame, names: Sequence[str]) -> dict[str, list[Any]]:
    """Float columns as lists, NaN as ``None`` (JSON ``null``), rounded to :data:`DIGITS` decimals."""
    return frame.select(pl.col(names).fill_nan(None).round(DIGITS)).to_dict(as_series=False)


def build_chunk(
    key: ChunkKey,
    units: pl.DataFrame,
    generations: pl.DataFrame,
    dataset: pl.DataFrame,
    vocabulary: pl.DataFrame,
    *,
    top_k: int = 5,
    metrics: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """The chunk of one (model, style, task) as plain lists (JSON-ready).

    ``responses``: one entry per generation (its row ``r``), with the per-response precision of each
    granularity (:func:`saltbench.stages.metrics.response_accuracy`, the metrics stage's definition:
    ``C / (R + I)``); ``units``: per granularity, one entry per unit with its response ``r``; ``tokens``:
    per response with an answer, the tokens of the answer (offsets into the text); ``vocab``: the texts of
    the alternative token ids of this chunk that the model generated somewhere in the run.
    ``reference_units``: per granularity, the reference units of each response's sample
    (:func:`reference_counts`), so that a response without an answer counts its reference as missing;
    ``summary``: the metrics stage's rows of the cell (:func:`cell_summary`; empty without ``metrics``).
    """
    responses = _responses(units, generations, dataset)
    index = responses.select("sample_id", "r")
    precision = (
        response_accuracy(units)
        .with_columns(pl.col("granularity").cast(pl.String))
        .join(index, on="sample_id")
        .select("r", "granularity", "precision")
    )
    tokens = _answer_tokens(generations, responses, top_k)
    unit_payload = _unit_payload(units, index)
    ids = tokens.select(pl.col("k").explode().explode().unique().alias("token_id")).drop_nulls()
    vocab = ids.join(vocabulary, on="token_id", how="inner").sort("token_id")
    n_rows = responses.height
    by_r: dict[str, dict[int, float]] = {}
    for row in precision.iter_rows(named=True):
        by_r.setdefault(row["granularity"], {})[row["r"]] = row["precision"]
    token_rows = {
        row["r"]: {k: row[k] for k in ("o", "i", "t", "lp", "k", "kl")} for row in tokens.to_dicts()
    }
    for r in _with_infinity(tokens):
        token_rows[r] = _infinite_as_text(token_rows[r])
    return {
        "model": key.model,
        "style": key.style,
        "task": key.task,
        "responses": {
            "sample_id": _column(responses, "sample_id"),
            "variant": _column(responses, "variant"),
            "answer_status": _column(responses, "answer_status"),
            "finish_reason": _column(responses, "finish_reason"),
            "error": _column(responses, "error"),
            "num_generated_tokens": _column(responses, "num_generated_tokens"),
            "prompt": _column(responses, "prompt"),
            "text": _column(responses, "text"),
            "reference": _column(responses, "reference"),
            "reasoning_end": _column(responses, "reasoning_end"),
            "answer_start": _column(responses, "answer_start"),
            "answer_end": _column(responses, "answer_end"),
            "precision": {g: [_rounded(by_r.get(g, {}).get(r)) for r in range(n_rows)] for g in unit_payload},
            "reference_units": reference_counts(key.task, responses, list(unit_payload)),
        },
        "summary": cell_summary(metrics) if metrics is not None else {},
        "units": unit_payload,
        "tokens": [token_rows.get(r) for r in range(n_rows)],
        "vocab": dict(zip(map(str, vocab["token_id"].to_list()), vocab["token_text"].to_list())),
    }


def _unit_payload(units: pl.DataFrame, index: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """Per granularity with units, one list per field: response ``r``, unit index, status, span, response
    and reference unit, token count and every confidence column (``index``: ``sample_id -> r``)."""
    columns = confidence_columns(units)
    unit_frame = units.join(index, on="sample_id").sort("r", "granularity", "unit_index")
    payload: dict[str, dict[str, Any]] = {}
    for granularity in GRANULARITIES:
        part = unit_frame.filter(pl.col("granularity") == granularity)
        if part.is_empty():
            continue
        payload[granularity] = {
            "r": _column(part, "r"),
            "i": _column(part, "unit_index"),
            "s": part["status"].cast(pl.String).to_list(),
            "a": _column(part, "span_start"),
            "b": _column(part, "span_end"),
            "u": _column(part, "response_unit"),
            "f": _column(part, "reference_unit"),
            "n": _column(part, "n_tokens"),
            "c": _values(part, columns),
        }
    return payload


def _rounded(value: float | None) -> float | None:
    """``value`` to :data:`DIGITS` decimals; ``None`` for none and for NaN (a precision without units)."""
    return None if value is None or value != value else round(float(value), DIGITS)


def reference_counts(
    task: str, responses: pl.DataFrame, granularities: Sequence[str]
) -> dict[str, list[Any]]:
    """Per granularity, the number of reference units ``G`` of each response's sample (``None`` without a
    reference): the task's own decomposition of the reference (docs/evaluation.md §3), the one the scoring
    stage aligned against. A response without an answer has no unit rows; its ``G`` units are all missing
    (docs/explorer.md §1). One decomposition per response and granularity (references are short)."""
    rules: dict[Any, Any] = {}
    out: dict[str, list[Any]] = {g: [] for g in granularities}
    for reference, variant in responses.select("reference", "variant").iter_rows():
        if reference is None:
            for g in granularities:
                out[g].append(None)
            continue
        rule = rules.get(variant) or rules.setdefault(variant, resolve_task(task, variant))
        for g in granularities:
            out[g].append(len(decompose(reference, rule, g)))  # type: ignore[arg-type]
    return out


def cell_summary(metrics: pl.DataFrame) -> dict[str, Any]:
    """The metrics stage's rows of one cell the page's summary header shows (docs/metrics.md §9):
    ``precision`` per granularity and ``auroc`` (``auroc_pooled``, uncalibrated) per granularity and
    ``{flavour}.{function}`` column, each ``[value, ci_low, ci_high, n_units, n_responses]`` (values to
    :data:`DIGITS` decimals, NaN as ``null``). AUROC is of the oriented confidence (higher = more confident;
    docs/confidence.md)."""
    if metrics.is_empty():
        return {}
    fields = [pl.col(c).cast(pl.Float64).fill_nan(None).round(DIGITS) for c in ("value", "ci_low", "ci_high")]
    rows = metrics.select(
        pl.col("granularity").cast(pl.String),
        pl.col("metric").cast(pl.String),
        (pl.col("flavour").cast(pl.String) + "." + pl.col("confidence").cast(pl.String)).alias("column"),
        pl.col("calibration").cast(pl.String),
        *fields,
        "n_units",
        "n_responses",
    )
    out: dict[str, Any] = {"precision": {}, "auroc": {}}
    for row in rows.filter(pl.col("metric") == "precision").iter_rows(named=True):
        out["precision"][row["granularity"]] = _summary_values(row)
    pooled = rows.filter((pl.col("metric") == "auroc_pooled") & (pl.col("calibration") == "none"))
    for row in pooled.iter_rows(named=True):
        out["auroc"].setdefault(row["granularity"], {})[row["column"]] = _summary_values(row)
    return out


def _summary_values(row: Mapping[str, Any]) -> list[Any]:
    return [row["value"], row["ci_low"], row["ci_high"], row["n_units"], row["n_responses"]]
