"""Scoring stage: generations -> one row per response unit with status and every confidence value.

Token -> unit alignment (fixes docs/compatibility.md §1.3 and §1.5):

* Units and their character spans come from the evaluator itself
  (:func:`saltbench.evaluation.evaluate_many`, columns ``span_start``/``span_end``), i.e. from the
  fenced answer that was actually extracted — not from the first textual occurrence of the answer —
  and the spans coincide with the evaluated units at every granularity, so every response unit gets a
  score.
* Token ``i`` covers the characters ``[o_i, o_{i+1})`` of the generated text (``o_T = len(text)``),
  from the offsets recorded at inference time.
* **Straddling rule** (the authors' rule, docs/confidence.md §3.4): a token belongs to every unit whose
  span it overlaps, ``o_i < end and o_{i+1} > start``; a token straddling two units (`` 7 8``,
  ``\\n6``) counts fully for
  both. A zero-length token (the bytes of a character completed by a later token) belongs to a unit
  when it lies strictly inside it. Tokens only covering whitespace or fences between units belong to
  no atom.

Each unit's tokens are a contiguous range found with two ``searchsorted`` calls per response; the
confidence functions then run vectorised over all (token, unit) pairs of the file at once
(:func:`saltbench.confidence.unit_confidences`). Confidence columns are named ``{flavour}.{function}``
and hold raw scores (direction: :data:`saltbench.confidence.CONFIDENCE_FUNCTIONS`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import cast

import numpy as np
import polars as pl

from saltbench.confidence import (
    PAPER_CONFIDENCE_NAMES,
    confidence_spec,
    extended_confidences,
    scored_columns,
    token_distributions,
    token_signals,
    unit_confidences,
)
from saltbench.core.contracts import UNIT_COLUMNS, confidence_column
from saltbench.core.vocabulary import (
    FLAVOURS,
    GRANULARITIES,
    FenceRule,
    Flavour,
    Granularity,
    ReasoningFormat,
)
from saltbench.evaluation import evaluate_many, final_content, response_status
from saltbench.stages._single_pass import SINGLE_PASS_COLUMNS, single_pass_columns

log = logging.getLogger(__name__)


def token_unit_pairs(
    token_offsets: np.ndarray, text_length: int, span_start: np.ndarray, span_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(token index, unit index) membership pairs for one response.

    Args:
        token_offsets: shape ``(T,)`` non-decreasing start offset of each token in the text.
        text_length: length of the generated text (end of the last token).
        span_start, span_end: shape ``(U,)`` unit spans ``[start, end)`` in the same text.

    Returns:
        Two int64 arrays of equal length: token indices and unit indices (units in order, tokens
        ascending within a unit).

    Example:
        >>> off = np.array([0, 1, 3, 4, 5, 7])  # tokens "5", " 4", "\\n", "6", " 7", " 8" of "5 4\\n6 7 8"
        >>> tok, unit = token_unit_pairs(off, 9, np.array([0, 2, 4, 6, 8]), np.array([1, 3, 5, 7, 9]))
        >>> tok.tolist(), unit.tolist()
        ([0, 1, 3, 4, 5], [0, 1, 2, 3, 4])
    """
    starts = np.asarray(token_offsets, dtype=np.int64)
    ends = np.append(starts[1:], text_length)
    s = np.asarray(span_start, dtype=np.int64)
    e = np.asarray(span_end, dtype=np.int64)
    first = np.searchsorted(ends, s, side="right")
    last = np.searchsorted(starts, e, side="left") - 1
    counts = np.maximum(last - first + 1, 0)
    unit = np.repeat(np.arange(s.size, dtype=np.int64), counts)
    offsets = np.cumsum(counts) - counts
    tok = np.repeat(first, counts) + (np.arange(unit.size, dtype=np.int64) - np.repeat(offsets, counts))
    return tok, unit


def _warn_missing_entropy(entropy: np.ndarray, where: str) -> None:
    """Log why ``full``-flavour entropy functions are NaN when some tokens have no recorded entropy."""
    missing = int(np.isnan(entropy).sum())
    if missing:
        log.warning(
            "%s: full-vocabulary entropy not recorded for %d of %d tokens (the vLLM backend does not return "
            "it): full.mean_entropy and full.max_entropy are NaN for the units holding them",
            where,
            missing,
            entropy.size,
        )


