"""Compiled rows of the integer Needleman–Wunsch table (docs/evaluation.md §6.1–6.2, §6.5).

The recurrence and the two traceback planes of :mod:`saltbench.evaluation._alignment` (see its module
docstring) in numba: a numpy formulation needs three array calls per table row, which for the tables of a
typical answer (a hundred units or so) cost far more than the cells themselves.

With ``U[i, j] = S[i, j] + gap * (i + j)`` in integer scores, ``gain = sub + 2 * gap``::

    U[i, j] = max(U[i-1, j-1] + gain(i, j), U[i-1, j], U[i, j-1]),   U[i, 0] = U[i-1, 0]
    diag[i, j]  = U[i, j] == U[i-1, j-1] + gain(i, j)
    leave[i, j] = diag[i, j] or U[i, j] == U[i-1, j]

Imported on first use by ``_alignment`` (importing numba and compiling take about a second; the compiled
code is cached on disk next to this file).
"""

from __future__ import annotations

import numba  # type: ignore[import-untyped]
import numpy as np


@numba.njit(cache=True, nogil=True)
def _fill_row(
    prev: np.ndarray,
    cur: np.ndarray,
    hits: np.ndarray,
    gain_hit: int,
    gain_miss: int,
    diag: np.ndarray,
    leave: np.ndarray,
) -> None:
    """Row ``U[i]`` into ``cur`` from row ``U[i-1]`` (``prev``); ``hits[j]``: reference unit ``i`` matches
    response unit ``j``. The row's planes are written into ``diag`` and ``leave`` unless they are empty.

    Three passes, two of them free of dependencies between cells: ``max(diagonal, up)``, then the running
    maximum (the left steps), then the planes.
    """
    n = len(hits)
    cur[0] = prev[0]  # U[i, 0] = U[i-1, 0]
    for j in range(n):
        via_diag = prev[j] + (gain_hit if hits[j] else gain_miss)
        up = prev[j + 1]
        cur[j + 1] = via_diag if via_diag > up else up
    best = cur[0]
    for j in range(1, n + 1):
        if cur[j] < best:
            cur[j] = best
        else:
            best = cur[j]
    if len(diag):
        for j in range(n):
            is_diag = cur[j + 1] == prev[j] + (gain_hit if hits[j] else gain_miss)
            diag[j] = is_diag
            leave[j] = is_diag | (cur[j + 1] == prev[j + 1])


@numba.njit(cache=True, nogil=True)
def fill_rows(
    prev: np.ndarray,
    hits: np.ndarray,
    gain_hit: int,
    gain_miss: int,
    diag: np.ndarray,
    leave: np.ndarray,
) -> None:
    """Advance ``prev`` (row ``U[i0]``, int64, length ``R + 1``) by ``len(hits)`` rows, in place.

    ``hits[r, j]``: reference unit ``i0 + r`` matches response unit ``j``. When ``diag`` and ``leave``
    (uint8, ``len(hits) x R``) have rows, the planes of the new rows are written into them; pass arrays
    with no rows to skip the planes.
    """
    rows = hits.shape[0]
    no_planes = np.empty(0, dtype=np.uint8)
    older, newer = prev, np.empty_like(prev)
    for r in range(rows):
        if diag.shape[0]:
            _fill_row(older, newer, hits[r], gain_hit, gain_miss, diag[r], leave[r])
        else:
            _fill_row(older, newer, hits[r], gain_hit, gain_miss, no_planes, no_planes)
        older, newer = newer, older
    if rows % 2:  # the last row is in the other buffer
        prev[:] = older


@numba.njit(cache=True, nogil=True)
def fill_many(
    ref_ids: np.ndarray,
    ref_starts: np.ndarray,
    resp_ids: np.ndarray,
    resp_starts: np.ndarray,
    gain_hit: int,
    gain_miss: int,
    diag: np.ndarray,
    leave: np.ndarray,
) -> None:
    """The planes of many problems in one call: problem ``p`` has reference ids
    ``ref_ids[ref_starts[p]:ref_starts[p + 1]]`` (``G`` of them) and response ids likewise (``R``); its
    ``G x R`` planes are written row by row into the flat ``diag`` and ``leave`` from offset
    ``sum of G * R over the earlier problems``. A match is an equality of ids."""
    offset = 0
    hits = np.empty(len(resp_ids), dtype=np.bool_)
    older = np.empty(len(resp_ids) + 1, dtype=np.int64)
    newer = np.empty(len(resp_ids) + 1, dtype=np.int64)
    for p in range(len(ref_starts) - 1):
        resp = resp_ids[resp_starts[p] : resp_starts[p + 1]]
        n_resp = len(resp)
        older[: n_resp + 1] = 0
        for i in range(ref_starts[p], ref_starts[p + 1]):
            ref = ref_ids[i]
            for j in range(n_resp):
                hits[j] = resp[j] == ref
            end = offset + n_resp
            _fill_row(older, newer, hits[:n_resp], gain_hit, gain_miss, diag[offset:end], leave[offset:end])
            older, newer = newer, older
            offset = end
