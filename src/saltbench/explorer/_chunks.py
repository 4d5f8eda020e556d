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
from saltbench.core.vocabulary import GRANULARITIES, RESPONSE_STATUSES
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
) -> dict[str, Any]:
    """The chunk of one (model, style, task) as plain lists (JSON-ready).

    ``responses``: one entry per generation (its row ``r``), with the per-response precision of each
    granularity (:func:`saltbench.stages.metrics.response_accuracy`, the metrics stage's definition:
    ``C / (R + I)``); ``units``: per granularity, one entry per unit with its response ``r``; ``tokens``:
    per response with an answer, the tokens of the answer (offsets into the text); ``vocab``: the texts of
    the alternative token ids of this chunk that the model generated somewhere in the run.
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
    columns = confidence_columns(units)
    unit_frame = units.join(index, on="sample_id").sort("r", "granularity", "unit_index")
    unit_payload = {}
    for granularity in GRANULARITIES:
        part = unit_frame.filter(pl.col("granularity") == granularity)
        if part.is_empty():
            continue
        unit_payload[granularity] = {
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
        },
        "units": unit_payload,
        "tokens": [token_rows.get(r) for r in range(n_rows)],
        "vocab": dict(zip(map(str, vocab["token_id"].to_list()), vocab["token_text"].to_list())),
    }


def _rounded(value: float | None) -> float | None:
    """``value`` to :data:`DIGITS` decimals; ``None`` for none and for NaN (a precision without units)."""
    return None if value is None or value != value else round(float(value), DIGITS)


def chunk_candidates(
    chunk_id: int, units: pl.DataFrame, responses: Mapping[str, int], n: int
) -> pl.DataFrame:
    """This chunk's entries for the run-wide lists (docs/explorer.md §1, "Confident and wrong"): per
    confidence column and granularity, the ``n`` wrong response units (status other than correct) with the
    highest oriented confidence (``kind = "wrong"``) and the ``n`` correct units with the lowest
    (``kind = "right"``).

    ``responses``: ``sample_id -> r``. The oriented value is the raw value times :func:`orientation`, so
    that higher always means more confident.
    """
    columns = confidence_columns(units)
    scored = units.filter(pl.col("status").cast(pl.String).is_in(RESPONSE_STATUSES)).select(
        "sample_id",
        pl.col("granularity").cast(pl.String),
        "unit_index",
        pl.col("status").cast(pl.String),
        "response_unit",
        "reference_unit",
        *columns,
    )
    schema: dict[str, pl.DataType] = {
        "chunk": pl.Int64(),
        "r": pl.Int64(),
        "sample_id": pl.String(),
        "column": pl.String(),
        "granularity": pl.String(),
        "kind": pl.String(),
        "unit_index": pl.Int64(),
        "status": pl.String(),
        "value": pl.Float64(),
        "oriented": pl.Float64(),
        "response_unit": pl.String(),
        "reference_unit": pl.String(),
    }
    if scored.is_empty() or not columns:
        return pl.DataFrame(schema=schema)
    signs = pl.DataFrame({"column": columns, "sign": [float(orientation(c)) for c in columns]})
    long = (
        scored.unpivot(
            on=columns,
            index=["sample_id", "granularity", "unit_index", "status", "response_unit", "reference_unit"],
            variable_name="column",
        )
        .filter(pl.col("value").is_finite())
        .join(signs, on="column")
        .with_columns(oriented=pl.col("value") * pl.col("sign"))
    )
    r_of = pl.DataFrame(
        {"sample_id": list(responses), "r": list(responses.values())},
        schema={"sample_id": pl.String, "r": pl.Int64},
    )
    keys = ["column", "granularity"]
    long = long.join(r_of, on="sample_id").with_columns(unit_index=pl.col("unit_index").cast(pl.Int64))
    order = ["column", "granularity", "oriented", "r", "unit_index"]  # a total order: ties never reorder

    def extremes(units: pl.DataFrame, most_confident: bool) -> pl.DataFrame:
        ranked = units.sort(order, descending=[False, False, most_confident, False, False])
        return ranked.group_by(keys, maintain_order=True).head(n)

    both = pl.concat(
        [
            extremes(long.filter(pl.col("status") != "correct"), True).with_columns(kind=pl.lit("wrong")),
            extremes(long.filter(pl.col("status") == "correct"), False).with_columns(kind=pl.lit("right")),
        ]
    )
    return (
        both.with_columns(chunk=pl.lit(chunk_id, pl.Int64)).select(list(schema)).cast(schema)  # type: ignore[arg-type]
    )


def run_lists(candidates: pl.DataFrame, n: int) -> dict[str, dict[str, dict[str, list[list[Any]]]]]:
    """The run-wide lists from every chunk's candidates: ``{column: {granularity: {"wrong": [...],
    "right": [...]}}}``, each entry ``[chunk, sample_id, unit_index, status, value, response_unit,
    reference_unit]``; "wrong": highest oriented confidence first, "right": lowest first (ties: chunk,
    response, unit). Columns, granularities and kinds in sorted order."""
    out: dict[str, dict[str, dict[str, list[list[Any]]]]] = {}
    if candidates.is_empty():
        return out
    groups = candidates.sort("column", "granularity", "kind").group_by(
        "column", "granularity", "kind", maintain_order=True
    )  # keys in sorted order, so the manifest is the same bytes on every build (docs/explorer.md §2)
    for (column, granularity, kind), part in groups:
        order = part.sort(
            ["oriented", "chunk", "r", "unit_index"], descending=[kind == "wrong", False, False, False]
        ).head(n)
        rows = order.select(
            "chunk",
            "sample_id",
            "unit_index",
            "status",
            pl.col("value").round(DIGITS),
            "response_unit",
            "reference_unit",
        ).rows()
        out.setdefault(str(column), {}).setdefault(str(granularity), {})[str(kind)] = [list(x) for x in rows]
    return out