def _flat_token_arrays(gens: pl.DataFrame) -> dict[str, np.ndarray]:
    """Concatenate the per-token list columns of all rows into flat numpy arrays."""
    chosen_values = gens["chosen_logprob"].explode()
    chosen = chosen_values.to_numpy().astype(np.float64)
    token_ids = gens["token_ids"].explode().to_numpy()
    entropy = gens["entropy"].explode().to_numpy().astype(np.float64)
    topk_rows = gens["topk_logprobs"].explode()
    topk_id_rows = gens["topk_ids"].explode()
    n_tokens = int(gens["num_generated_tokens"].sum()) if gens.height else 0
    k = int(cast("int | None", topk_rows.list.len().max()) or 0) if n_tokens else 0
    if n_tokens:
        topk = np.asarray(topk_rows.list.to_array(k).to_numpy(), dtype=np.float32).reshape(n_tokens, k)
        topk_ids = np.asarray(topk_id_rows.list.to_array(k).to_numpy()).reshape(n_tokens, k)
    else:
        topk, topk_ids = np.zeros((0, 0), np.float32), np.zeros((0, 0), np.int32)
    if chosen.size != n_tokens or chosen_values.null_count():
        raise ValueError(
            f"generations: per-token columns are inconsistent ({chosen.size} log-probabilities for "
            f"{n_tokens} tokens, or nulls inside a generation)"
        )
    return {"chosen": chosen, "token_ids": token_ids, "entropy": entropy, "topk": topk, "topk_ids": topk_ids}


_UNIT_ORDER: tuple[str, ...] = tuple(c for c in UNIT_COLUMNS if c not in ("model", "style", "task"))
"""The units table's columns that :func:`score_generations` writes (the rule adds model, style, task in
front), in order."""


def score_generations(
    generations: pl.DataFrame,
    dataset: pl.DataFrame,
    task: str,
    *,
    granularities: Sequence[Granularity] = GRANULARITIES,
    alignment: str = "strict",
    keyword_filter: bool = True,
    flavours: Sequence[Flavour] = FLAVOURS,
    top_k: int = 20,
    functions: Sequence[str] = PAPER_CONFIDENCE_NAMES,
    reasoning: ReasoningFormat | None = None,
    fence_rule: FenceRule = "positional",
    max_new_tokens: int = 0,
    vocabulary: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The units table of one (model, style, task) generations file.

    Args:
        generations: the inference stage's frame (one row per sample; ``sample_id``, ``text``, the
            per-token list columns of :mod:`saltbench.inference.records`).
        dataset: the task's dataset frame (``sample_id, variant, reference``).
        task: task slug.
        granularities, alignment, keyword_filter: evaluation settings.
        flavours: ``"topk"`` (renormalised top-k, the paper's) and/or ``"full"`` (true probabilities,
            full-vocabulary entropy).
        top_k: length of the renormalised vector of the ``topk`` flavour.
        functions: the confidence functions scored (names of
            :data:`saltbench.confidence.CONFIDENCE_FUNCTIONS`), each in the flavours it supports.
        reasoning: the model's reasoning format (its registry entry's ``reasoning_format``): units come from
            the final content after the reasoning only, never from the thinking (docs/reasoning.md §2).
        fence_rule: which fence tokens count (``scoring.fence_rule``; docs/compatibility.md §1.3).
        max_new_tokens: the generation budget the responses had (0: unknown), for the health table.
        vocabulary: the texts of the token ids the model chose in its other files
            (:func:`saltbench.evaluation.token_vocabulary`), for ``topk.ccp``'s alternatives.

    Returns:
        One row per unit and granularity: ``sample_id, variant``, the response's ``answer_status,
        finish_reason, num_generated_tokens, num_reasoning_tokens, max_new_tokens``, then ``granularity,
        unit_index, status, is_correct, response_unit, reference_unit, span_start, span_end, n_tokens``,
        one Float64 column per ``{flavour}.{function}`` (NaN for missing units, which have no response text),
        then ``topk.ccp`` and ``trace.reasoning_tokens`` (:mod:`saltbench.stages._single_pass`).
    """
    joined = _join_references(generations, dataset, task)
    tokens = _flat_token_arrays(joined)
    units = _evaluated_units(joined, task, granularities, alignment, keyword_filter, reasoning, fence_rule)
    if units is None:
        return _empty_units(flavours, functions)
    token_index, unit_index = _membership_pairs(joined, units)
    if "full" in flavours:
        _warn_missing_entropy(tokens["entropy"], f"generations for {task}")
    columns = confidence_columns(
        tokens, token_index, unit_index, units.height, flavours=flavours, top_k=top_k, functions=functions
    )
    responses = _response_frame(joined, keyword_filter, reasoning, fence_rule, max_new_tokens)
    columns |= single_pass_columns(
        joined,
        units,
        tokens,
        (token_index, unit_index),
        responses["num_reasoning_tokens"].to_numpy(),
        task=task,
        top_k=top_k,
        reasoning=reasoning,
        vocabulary=vocabulary,
    )
    scored = units.join(responses, on="row", how="left").with_columns(
        **{name: pl.Series(values) for name, values in columns.items()}
    )
    return scored.select([*_UNIT_ORDER, *(name for name in columns if name != "n_tokens")])


def _join_references(generations: pl.DataFrame, dataset: pl.DataFrame, task: str) -> pl.DataFrame:
    """The generations with their sample's ``variant`` and ``reference`` and a ``row`` index; refuses
    sample ids that are not in the dataset."""
    references = dataset.select("sample_id", "variant", "reference")
    joined = generations.join(references, on="sample_id", how="left", validate="1:1")
    unmatched = joined.filter(pl.col("reference").is_null())["sample_id"].to_list()
    if unmatched:
        raise ValueError(f"generations for {task}: sample ids not in the dataset: {unmatched[:5]}")
    return joined.with_row_index("row")


def _evaluated_units(
    joined: pl.DataFrame,
    task: str,
    granularities: Sequence[Granularity],
    alignment: str,
    keyword_filter: bool,
    reasoning: ReasoningFormat | None,
    fence_rule: FenceRule,
) -> pl.DataFrame | None:
    """Every response's evaluated units (one :func:`evaluate_many` call per variant) with their generation's
    ``row``, sorted by row, granularity and unit; ``None`` when there are none."""
    parts: list[pl.DataFrame] = []
    for (variant,), group in joined.group_by(["variant"], maintain_order=True):
        evaluated = evaluate_many(
            group["text"].to_list(),
            group["reference"].to_list(),
            task,
            variant=variant,
            granularities=granularities,
            alignment=alignment,  # type: ignore[arg-type]
            keyword_filter=keyword_filter,
            reasoning=reasoning,
            fence_rule=fence_rule,
        )
        rows = group["row"].to_numpy()
        parts.append(
            evaluated.with_columns(row=pl.Series(rows[evaluated["sample_idx"].to_numpy()], dtype=pl.UInt32))
        )
    units = pl.concat(parts).sort("row", "granularity", "unit_index") if parts else None
    return None if units is None or units.height == 0 else units


def _membership_pairs(joined: pl.DataFrame, units: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(token, unit) membership pairs of every unit with a span (:func:`token_unit_pairs` per response),
    tokens in the flat numbering of all responses and units numbered as the rows of ``units``."""
    token_base = np.concatenate([[0], np.cumsum(joined["num_generated_tokens"].to_numpy())])
    unit_numbers = np.flatnonzero(units["span_start"].is_not_null().to_numpy())
    spanned = units.filter(pl.col("span_start").is_not_null())
    span_start = spanned["span_start"].to_numpy()
    span_end = spanned["span_end"].to_numpy()
    texts = joined["text"].to_list()
    offsets = joined["token_offsets"].to_list()
    token_parts: list[np.ndarray] = []
    unit_parts: list[np.ndarray] = []
    for (row,), positions in _row_groups(spanned["row"].to_numpy()):
        token_indices, unit_indices = token_unit_pairs(
            np.asarray(offsets[row], dtype=np.int64),
            len(texts[row]),
            span_start[positions],
            span_end[positions],
        )
        token_parts.append(token_indices + token_base[row])
        unit_parts.append(unit_numbers[positions][unit_indices])
    token_index = np.concatenate(token_parts) if token_parts else np.zeros(0, np.int64)
    unit_index = np.concatenate(unit_parts) if unit_parts else np.zeros(0, np.int64)
    return token_index, unit_index


