"""Strict positional pairing and dynamic (Needleman–Wunsch) alignment of units (SALT_FACTS §4.4, §4.6).

Both return index pairs ``(response_index, reference_index)`` with ``-1`` for a gap.

Dynamic alignment scores a diagonal step ``+match_score`` when the normalised units are equal and the
response unit is not a DK marker, ``-mismatch_penalty`` otherwise; a gap step costs ``-gap_penalty``.
With rows ``i`` = reference prefix and columns ``j`` = response prefix::

    S[0, j] = -gap * j,   S[i, 0] = -gap * i
    S[i, j] = max(S[i-1, j-1] + sub(i, j),   # diagonal: the pair (response j, reference i)
                  S[i-1, j] - gap,           # up: reference i against a gap -> missing
                  S[i, j-1] - gap)           # left: response j against a gap -> redundant

Ties are broken diagonal > up > left during the traceback from ``(G, R)``.

For integral scores a row is filled with three numpy calls: with ``U[i, j] = S[i, j] + gap * (i + j)``
the recurrence becomes ``U[i, j] = max(U[i-1, j-1] + sub(i, j) + 2 * gap, U[i-1, j], U[i, j-1])`` with
``U[0, :] = U[:, 0] = 0``, so a row is ``max(diagonal, up)`` followed by a running maximum
(``np.maximum.accumulate``), exact in int64. Non-integral scores use the plain recurrence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

IndexPairs = tuple[list[int], list[int]]


def strict_pairs(n_response: int, n_reference: int) -> IndexPairs:
    """Positional pairs ``(i, i)`` for ``i < max(R, G)``, ``-1`` where a side is exhausted."""
    n = max(n_response, n_reference)
    resp = list(range(n_response)) + [-1] * (n - n_response)
    ref = list(range(n_reference)) + [-1] * (n - n_reference)
    return resp, ref


def check_scores(match_score: float, mismatch_penalty: float, gap_penalty: float) -> None:
    if not match_score > 0:
        raise ValueError(f"match_score must be > 0, got {match_score!r}")
    if not mismatch_penalty >= 0:
        raise ValueError(f"mismatch_penalty must be >= 0, got {mismatch_penalty!r}")
    if not gap_penalty >= 0:
        raise ValueError(f"gap_penalty must be >= 0, got {gap_penalty!r}")


def _python_table(matches: np.ndarray, ms: float, mp: float, gp: float) -> list[list[float]]:
    """Plain O(R·G) fill, used for non-integral scores (exact float ties need the textbook recurrence)."""
    n_ref, n_resp = matches.shape
    rows = matches.tolist()
    table = [[-gp * j for j in range(n_resp + 1)]]
    for i in range(1, n_ref + 1):
        prev = table[-1]
        row = [-gp * i]
        hits = rows[i - 1]
        for j in range(1, n_resp + 1):
            row.append(max(prev[j - 1] + (ms if hits[j - 1] else -mp), prev[j] - gp, row[j - 1] - gp))
        table.append(row)
    return table


def score_table(matches: np.ndarray, match_score: float, mismatch_penalty: float, gap_penalty: float) -> np.ndarray:
    """The ``(G+1) x (R+1)`` score table for a boolean ``G x R`` match matrix (reference rows).

    Integral scores use the vectorised row fill (exact in int64); other scores use the plain recurrence.
    """
    n_ref, n_resp = matches.shape
    if not all(float(x).is_integer() for x in (match_score, mismatch_penalty, gap_penalty)):
        return np.asarray(_python_table(matches, match_score, mismatch_penalty, gap_penalty), dtype=np.float64)
    gp = int(gap_penalty)
    gain = np.where(matches, int(match_score) + 2 * gp, 2 * gp - int(mismatch_penalty)).astype(np.int64)
    table = np.zeros((n_ref + 1, n_resp + 1), dtype=np.int64)
    add, maximum, accumulate = np.add, np.maximum, np.maximum.accumulate
    for i in range(1, n_ref + 1):
        prev, row = table[i - 1], table[i]
        body = row[1:]
        add(prev[:-1], gain[i - 1], out=body)
        maximum(body, prev[1:], out=body)
        accumulate(row, out=row)
    table -= gp * (np.arange(n_ref + 1)[:, None] + np.arange(n_resp + 1)[None, :])
    return table


def dynamic_pairs(
    response_keys: Sequence[str],
    response_dk: Sequence[bool],
    reference_keys: Sequence[str],
    match_score: float = 2,
    mismatch_penalty: float = 1,
    gap_penalty: float = 1,
) -> IndexPairs:
    """Needleman–Wunsch index pairs of normalised units, in order (ties: diagonal > up > left)."""
    n_resp, n_ref = len(response_keys), len(reference_keys)
    if n_ref == 0 or n_resp == 0:
        return strict_pairs(n_resp, 0) if n_ref == 0 else strict_pairs(0, n_ref)
    if list(response_keys) == list(reference_keys) and not any(response_dk):
        # Identical sequences: the all-diagonal path scores R * match_score; any path with a gap has fewer
        # diagonal steps and scores strictly less, and the traceback takes the diagonal at every step.
        return strict_pairs(n_resp, n_ref)
    ids: dict[str, int] = {}
    ref_ids = np.fromiter((ids.setdefault(k, len(ids)) for k in reference_keys), dtype=np.int64, count=n_ref)
    resp_ids = np.fromiter(
        (-2 if dk else ids.get(k, -1) for k, dk in zip(response_keys, response_dk)), dtype=np.int64, count=n_resp
    )
    matches = ref_ids[:, None] == resp_ids[None, :]
    table = score_table(matches, match_score, mismatch_penalty, gap_penalty)
    S = table
    ms, mp, gp = match_score, mismatch_penalty, gap_penalty
    resp_out: list[int] = []
    ref_out: list[int] = []
    i, j = n_ref, n_resp
    while i > 0 or j > 0:
        if i > 0 and j > 0:
            here = S[i, j]
            sub = ms if matches[i - 1, j - 1] else -mp
            if here == S[i - 1, j - 1] + sub:
                i -= 1
                j -= 1
                resp_out.append(j)
                ref_out.append(i)
                continue
            if here == S[i - 1, j] - gp:
                i -= 1
                resp_out.append(-1)
                ref_out.append(i)
                continue
            j -= 1
            resp_out.append(j)
            ref_out.append(-1)
        elif i > 0:
            i -= 1
            resp_out.append(-1)
            ref_out.append(i)
        else:
            j -= 1
            resp_out.append(j)
            ref_out.append(-1)
    resp_out.reverse()
    ref_out.reverse()
    return resp_out, ref_out
