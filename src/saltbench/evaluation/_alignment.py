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
exact in int64, and the traceback tests become ``U[i, j] == U[i-1, j-1] + sub(i, j) + 2 * gap``
(diagonal) and ``U[i, j] == U[i-1, j]`` (up). The rows are filled by a compiled kernel
(:mod:`saltbench.evaluation._kernels`). The integer path is used when
``max(scaled scores) * (G + R + 2) < 2**53``; then every partial sum of the textbook float recurrence is
exact as well, so both give the same path. Other scores (``0.1`` has a 55-bit denominator) use the
textbook recurrence in Python floats.

**Shortcuts, all exact.** Before any table is filled:

* *common suffix* (integer scores): while the last response unit equals the last reference unit (and is
  not DK), the pair is diagonal, so both are set aside and re-attached at the end. A match ``(i, j)``
  always passes the diagonal test: dropping response unit ``j`` from any path to ``(i-1, j)`` (or turning
  its diagonal step into an up step) loses at most ``match + gap``, so ``S[i-1, j] - gap <= S[i-1, j-1] +
  match`` and likewise for ``S[i, j-1]``; the traceback, trying the diagonal first, takes it, and the
  rest of the table does not depend on the set-aside units. Identical sequences are the whole-suffix case
  (for any scores: the all-diagonal path is then the unique optimum);
* *tiny tables* (at most :data:`TINY_CELLS` cells, e.g. the single line of a one-line answer): solved with
  the textbook recurrence once per distinct pattern of matches and memoised, so a batch of one-unit
  responses aligns each pattern once.

**Batches.** :func:`dynamic_pairs_many` aligns many problems together: after the shortcuts, the remaining
integer-score problems go to the kernel in batches (one call fills the planes of up to
:data:`BATCH_CELLS` cells), then each is traced. :func:`dynamic_pairs` is the batch of one.

**Traceback.** Each filled chunk of rows is reduced to two planes of one byte per cell: ``diag[i, j]`` (the
diagonal test holds) and ``leave[i, j]`` (the diagonal or the up test holds, i.e. the traceback leaves row
``i`` at column ``j``). The traceback is exact from the planes: in row ``i``, coming from column ``j``, it
goes left to the last column ``k <= j`` with ``leave[i, k]`` (``k = 0`` if none, where it goes up), emitting
the response units ``k+1 .. j`` as redundant, then steps diagonally if ``diag[i, k]``, else up. A run of
diagonal steps (``diag`` set along a diagonal of the table) is found with one strided slice of the bytes.

**Memory.** The score table is never stored whole: the kernel keeps one row. A problem larger than a batch
is filled in chunks of rows (at most :data:`WORK_BUDGET` bytes of match and plane bytes, at least one row)
and its planes are packed 8 cells per byte, ``G * R / 4`` bytes for the whole table (tables of at most
:data:`UNPACKED_CELLS` cells keep one byte per cell and skip the packing), unpacked one chunk at a time for
the traceback.

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
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

IndexPairs = tuple[list[int], list[int]]
Problem = tuple[Sequence[str], Sequence[bool], Sequence[str]]
"""One alignment problem: the response keys, their DK flags, and the reference keys."""

Planes = tuple[np.ndarray, np.ndarray]
"""``diag`` and ``leave`` of a chunk of rows of one problem, ``rows x R`` uint8 (0 or 1) or
``rows x ceil(R / 8)`` uint8 when packed; column ``c`` (bit ``c`` in ``np.packbits`` order) is table column
``c + 1``."""

DIRECTION_BUDGET = 64 * 2**20
"""Bytes of packed traceback bits held at once before the rows are processed in checkpointed blocks."""

WORK_BUDGET = 16 * 2**20
"""Bytes of match and unpacked plane arrays per chunk of rows filled at once (at least one row)."""

UNPACKED_CELLS = 2**20
"""Tables of at most this many cells keep their planes unpacked (1 byte per cell)."""

BATCH_CELLS = 2**22
"""Cells of the problems of one batch (planes of one byte per cell, held together until traced); a larger
problem is aligned on its own, in chunks and blocks."""

TINY_CELLS = 16
"""Tables of at most this many cells are solved once per pattern of matches and memoised."""

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