def _response_frame(
    joined: pl.DataFrame,
    keyword_filter: bool,
    reasoning: ReasoningFormat | None,
    fence_rule: FenceRule,
    max_new_tokens: int,
) -> pl.DataFrame:
    """One row per generation: ``row, sample_id, variant``, the :func:`response_columns` and
    ``max_new_tokens``."""
    return joined.select("row", "sample_id", "variant").with_columns(
        *response_columns(joined, keyword_filter=keyword_filter, reasoning=reasoning, fence_rule=fence_rule),
        max_new_tokens=pl.lit(max_new_tokens, dtype=pl.Int32),
    )


def response_columns(
    gens: pl.DataFrame,
    *,
    keyword_filter: bool = True,
    reasoning: ReasoningFormat | None = None,
    fence_rule: FenceRule = "positional",
) -> list[pl.Series]:
    """The response-level columns of the units table, one value per generation of ``gens``:
    ``answer_status`` (:func:`saltbench.evaluation.response_status`), ``finish_reason``,
    ``num_generated_tokens`` and ``num_reasoning_tokens`` — the tokens that start before the final content
    (:func:`saltbench.evaluation.final_content`), every token when the reasoning never ended, 0 without a
    reasoning format."""
    texts = gens["text"].to_list()
    finish = gens["finish_reason"].to_list()
    statuses = [
        response_status(
            text, reason, keyword_filter=keyword_filter, reasoning=reasoning, fence_rule=fence_rule
        )
        for text, reason in zip(texts, finish, strict=True)
    ]
    generated = gens["num_generated_tokens"].to_list()
    if reasoning is None:
        thinking = [0] * gens.height
    else:
        thinking = []
        for text, offsets, n in zip(texts, gens["token_offsets"].to_list(), generated, strict=True):
            content = final_content(text, reasoning)
            thinking.append(n if content is None else int(np.searchsorted(np.asarray(offsets), content[0])))
    return [
        pl.Series("answer_status", statuses, dtype=UNIT_COLUMNS["answer_status"]),
        pl.Series("finish_reason", finish, dtype=UNIT_COLUMNS["finish_reason"]),
        pl.Series("num_generated_tokens", generated, dtype=pl.Int32),
        pl.Series("num_reasoning_tokens", thinking, dtype=pl.Int32),
    ]


