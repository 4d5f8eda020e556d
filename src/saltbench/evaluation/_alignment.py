"""Strict positional pairing and dynamic (Needleman–Wunsch) alignment of units (docs/evaluation.md §5–6).

Both return index pairs ``(response_index, reference_index)`` with ``-1`` for a gap.

Dynamic alignment scores a diagonal step ``+match_score`` when the normalised units are equal and the
response unit is not a DK marker, ``-mismatch_penalty`` otherwise; a gap step costs ``-gap_penalty``.
With rows ``i`` = reference prefix and columns ``j`` = response prefix::

    S[0, j] = -gap * j,   S[i, 0] = -gap * i
    S[i, j] = max(S[i-1, j-1] + sub(i, j),   # diagonal: the pair (response j, reference i)
                  S[i-1, j] - gap,           # up: reference i against a gap -> missing
                  S[i, j-1] - gap)           # left: response j against a gap -> redundant

Ties are broken diagonal > up > left during the traceback from ``(G, R)``: at cell ``(i, j)`` the path
steps diagonally when ``S[i, j] == S[i-1, j-1] + sub(i, j)``, else up when ``S[i, j] == S[i-1, j] - gap``,
else left (on the borders: up in column 0, left in row 0).

**Integer rows.** The three scores are first written as integers with a common denominator (exact, via
``fractions.Fraction``: ``(2, 1, 1)`` stays ``(2, 1, 1)``, ``(1.5, 0.5, 0.25)`` becomes ``(6, 2, 1)``), which
changes neither the maxima nor the ties. With ``U[i, j] = S[i, j] + gap * (i + j)`` the recurrence becomes
``U[i, j] = max(U[i-1, j-1] + sub(i, j) + 2 * gap, U[i-1, j], U[i, j-1])`` with ``U[0, :] = U[:, 0] = 0``,
so a row is ``max(diagonal, up)`` followed by a running maximum (``np.maximum.accumulate``), exact in int64,
and the traceback tests become ``U[i, j] == U[i-1, j-1] + sub(i, j) + 2 * gap`` (diagonal) and
``U[i, j] == U[i-1, j]`` (up). The integer path is used when ``max(scaled scores) * (G + R + 2) < 2**53``;
then every partial sum of the textbook float recurrence is exact as well, so both give the same path.
Other scores (``0.1`` has a 55-bit denominator) use the textbook recurrence in Python floats.

**Memory.** The score table is never stored whole. Rows are filled in chunks (at most
:data:`WORK_BUDGET` bytes of int64 work arrays, at least one row) and each chunk is reduced to two bit
planes: ``diag[i, j]`` (the diagonal test holds) and ``leave[i, j]`` (the diagonal or the up test holds,
i.e. the traceback leaves row ``i`` at column ``j``), packed 8 cells per byte, ``G * R / 4`` bytes for the
whole table (tables of at most :data:`UNPACKED_CELLS` cells keep one byte per cell and skip the packing).
The traceback is exact from the planes: in row ``i``, coming from column ``j``, it goes left
to the last column ``k <= j`` with ``leave[i, k]`` (``k = 0`` if none, where it goes up), emitting the
response units ``k+1 .. j`` as redundant, then steps diagonally if ``diag[i, k]``, else up.

When the planes of all ``G`` rows would exceed :data:`DIRECTION_BUDGET` bytes, the rows are processed in
blocks of ``B = max(DIRECTION_BUDGET // bytes_per_row, ceil(sqrt(32 * G)))`` rows: a first pass keeps only
the score rows at the block starts (checkpoints); the traceback then recomputes one block at a time from
its checkpoint, last block first, which yields exactly the same planes. Memory is then ``B * R / 4`` bytes
of planes plus ``ceil(G / B)`` checkpoint rows of ``8 * (R + 1)`` bytes, ``O(R * sqrt(G))`` at worst, for
at most twice the work. A 1 MB response (500,000 units) against a 260-unit Kronecker reference is one
block with 33 MB of planes (the former full int64 table and its temporaries took over 3 GB).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

IndexPairs = tuple[list[int], list[int]]
Planes = tuple[np.ndarray, np.ndarray]
"""Packed ``diag`` and ``leave`` bits of a chunk of rows, ``rows x ceil(R / 8)`` uint8 each; bit ``j - 1``
of a row (``np.packbits`` order) is column ``j``."""

DIRECTION_BUDGET = 64 * 2**20
"""Bytes of packed traceback bits held at once before the rows are processed in checkpointed blocks."""

WORK_BUDGET = 16 * 2**20
"""Bytes of int64 work arrays per chunk of rows filled at once (at least one row)."""

UNPACKED_CELLS = 2**20
"""Tables of at most this many cells keep their planes as booleans (1 byte per cell, no packing)."""

_EXACT_FLOAT = 2**53

HitRows = Callable[[int, int], np.ndarray]
"""``hit_rows(a, b)``: boolean match matrix of reference units ``a .. b-1`` against all response units."""


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


def integer_scores(
    match_score: float, mismatch_penalty: float, gap_penalty: float, n_steps: int
) -> tuple[tuple[int, int, int], int] | None:
    """``((ms, mp, gp), scale)``: the scores times their common denominator ``scale``, as exact integers.

    ``None`` when a score is not finite or ``max(ms, mp, gp) * (n_steps + 2) >= 2**53`` (then the float
    recurrence may round, and the caller uses it instead).
    """
    scaled = _scaled(match_score, mismatch_penalty, gap_penalty)
    if scaled is None or max(scaled[0]) * (n_steps + 2) >= _EXACT_FLOAT:
        return None
    return scaled


@functools.lru_cache(maxsize=64)
def _scaled(*scores: float) -> tuple[tuple[int, int, int], int] | None:
    """The scores times ``lcm`` of their exact denominators, and that ``lcm``; ``None`` if not finite."""
    try:
        fractions = [Fraction(x) for x in scores]
    except (TypeError, ValueError, OverflowError):
        return None
    scale = math.lcm(*(f.denominator for f in fractions))
    ms, mp, gp = (int(f * scale) for f in fractions)
    return (ms, mp, gp), scale


class _IntegerRows:
    """Rows ``U[i, :]`` of the shifted integer table (module docstring) and their packed bit planes.

    ``hit_rows(a, b)`` is the boolean ``(b - a) x R`` match matrix of reference units ``a .. b-1`` (table
    rows ``a+1 .. b``) against the response units. Rows are filled in chunks of at most
    :data:`WORK_BUDGET` bytes of int64 work arrays: three numpy calls per row, then whole-chunk comparisons.
    """

    def __init__(self, hit_rows: HitRows, n_resp: int, ms: int, mp: int, gp: int) -> None:
        self.hit_rows = hit_rows
        self.n = n_resp
        self.gp = gp
        self.gain_hit = ms + 2 * gp  # sub + 2 * gap of a match
        self.gain_miss = 2 * gp - mp  # and of a mismatch

    def first(self) -> np.ndarray:
        return np.zeros(self.n + 1, dtype=np.int64)

    def fill(
        self, prev: np.ndarray, i0: int, i1: int, planes: bool, pack: bool = True
    ) -> tuple[np.ndarray, list[Planes]]:
        """Row ``i1`` from row ``i0`` (``prev``) and, if wanted, the planes of rows ``i0+1 .. i1`` by chunk
        (packed, or boolean with ``pack=False``)."""
        n = self.n
        step = max(1, WORK_BUDGET // (24 * (n + 1)))
        out: list[Planes] = []
        add, maximum, accumulate = np.add, np.maximum, np.maximum.accumulate
        for a in range(i0, i1, step):
            b = min(a + step, i1)
            gain = np.where(self.hit_rows(a, b), self.gain_hit, self.gain_miss).astype(np.int64, copy=False)
            table = np.empty((b - a + 1, n + 1), dtype=np.int64)
            table[0] = prev
            table[1:, 0] = 0
            for r in range(1, b - a + 1):
                row = table[r]
                body = row[1:]
                add(table[r - 1, :-1], gain[r - 1], out=body)
                maximum(body, table[r - 1, 1:], out=body)
                accumulate(row, out=row)
            if planes:
                body = table[1:, 1:]
                gain += table[:-1, :-1]  # the diagonal candidates
                is_diag = body == gain
                del gain
                leave = body == table[:-1, 1:]
                leave |= is_diag
                if pack:
                    is_diag, leave = np.packbits(is_diag, axis=1), np.packbits(leave, axis=1)
                out.append((is_diag, leave))
            prev = table[-1].copy()
        return prev, out

    def scores(self, row: np.ndarray, i: int) -> np.ndarray:
        """``S[i, :] * scale`` from ``U[i, :]``."""
        return row - self.gp * (i + np.arange(self.n + 1, dtype=np.int64))


class _FloatRows:
    """The textbook recurrence in Python floats, for scores without an exact integer form."""

    def __init__(self, hit_rows: HitRows, n_resp: int, ms: float, mp: float, gp: float) -> None:
        self.hit_rows = hit_rows
        self.n = n_resp
        self.ms, self.mp, self.gp = ms, mp, gp

    def first(self) -> list[float]:
        return [-self.gp * j for j in range(self.n + 1)]

    def fill(
        self, prev: list[float], i0: int, i1: int, planes: bool, pack: bool = True
    ) -> tuple[list[float], list[Planes]]:
        """As :meth:`_IntegerRows.fill`, one row at a time (chunks of the same size)."""
        ms, mp, gp = self.ms, self.mp, self.gp
        step = max(1, WORK_BUDGET // (24 * (self.n + 1)))
        out: list[Planes] = []
        diag_rows: list[np.ndarray] = []
        leave_rows: list[np.ndarray] = []
        for i in range(i0 + 1, i1 + 1):
            hits = self.hit_rows(i - 1, i)[0].tolist()
            left = -gp * i
            row = [left]
            is_diag = [False] * self.n
            leave = [False] * self.n
            for j in range(self.n):
                d = prev[j] + (ms if hits[j] else -mp)
                u = prev[j + 1] - gp
                left = max(d, u, left - gp)
                row.append(left)
                if left == d:
                    is_diag[j] = leave[j] = True
                elif left == u:
                    leave[j] = True
            prev = row
            if planes:
                diag_rows.append(np.packbits(is_diag) if pack else np.array(is_diag, dtype=bool))
                leave_rows.append(np.packbits(leave) if pack else np.array(leave, dtype=bool))
                if len(diag_rows) == step or i == i1:
                    out.append((np.vstack(diag_rows), np.vstack(leave_rows)))
                    diag_rows, leave_rows = [], []
        return prev, out

    def scores(self, row: list[float], i: int) -> np.ndarray:
        return np.asarray(row, dtype=np.float64)


Rows = _IntegerRows | _FloatRows


def _rows(hit_rows: HitRows, n_ref: int, n_resp: int, scores: tuple[float, float, float]) -> tuple[Rows, int]:
    """The row generator for these scores and its scale (1 for the float rows)."""
    exact = integer_scores(*scores, n_ref + n_resp)
    if exact is None:
        return _FloatRows(hit_rows, n_resp, *scores), 1
    (ms, mp, gp), scale = exact
    return _IntegerRows(hit_rows, n_resp, ms, mp, gp), scale


def _block_rows(n_ref: int, n_resp: int) -> int:
    """Rows per traceback block (module docstring): all ``G`` rows when their planes fit the budget."""
    per_row = 2 * ((n_resp + 7) // 8)
    by_budget = max(1, DIRECTION_BUDGET // per_row)
    if by_budget >= n_ref:
        return n_ref
    return min(n_ref, max(by_budget, math.isqrt(32 * n_ref - 1) + 1))


def _traceback(rows: Rows, n_ref: int, n_resp: int, block: int) -> IndexPairs:
    """The tie-broken traceback from ``(G, R)``, block by block from the last (module docstring).

    Each chunk of planes is turned into bytes, one byte (0 or 1) per cell; in row ``i`` the last ``leave``
    cell at or left of column ``j`` is then a ``bytes.rfind``.
    """
    starts = range(0, n_ref, block)
    pack = n_ref * n_resp > UNPACKED_CELLS
    checkpoints: dict[int, Any] = {}
    row: Any = rows.first()
    for start in starts:
        checkpoints[start] = row
        if len(starts) > 1:
            row = rows.fill(row, start, min(start + block, n_ref), planes=False)[0]
    del row
    resp_out: list[int] = []  # built backwards, reversed at the end
    ref_out: list[int] = []
    i, j = n_ref, n_resp
    one = b"\x01"
    for start in reversed(starts):
        end = min(start + block, n_ref)
        chunks = rows.fill(checkpoints.pop(start), start, end, planes=True, pack=pack)[1]
        while chunks:
            diag_bits, leave_bits = chunks.pop()
            top = i - diag_bits.shape[0]  # the chunk holds rows top+1 .. i
            if pack:
                diag_bits = np.unpackbits(diag_bits, axis=1, count=n_resp)
                leave_bits = np.unpackbits(leave_bits, axis=1, count=n_resp)
            diag, leave = diag_bits.tobytes(), leave_bits.tobytes()  # one byte (0 or 1) per cell
            del diag_bits, leave_bits
            while i > top:
                base = (i - top - 1) * n_resp  # row i starts here; byte base + c - 1 is column c
                pos = leave.rfind(one, base, base + j) if j else -1
                k = pos - base + 1 if pos >= 0 else 0  # none: column 0, where the path goes up
                if k < j:  # left steps: response units k .. j-1 against gaps
                    resp_out.extend(range(j - 1, k - 1, -1))
                    ref_out.extend([-1] * (j - k))
                    j = k
                i -= 1
                ref_out.append(i)
                if j and diag[base + j - 1]:
                    j -= 1
                    resp_out.append(j)
                else:
                    resp_out.append(-1)
    resp_out.extend(range(j - 1, -1, -1))
    ref_out.extend([-1] * j)
    resp_out.reverse()
    ref_out.reverse()
    return resp_out, ref_out


def score_table(
    matches: np.ndarray, match_score: float, mismatch_penalty: float, gap_penalty: float
) -> np.ndarray:
    """The full ``(G+1) x (R+1)`` table ``S`` for a boolean ``G x R`` match matrix (reference rows).

    For tests and small inputs only: the alignment never stores it. int64 for integral scores, else
    float64 (``S = (U - gap * (i + j)) / scale`` from the integer rows, or the float rows as computed).
    """
    n_ref, n_resp = matches.shape
    scores = (match_score, mismatch_penalty, gap_penalty)
    rows, scale = _rows(lambda a, b: matches[a:b], n_ref, n_resp, scores)
    row: Any = rows.first()
    table = [rows.scores(row, 0)]
    for i in range(1, n_ref + 1):
        row = rows.fill(row, i - 1, i, planes=False)[0]
        table.append(rows.scores(row, i))
    out = np.vstack(table)
    return out if scale == 1 else out / scale


def dynamic_pairs(
    response_keys: Sequence[str],
    response_dk: Sequence[bool],
    reference_keys: Sequence[str],
    match_score: float = 2,
    mismatch_penalty: float = 1,
    gap_penalty: float = 1,
) -> IndexPairs:
    """Needleman–Wunsch index pairs of normalised units, in order (ties: diagonal > up > left).

    Exact in ``O(G * R)`` time; memory as in the module docstring (bit planes, checkpointed blocks).
    """
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
        (-2 if dk else ids.get(k, -1) for k, dk in zip(response_keys, response_dk)),
        dtype=np.int64,
        count=n_resp,
    )

    def hit_rows(a: int, b: int) -> np.ndarray:
        return ref_ids[a:b, None] == resp_ids[None, :]

    rows, _ = _rows(hit_rows, n_ref, n_resp, (match_score, mismatch_penalty, gap_penalty))
    return _traceback(rows, n_ref, n_resp, _block_rows(n_ref, n_resp))
