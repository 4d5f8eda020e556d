"""Generated responses for the claim-conditioned probability tests and cross-check (docs/confidence.md §4.6):
tokens are pieces of :data:`PIECES` by id, each with its stored alternatives."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from saltbench.evaluation import CcpTokens, unit_ccp
from saltbench.inference.records import PAD_ID
from saltbench.stages.scoring import token_unit_pairs

PIECES = ["A", "B", "AB", " ", " A", "*", "**", "\n", "\r", "\r\n", "\t", "", "  B", "A ", "é", "B\r"]
"""Token texts of the generated cases; a token's id is its index (ids beyond the list have no text)."""

EVERY_PIECE = [(i, -0.1, []) for i in range(len(PIECES))]
"""A response choosing every piece once (so that every alternative's text is known)."""


def ccp_inputs(responses, strips, top_k):
    """CcpTokens of generated responses (lists of (id, chosen log-prob, [(alt id, log-prob)]))."""
    width = max(top_k, max((len(s) for r in responses for _, _, s in r), default=0))
    rows, offsets, texts_of_tokens, ids, chosen, topk, topk_ids = [], [], [], [], [], [], []
    for row, tokens in enumerate(responses):
        position = 0
        for token_id, lp, stored in tokens:
            rows.append(row)
            offsets.append(position)
            position += len(PIECES[token_id])
            texts_of_tokens.append(PIECES[token_id])
            ids.append(token_id)
            chosen.append(lp)
            padded = stored + [(PAD_ID, math.nan)] * (width - len(stored))
            topk_ids.append([i for i, _ in padded])
            topk.append([v for _, v in padded])
    return CcpTokens(
        texts=["".join(PIECES[i] for i, _, _ in tokens) for tokens in responses],
        strip_spaces=np.array(strips, dtype=bool),
        rows=np.array(rows, dtype=np.int64),
        offsets=np.array(offsets, dtype=np.int64),
        texts_of_tokens=pl.Series(texts_of_tokens, dtype=pl.String),
        ids=np.array(ids, dtype=np.int64),
        chosen=np.array(chosen, dtype=np.float64),
        topk=np.array(topk, dtype=np.float64).reshape(len(rows), width),
        topk_ids=np.array(topk_ids, dtype=np.int64).reshape(len(rows), width),
    )


def first_response_ccp(
    tokens: CcpTokens, n_tokens: int, spans: list[tuple[int, int]], top_k: int
) -> np.ndarray:
    """:func:`unit_ccp` of units with ``spans`` in the first response (its ``n_tokens`` tokens)."""
    text = tokens.texts[0]
    offsets = tokens.offsets[:n_tokens]
    pairs = [token_unit_pairs(offsets, len(text), np.array([s]), np.array([e]))[0] for s, e in spans]
    return unit_ccp(
        tokens,
        np.concatenate(pairs),
        np.repeat(np.arange(len(spans)), [p.size for p in pairs]),
        (np.array([s for s, _ in spans]), np.array([e for _, e in spans])),
        len(spans),
        top_k=top_k,
    )