def confidence_columns(
    tokens: dict[str, np.ndarray],
    token_index: np.ndarray,
    unit_index: np.ndarray,
    n_units: int,
    *,
    flavours: Sequence[Flavour],
    top_k: int,
    functions: Sequence[str] = PAPER_CONFIDENCE_NAMES,
) -> dict[str, np.ndarray]:
    """Every confidence column of ``n_units`` units: ``n_tokens``, then ``{flavour}.{function}`` for each
    pair of :func:`saltbench.confidence.scored_columns` (flavour by flavour, in the order of ``functions``).

    The one span → confidence path of the package (the scoring stage and the interventions both use it):
    the paper's nine from :func:`~saltbench.confidence.unit_confidences`, functions with a ``token_score``
    from :func:`~saltbench.confidence.extended_confidences`.

    Args:
        tokens: flat per-token arrays of all responses: ``chosen`` (T,),
            ``token_ids`` (T,), ``entropy`` (T,), ``topk`` and ``topk_ids`` (T, k).
        token_index, unit_index: (token, unit) membership pairs (:func:`token_unit_pairs`, shifted to the
            flat token numbering); a unit without pairs gets ``n_tokens`` 0 and NaN confidences.
        n_units: number of units.
        flavours, top_k: see :func:`saltbench.confidence.token_signals`.
        functions: the confidence functions scored.

    A token without a log-probability (``chosen`` NaN: an imported response without log-probabilities,
    docs/backends.md §9.4) makes every confidence of each unit holding it NaN, in every flavour.
    """
    columns: dict[str, np.ndarray] = {"n_tokens": np.bincount(unit_index, minlength=n_units).astype(np.int64)}
    absent = np.isnan(tokens["chosen"])
    unscored = None
    if absent.any():
        unscored = np.bincount(unit_index, weights=absent[token_index], minlength=n_units) > 0
        tokens = {**tokens, "chosen": np.where(absent, 0.0, tokens["chosen"])}
    chosen_in_topk = tokens["topk_ids"] == tokens["token_ids"][:, None] if tokens["topk"].size else None
    pairs = scored_columns(functions, flavours)
    for flavour in flavours:
        names = [n for f, n in pairs if f == flavour and confidence_column(f, n) not in SINGLE_PASS_COLUMNS]
        paper = [n for n in names if confidence_spec(n).token_score is None]
        extended = tuple(confidence_spec(n) for n in names if n not in paper)
        values: dict[str, np.ndarray] = {}
        if paper:
            log_p, entropy = token_signals(
                tokens["chosen"],
                tokens["topk"],
                tokens["entropy"],
                flavour,
                chosen_in_topk=chosen_in_topk,
                top_k=top_k,
            )
            values.update(unit_confidences(log_p, entropy, token_index, unit_index, n_units))
        if extended:
            distributions = token_distributions(
                tokens["chosen"],
                tokens["topk"],
                tokens["entropy"],
                flavour,
                chosen_in_topk=chosen_in_topk,
                top_k=top_k,
            )
            values.update(extended_confidences(distributions, token_index, unit_index, n_units, extended))
        for name in names:
            column = np.asarray(values[name], dtype=np.float64)
            columns[confidence_column(flavour, name)] = (
                column if unscored is None else np.where(unscored, np.nan, column)
            )
    return columns


def _row_groups(rows: np.ndarray) -> list[tuple[tuple[int], np.ndarray]]:
    """Indices of each run of equal values in the sorted ``rows`` array."""
    if rows.size == 0:
        return []
    cuts = np.flatnonzero(np.diff(rows)) + 1
    bounds = np.concatenate([[0], cuts, [rows.size]])
    return [((int(rows[a]),), np.arange(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]


def _empty_units(flavours: Sequence[Flavour], functions: Sequence[str]) -> pl.DataFrame:
    schema = {name: UNIT_COLUMNS[name] for name in _UNIT_ORDER}
    for flavour, name in scored_columns(functions, flavours):
        schema[confidence_column(flavour, name)] = pl.Float64()
    return pl.DataFrame(schema=schema | dict.fromkeys(SINGLE_PASS_COLUMNS, pl.Float64()))
