"""The scoring stage's single-pass estimators beyond the token functions (docs/confidence.md §4.6–4.7):
``topk.ccp`` (:func:`saltbench.evaluation.unit_ccp`) and ``trace.reasoning_tokens``, always computed where
their inputs exist."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from saltbench.core.contracts import confidence_column
from saltbench.core.vocabulary import TRACE_SOURCE, ReasoningFormat
from saltbench.evaluation import CcpTokens, resolve_task, strip_flags, unit_ccp

CCP_COLUMN = confidence_column("topk", "ccp")
"""Claim-conditioned probability, higher = more confident (docs/confidence.md §4.6)."""
REASONING_TOKENS_COLUMN = f"{TRACE_SOURCE}.reasoning_tokens"
"""Tokens of the reasoning trace, lower = more confident (docs/confidence.md §4.7)."""
SINGLE_PASS_COLUMNS: tuple[str, ...] = (CCP_COLUMN, REASONING_TOKENS_COLUMN)
"""The columns :func:`single_pass_columns` adds to a units table, in order."""


def ccp_tokens(joined: pl.DataFrame, tokens: dict[str, np.ndarray], task: str) -> CcpTokens:
    """The :class:`~saltbench.evaluation.CcpTokens` of a scoring stage's joined generations (one row per
    response, with ``variant``) and its flat token arrays."""
    counts = joined["num_generated_tokens"].to_numpy().astype(np.int64)
    rules = {variant: resolve_task(task, variant) for variant in joined["variant"].unique().to_list()}
    return CcpTokens(
        texts=joined["text"].to_list(),
        strip_spaces=strip_flags([rules[variant] for variant in joined["variant"].to_list()]),
        rows=np.repeat(np.arange(joined.height, dtype=np.int64), counts),
        offsets=joined["token_offsets"].explode().to_numpy().astype(np.int64),
        texts_of_tokens=joined["token_texts"].explode(),
        ids=np.asarray(tokens["token_ids"]),
        chosen=tokens["chosen"],
        topk=tokens["topk"],
        topk_ids=tokens["topk_ids"],
    )


def reasoning_tokens(
    units: pl.DataFrame,
    num_reasoning: np.ndarray,
    ccp: CcpTokens,
    reasoning: ReasoningFormat | None,
) -> np.ndarray:
    """(n_units,) ``trace.reasoning_tokens``: the response's tokens before its final content
    (``num_reasoning_tokens``, every token when the reasoning never ended) on its ``generation`` unit.

    NaN at atom and line units, without a reasoning format, for a response without a trace (0 reasoning
    tokens), and where a trace token has no log-probability (a trace put back as text, docs/reasoning.md §4:
    its token count is not the model's)."""
    out = np.full(units.height, np.nan)
    if reasoning is None or units.height == 0:
        return out
    n_rows = num_reasoning.size
    starts = np.searchsorted(ccp.rows, np.arange(n_rows))
    position = np.arange(ccp.rows.size) - starts[ccp.rows]
    as_text = np.isnan(ccp.chosen) & (position < num_reasoning[ccp.rows])
    unlogged = np.bincount(ccp.rows, weights=as_text, minlength=n_rows) > 0
    rows = units["row"].to_numpy().astype(np.int64)
    defined = (units["granularity"] == "generation").to_numpy() & (num_reasoning[rows] > 0) & ~unlogged[rows]
    return np.where(defined, num_reasoning[rows].astype(np.float64), np.nan)


def single_pass_columns(
    joined: pl.DataFrame,
    units: pl.DataFrame,
    tokens: dict[str, np.ndarray],
    pairs: tuple[np.ndarray, np.ndarray],
    num_reasoning: Sequence[int] | np.ndarray,
    *,
    task: str,
    top_k: int,
    reasoning: ReasoningFormat | None,
    vocabulary: pl.DataFrame | None = None,
) -> dict[str, np.ndarray]:
    """``{topk.ccp, trace.reasoning_tokens}`` of the units (rows of ``units``: ``row``, ``granularity``,
    ``span_start``, ``span_end``) from the (token, unit) membership ``pairs`` of the scoring stage;
    ``vocabulary``: token texts of the model's other files (:func:`saltbench.evaluation.token_vocabulary`)."""
    inputs = ccp_tokens(joined, tokens, task)
    spans = (
        units["span_start"].fill_null(0).to_numpy().astype(np.int64),
        units["span_end"].fill_null(0).to_numpy().astype(np.int64),
    )
    return {
        CCP_COLUMN: unit_ccp(
            inputs,
            pairs[0],
            pairs[1],
            spans,
            units.height,
            top_k=top_k,
            vocabulary=vocabulary,
            where=f"generations for {task}",
        ),
        REASONING_TOKENS_COLUMN: reasoning_tokens(
            units, np.asarray(num_reasoning, dtype=np.int64), inputs, reasoning
        ),
    }