def _chunk_rows(n_resp: int) -> int:
    """Rows per chunk: a chunk's match matrix and two unpacked planes fit :data:`WORK_BUDGET` bytes."""
    return max(1, WORK_BUDGET // (3 * n_resp + 1))


class _IntegerRows:
    """Rows ``U[i, :]`` of the shifted integer table of one problem (module docstring) and their planes,
    filled by the compiled kernel :func:`saltbench.evaluation._kernels.fill_rows`.

    Rows are filled in chunks of at most :data:`WORK_BUDGET` bytes of match and plane bytes (at least one
    row); a chunk's planes are packed 8 cells per byte when asked.
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
        (packed, or one byte per cell with ``pack=False``)."""
        fill_rows = _kernels().fill_rows
        n = self.n
        step = _chunk_rows(n)
        row = prev.copy()
        out: list[Planes] = []
        for a in range(i0, i1, step):
            b = min(a + step, i1)
            shape = (b - a, n) if planes else (0, n)
            diag, leave = np.empty(shape, dtype=np.uint8), np.empty(shape, dtype=np.uint8)
            fill_rows(row, self.hit_rows(a, b), self.gain_hit, self.gain_miss, diag, leave)
            if planes:
                out.append((np.packbits(diag, axis=1), np.packbits(leave, axis=1)) if pack else (diag, leave))
        return row, out

    def scores(self, row: np.ndarray, i: int) -> np.ndarray:
        """``S[i, :] * scale`` from ``U[i, :]``."""
        return row - self.gp * (i + np.arange(self.n + 1, dtype=np.int64))


class _PythonRows:
    """The textbook recurrence in Python numbers: scores without an exact integer form, and tiny tables."""

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
        step = _chunk_rows(self.n)
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


Rows = _IntegerRows | _PythonRows


def _rows(hit_rows: HitRows, n_ref: int, n_resp: int, scores: tuple[float, float, float]) -> tuple[Rows, int]:
    """The row generator of one problem for these scores and its scale (1 for the Python rows)."""
    exact = integer_scores(*scores, n_ref + n_resp)
    if exact is None:
        return _PythonRows(hit_rows, n_resp, *scores), 1
    (ms, mp, gp), scale = exact
    return _IntegerRows(hit_rows, n_resp, ms, mp, gp), scale


@functools.cache
def _kernels() -> Any:
    """The compiled kernels (:mod:`saltbench.evaluation._kernels`), imported on first use."""
    from saltbench.evaluation import _kernels as kernels

    return kernels


def _block_rows(n_ref: int, n_resp: int) -> int:
    """Rows per traceback block (module docstring): all ``G`` rows when their planes fit the budget."""
    per_row = 2 * ((n_resp + 7) // 8)
    by_budget = max(1, DIRECTION_BUDGET // per_row)
    if by_budget >= n_ref:
        return n_ref
    return min(n_ref, max(by_budget, math.isqrt(32 * n_ref - 1) + 1))


def _plane_bytes(planes: Planes, packed: bool, width: int) -> tuple[bytes, bytes]:
    """The ``diag`` and ``leave`` planes of a chunk as bytes, one byte (0 or 1) per cell."""
    diag, leave = planes
    if packed:
        diag = np.unpackbits(diag, axis=1, count=width)
        leave = np.unpackbits(leave, axis=1, count=width)
    return diag.tobytes(), leave.tobytes()


def _trace_rows(
    diag: bytes,
    leave: bytes,
    stride: int,
    col0: int,
    top: int,
    i: int,
    j: int,
    resp_out: list[int],
    ref_out: list[int],
) -> tuple[int, int]:
    """Trace one problem's path from ``(i, j)`` down to row ``top`` through one chunk of planes.

    The chunk holds rows ``top+1 ..``; column ``c >= 1`` of row ``r`` is byte
    ``(r - top - 1) * stride + col0 + c - 1``. Pairs are appended backwards (reversed by the caller);
    returns the cell ``(top, j)`` reached.
    """
    one, zero, diagonal = b"\x01", b"\x00", stride + 1
    while i > top:
        if not j:  # column 0: up to the top of the chunk
            ref_out.extend(range(i - 1, top - 1, -1))
            resp_out.extend([-1] * (i - top))
            return top, 0
        base = (i - top - 1) * stride + col0 - 1  # column c of row i is byte base + c
        if diag[base + j]:  # a run of diagonal steps, its length from one strided slice
            last = base + j
            m = min(i - top, j)
            run = m - 1 - diag[last - (m - 1) * diagonal : last + 1 : diagonal].rfind(zero)
            resp_out.extend(range(j - 1, j - 1 - run, -1))
            ref_out.extend(range(i - 1, i - 1 - run, -1))
            i -= run
            j -= run
            continue
        pos = leave.rfind(one, base + 1, base + j + 1)
        k = pos - base if pos >= 0 else 0  # none: column 0, where the path goes up
        if k < j:  # left steps: response units k .. j-1 against gaps
            resp_out.extend(range(j - 1, k - 1, -1))
            ref_out.extend([-1] * (j - k))
            j = k
        i -= 1
        ref_out.append(i)
        if j and diag[base + j]:
            j -= 1
            resp_out.append(j)
        else:
            resp_out.append(-1)
    return i, j


def _finish(resp_out: list[int], ref_out: list[int], j: int) -> IndexPairs:
    """Close a traceback that reached row 0 at column ``j`` (left steps) and put it in reading order."""
    resp_out.extend(range(j - 1, -1, -1))
    ref_out.extend([-1] * j)
    resp_out.reverse()
    ref_out.reverse()
    return resp_out, ref_out


def _traceback(rows: Rows, n_ref: int, n_resp: int, block: int) -> IndexPairs:
    """The tie-broken traceback of one problem from ``(G, R)``, block by block from the last (module
    docstring)."""
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
    for start in reversed(starts):
        end = min(start + block, n_ref)
        chunks = rows.fill(checkpoints.pop(start), start, end, planes=True, pack=pack)[1]
        while chunks:
            chunk = chunks.pop()
            top = i - chunk[0].shape[0]  # the chunk holds rows top+1 .. i
            diag, leave = _plane_bytes(chunk, pack, n_resp)
            del chunk
            i, j = _trace_rows(diag, leave, n_resp, 0, top, i, j, resp_out, ref_out)
    return _finish(resp_out, ref_out, j)


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


# -- problems: shortcuts, tiny tables, batches ---------------------------------------------------------
def _common_suffix(
    response_keys: Sequence[str], response_dk: Sequence[bool], reference_keys: Sequence[str]
) -> int:
    """Length of the longest common suffix of matching units (equal keys, response unit not DK)."""
    n = 0
    for key, dk, ref in zip(reversed(response_keys), reversed(response_dk), reversed(reference_keys)):
        if dk or key != ref:
            break
        n += 1
    return n


def _encode(
    response_keys: Sequence[str], response_dk: Sequence[bool], reference_keys: Sequence[str]
) -> tuple[list[int], list[int]]:
    """Integer ids of the reference keys and of the response keys (``-1``: no reference unit has the
    key, ``-2``: DK), so that a match is an equality of ids."""
    ids = dict(zip(reference_keys, range(len(reference_keys))))  # a key's id: its last position
    ref_ids = list(map(ids.__getitem__, reference_keys))
    resp_ids = list(map(ids.get, response_keys, itertools.repeat(-1)))
    if any(response_dk):
        for i in itertools.compress(range(len(resp_ids)), response_dk):
            resp_ids[i] = -2
    return ref_ids, resp_ids


@functools.lru_cache(maxsize=4096)
def _tiny_pairs(
    n_ref: int, n_resp: int, hits: tuple[bool, ...], scores: tuple[float, float, float]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The pairs of a tiny table with match matrix ``hits`` (row-major, reference rows), memoised: the
    textbook recurrence (exact for every score that has an integer form, see the module docstring)."""
    matches = np.array(hits, dtype=bool).reshape(n_ref, n_resp)
    rows = _PythonRows(lambda a, b: matches[a:b], n_resp, *scores)
    ridx, gidx = _traceback(rows, n_ref, n_resp, n_ref)
    return tuple(ridx), tuple(gidx)


def _solve_large(ref_ids: list[int], resp_ids: list[int], scores: tuple[float, float, float]) -> IndexPairs:
    """One problem on its own: chunked rows, packed planes and checkpointed blocks (module docstring)."""
    n_ref, n_resp = len(ref_ids), len(resp_ids)
    ref = np.array(ref_ids, dtype=np.int64)
    resp = np.array(resp_ids, dtype=np.int64)

    def hit_rows(a: int, b: int) -> np.ndarray:
        return ref[a:b, None] == resp[None, :]

    rows, _ = _rows(hit_rows, n_ref, n_resp, scores)
    return _traceback(rows, n_ref, n_resp, _block_rows(n_ref, n_resp))


_Pending = tuple[int, list[int], list[int], int]
"""A problem waiting for its batch: its position in the output, reference ids, response ids, and the
length of the set-aside common suffix."""


def _batches(pending: list[_Pending]) -> Iterator[list[_Pending]]:
    """Consecutive groups of problems of at most :data:`BATCH_CELLS` cells together (at least one each)."""
    batch: list[_Pending] = []
    cells = 0
    for item in pending:
        size = len(item[1]) * len(item[2])
        if batch and cells + size > BATCH_CELLS:
            yield batch
            batch, cells = [], 0
        batch.append(item)
        cells += size
    if batch:
        yield batch


def _solve_batch(pending: list[_Pending], ms: int, mp: int, gp: int) -> list[IndexPairs]:
    """The pairs of many problems (integer scores): all planes from one kernel call
    (:func:`saltbench.evaluation._kernels.fill_many`), then one traceback per problem."""
    ref_lengths = [len(ref) for _, ref, _, _ in pending]
    resp_lengths = [len(resp) for _, _, resp, _ in pending]
    offsets = list(itertools.accumulate(map(operator.mul, ref_lengths, resp_lengths), initial=0))
    diag = np.empty(offsets[-1], dtype=np.uint8)
    leave = np.empty(offsets[-1], dtype=np.uint8)
    _kernels().fill_many(
        np.array(list(itertools.chain.from_iterable(ref for _, ref, _, _ in pending)), dtype=np.int64),
        np.array(list(itertools.accumulate(ref_lengths, initial=0)), dtype=np.int64),
        np.array(list(itertools.chain.from_iterable(resp for _, _, resp, _ in pending)), dtype=np.int64),
        np.array(list(itertools.accumulate(resp_lengths, initial=0)), dtype=np.int64),
        ms + 2 * gp,
        2 * gp - mp,
        diag,
        leave,
    )
    diag_bytes, leave_bytes = diag.tobytes(), leave.tobytes()
    out: list[IndexPairs] = []
    for n_ref, n_resp, offset in zip(ref_lengths, resp_lengths, offsets):
        resp_out: list[int] = []
        ref_out: list[int] = []
        _, j = _trace_rows(diag_bytes, leave_bytes, n_resp, offset, 0, n_ref, n_resp, resp_out, ref_out)
        out.append(_finish(resp_out, ref_out, j))
    return out


def _with_suffix(pairs: IndexPairs, n_resp: int, n_ref: int, suffix: int) -> IndexPairs:
    """Append the ``suffix`` set-aside diagonal pairs to the pairs of the first ``n_resp``/``n_ref`` units."""
    if suffix:
        pairs[0].extend(range(n_resp, n_resp + suffix))
        pairs[1].extend(range(n_ref, n_ref + suffix))
    return pairs


def dynamic_pairs_many(
    problems: Iterable[Problem],
    match_score: float = 2,
    mismatch_penalty: float = 1,
    gap_penalty: float = 1,
) -> list[IndexPairs]:
    """:func:`dynamic_pairs` of each problem, sharing the work between them (module docstring: exact
    shortcuts, memoised tiny tables, batches of compiled row filling)."""
    scores = (match_score, mismatch_penalty, gap_penalty)
    out: list[IndexPairs] = []
    pending: list[_Pending] = []
    for response_keys, response_dk, reference_keys in problems:
        n_resp, n_ref = len(response_keys), len(reference_keys)
        exact = integer_scores(*scores, n_ref + n_resp) is not None
        if exact:
            suffix = _common_suffix(response_keys, response_dk, reference_keys)
        elif n_resp == n_ref and list(response_keys) == list(reference_keys) and not any(response_dk):
            suffix = n_resp
        else:
            suffix = 0
        n_resp, n_ref = n_resp - suffix, n_ref - suffix
        if not n_resp or not n_ref:
            pairs = strict_pairs(n_resp, 0) if n_resp else strict_pairs(0, n_ref)
        elif n_resp * n_ref <= TINY_CELLS:
            hits = tuple(
                not dk and key == ref
                for ref in reference_keys[:n_ref]
                for key, dk in zip(response_keys[:n_resp], response_dk[:n_resp])
            )
            ridx, gidx = _tiny_pairs(n_ref, n_resp, hits, scores)
            pairs = list(ridx), list(gidx)
        else:
            ref_ids, resp_ids = _encode(response_keys[:n_resp], response_dk[:n_resp], reference_keys[:n_ref])
            if exact and n_ref * n_resp <= BATCH_CELLS:
                pending.append((len(out), ref_ids, resp_ids, suffix))
                out.append(([], []))  # replaced below, once its batch is solved
                continue
            pairs = _solve_large(ref_ids, resp_ids, scores)
        out.append(_with_suffix(pairs, n_resp, n_ref, suffix))
    if pending:
        (ms, mp, gp), _ = _scaled(*scores)  # type: ignore[misc]  # exact scores: not None
        for batch in _batches(pending):
            for (index, ref_ids, resp_ids, suffix), pairs in zip(batch, _solve_batch(batch, ms, mp, gp)):
                out[index] = _with_suffix(pairs, len(resp_ids), len(ref_ids), suffix)
    return out


def dynamic_pairs(
    response_keys: Sequence[str],
    response_dk: Sequence[bool],
    reference_keys: Sequence[str],
    match_score: float = 2,
    mismatch_penalty: float = 1,
    gap_penalty: float = 1,
) -> IndexPairs:
    """Needleman–Wunsch index pairs of normalised units, in order (ties: diagonal > up > left).

    Exact in ``O(G * R)`` time; memory as in the module docstring (bit planes, checkpointed blocks). The
    batch of one of :func:`dynamic_pairs_many`.
    """
    problem = (response_keys, response_dk, reference_keys)
    return dynamic_pairs_many([problem], match_score, mismatch_penalty, gap_penalty)[0]
