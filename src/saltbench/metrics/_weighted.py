r"""Bootstrap resamples as integer weights: every resample's metric value at once (private).

A response-level resample (:func:`~saltbench.metrics.bootstrap_ci`) that draws response :math:`g`
:math:`c_{rg}` times holds every unit of :math:`g` :math:`c_{rg}` times, and nothing else changes: the
scores and labels are those of the original data. So resample :math:`r` of a metric whose value depends
only on the multiset of (score, label) pairs is the metric of the original units weighted by
:math:`w_{ri} = c_{r,g(i)}`. The functions here take the ``(R, G)`` matrix ``counts`` of :math:`c_{rg}`
(one row per resample, :func:`group_counts`) and return the ``R`` values at once: the data are sorted
and tabulated per group once (per tie block or bin), each resample's sums are a row of the product of
``counts`` with those tables, and the rest is numpy arithmetic over ``R`` rows of one value per tie block or
bin (no Python loop over resamples or units, no expanded per-unit sequence; tables are built in row chunks of
bounded size, :func:`_by_rows`).

Each function reproduces its metric's conventions, ties and NaN cases exactly (docs/metrics.md §8.1):

* :func:`weighted_auroc` — pooled AUROC, average ranks over ties; integer arithmetic, so bit-identical.
* :func:`weighted_prr`, :func:`weighted_aurc` — ``ties="average"`` only: the tie-averaged loss sequence
  of a resample depends on the multiplicities alone, while ``ties="paper"`` depends on the order in which
  the resample lists its units and keeps the per-resample path. Both are closed forms over the tie blocks:
  PRR's sums are exact (integers and half-integers), AURC's use harmonic numbers; each differs from the
  per-resample value by rounding only.
* :func:`weighted_calibration_errors`, :func:`weighted_brier`, :func:`weighted_mean` — sums over bins or
  units; per-group sums combined with integer weights (a few ulps from the per-resample sums).
* :func:`weighted_group_mean` — a mean of per-response values (per-response AUROC and PRR): a drawn
  response keeps all its units in their original order, so its value in a resample equals its value on
  the original data, computed once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .validation import FloatArray

ROW_CHUNK_ELEMENTS = 1 << 21
"""Largest ``rows x columns`` of one chunk's weight matrix (16 MiB of float64)."""


def group_counts(draws: np.ndarray, n_groups: int) -> FloatArray:
    """``(R, G)`` multiplicities ``counts[r, g] = #{j : draws[r, j] = g}`` of resampled group codes.

    Example:
        >>> group_counts(np.array([[0, 0, 2], [1, 2, 0]]), 3).tolist()
        [[2.0, 0.0, 1.0], [1.0, 1.0, 1.0]]
    """
    n_rows = draws.shape[0]
    flat = (draws + n_groups * np.arange(n_rows)[:, None]).ravel()
    return np.bincount(flat, minlength=n_rows * n_groups).reshape(n_rows, n_groups).astype(np.float64)


def _by_rows(fn: Callable[[FloatArray], FloatArray], counts: FloatArray, n_cols: int) -> FloatArray:
    """``fn`` applied to chunks of rows of ``counts`` (at most :data:`ROW_CHUNK_ELEMENTS` weights each)."""
    step = max(1, ROW_CHUNK_ELEMENTS // max(n_cols, 1))
    if counts.shape[0] <= step:
        return fn(counts)
    return np.concatenate([fn(counts[i : i + step]) for i in range(0, counts.shape[0], step)])


DENSE_GROUPS = 64
"""Up to this many groups, block sums are dense ``(R, G) @ (G, B)`` products; beyond, sparse ones."""


@dataclass(frozen=True, eq=False)
class _TieBlocks:
    """Units in ascending score order (stable), cut into tie blocks (maximal runs of equal scores).

    Attributes:
        n_blocks: the number of tie blocks (the width of every per-resample table).
        per_group: ``(G, B)`` unit counts and label sums of each group in each block, dense numpy arrays
            (at most :data:`DENSE_GROUPS` groups) or ``scipy.sparse`` arrays.
    """

    n_blocks: int
    per_group: tuple[Any, Any]

    @classmethod
    def of(cls, scores: FloatArray, labels: FloatArray, codes: np.ndarray, n_groups: int) -> _TieBlocks:
        order = np.argsort(scores, kind="stable")
        s, y, g = scores[order], labels[order], codes[order]
        new_block = np.concatenate(([True], s[1:] != s[:-1]))
        block = np.cumsum(new_block) - 1
        n_blocks = int(block[-1]) + 1
        if n_groups <= DENSE_GROUPS:
            cell, shape = g * n_blocks + block, (n_groups, n_blocks)
            units = _group_sums(cell, n_groups * n_blocks).reshape(shape)
            return cls(n_blocks, (units, _group_sums(cell, n_groups * n_blocks, y).reshape(shape)))
        from scipy import sparse  # only for many groups

        def matrix(weights: FloatArray) -> Any:
            return sparse.csr_array((weights, (g, block)), shape=(n_groups, n_blocks))

        return cls(n_blocks, (matrix(np.ones(s.size)), matrix(y)))

    def sums(self, counts: FloatArray) -> tuple[FloatArray, FloatArray]:
        r"""Per resample and block :math:`b`: multiplicity :math:`m_{rb} = \sum_{i \in b} w_{ri}` and label
        sum :math:`p_{rb} = \sum_{i \in b} w_{ri} y_i`, both ``(R, B)``: products of ``counts`` with the
        per-group tables, sums of integers, so exact in any order."""
        units, labels = self.per_group
        return np.asarray(counts @ units), np.asarray(counts @ labels)


@dataclass(frozen=True, eq=False)
class _BlockSums:
    """One chunk of resamples over the tie blocks, ascending score, all ``(R, B)``: multiplicities ``m``,
    label sums ``p`` (:meth:`_TieBlocks.sums`) and ``units_to = cumsum(m)`` (units up to each block)."""

    m: FloatArray
    p: FloatArray
    units_to: FloatArray

    @classmethod
    def of(cls, blocks: _TieBlocks, counts: FloatArray) -> _BlockSums:
        m, p = blocks.sums(counts)
        return cls(m, p, np.cumsum(m, axis=1))


def _auroc_rows(t: _BlockSums) -> FloatArray:
    r"""Pooled AUROC per resample. With :math:`S_b` units before block :math:`b`, the resample's average
    1-based rank of block :math:`b` is :math:`S_b + (m_b + 1)/2`, so

    .. math:: \mathrm{AUROC} = \frac{\sum_b p_b (S_b + (m_b+1)/2) - P(P+1)/2}{P\,N},
              \quad P = \sum_b p_b,\; N = \sum_b m_b - P

    (NaN when :math:`P = 0` or :math:`N = 0`). Every term is an integer or half-integer, so the value is
    the one the per-resample rank sum gives."""
    m, p = t.m, t.p
    n_pos = p.sum(axis=1)
    n_neg = t.units_to[:, -1] - n_pos
    # S_b + (m_b + 1)/2 = units_to_b - (m_b - 1)/2; integer products summed, so exact
    rank_sum = np.einsum("ij,ij->i", p, t.units_to) - (np.einsum("ij,ij->i", p, m) - n_pos) / 2.0
    out = np.full(m.shape[0], np.nan)
    ok = (n_pos > 0) & (n_neg > 0)
    out[ok] = (rank_sum[ok] - n_pos[ok] * (n_pos[ok] + 1) / 2) / (n_pos[ok] * n_neg[ok])
    return out


def _prr_rows(t: _BlockSums, atol: float) -> FloatArray:
    r"""Pooled PRR (``ties="average"``) per resample. The losses in rejection order are the tie blocks in
    ascending score, block :math:`b` contributing :math:`m_b` copies of its mean loss :math:`\ell_b / m_b`
    (:math:`\ell_b = m_b - p_b`); with 1-based positions :math:`i`, :math:`n` units, :math:`L = \sum_i
    \ell_i` and :math:`\bar e = L/n` (the closed form of :func:`~saltbench.metrics.prr_per_group`):

    .. math:: A_\text{model} = \frac{\sum_i i\,\ell_i - L/2}{n^2}, \quad
              \mathrm{PRR} = \frac{\bar e/2 - A_\text{model}}{\bar e(1-\bar e)/2}

    (NaN when :math:`|\bar e(1-\bar e)/2| \le` ``atol``). Block by block, :math:`L = \sum_b \ell_b` and
    :math:`\sum_i i\,\ell_i = \sum_b \ell_b (S_b + (m_b+1)/2)` (a block's positions average to :math:`S_b
    + (m_b+1)/2`): integers and half-integers, so both sums are exact."""
    loss = t.m - t.p
    n = t.units_to[:, -1]
    total = loss.sum(axis=1)
    weighted = np.einsum("ij,ij->i", loss, t.units_to) - (np.einsum("ij,ij->i", loss, t.m) - total) / 2.0
    b = total / n
    area_model = (weighted - total / 2) / n**2
    ar_uns = b / 2 - area_model
    ar_orc = 0.5 * b * (1.0 - b)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.abs(ar_orc) <= atol, np.nan, ar_uns / ar_orc)


def _aurc_rows(t: _BlockSums) -> FloatArray:
    r"""AURC (``ties="average"``) per resample. The tie-averaged losses :math:`\ell_i`, most confident
    first (tie blocks in descending score, :math:`m_b` copies of each block's mean loss :math:`\mu_b`),
    give the selective risks :math:`\rho_k = \frac1k \sum_{i \le k} \ell_i`; AURC is their mean over
    :math:`k = 1..n`. Summing by parts, :math:`\sum_k \rho_k = \sum_i \ell_i (H_n - H_{i-1})` with harmonic
    numbers :math:`H_j = \sum_{t \le j} 1/t`; over a block after :math:`S_b` more confident units, with
    :math:`C_j = \sum_{t < j} H_t`,

    .. math:: n\,\mathrm{AURC} = L\,H_n - \sum_b \mu_b\,(C_{S_b + m_b} - C_{S_b}),
              \quad L = \sum_b m_b \mu_b

    one term per block, no expanded sequence."""
    n = t.units_to[:, -1]
    harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, int(n.max()) + 1))))
    harmonic_sums = np.concatenate(([0.0], np.cumsum(harmonic)))  # C_j = H_0 + ... + H_{j-1}
    # ascending order: block b starts after the S_b = n - units_to_b more confident units and ends where
    # the block before it in ascending order starts, so one lookup of C per block gives both ends
    at_start = harmonic_sums[(n[:, None] - t.units_to).astype(np.intp)]
    block_sums = np.empty_like(at_start)
    block_sums[:, 0] = harmonic_sums[n.astype(np.intp)] - at_start[:, 0]
    block_sums[:, 1:] = at_start[:, :-1] - at_start[:, 1:]
    loss = t.m - t.p
    mean_loss = loss / np.maximum(t.m, 1.0)  # a block not drawn has no loss and C_{S+0} - C_S = 0
    lost = loss.sum(axis=1)
    return (lost * harmonic[n.astype(np.intp)] - np.einsum("ij,ij->i", mean_loss, block_sums)) / n


RankingMetric = tuple[str, float]
"""A pooled ranking metric for :func:`weighted_ranking`: ``("auroc", 0)``, ``("prr", atol)`` or
``("aurc", 0)``."""


def weighted_ranking(
    scores: FloatArray,
    correct: FloatArray,
    codes: np.ndarray,
    counts: FloatArray,
    metrics: list[RankingMetric],
) -> FloatArray:
    """Every resample of several pooled ranking metrics of the same units, ``(R, len(metrics))``: one sort
    into tie blocks and one product of ``counts`` with the block tables serve them all. Scores must be
    finite and labels 0/1 (the single-metric functions below drop or accept what their metric does).

    Per metric (``_auroc_rows``, ``_prr_rows``, ``_aurc_rows``): pooled AUROC (average ranks over ties,
    bit-identical), PRR and AURC with ``ties="average"``, closed forms over the tie blocks whose values
    differ from the per-resample path by rounding only (below 1e-12 on the property tests); work and
    memory follow the tie blocks, not the units of the resample.
    """
    blocks = _TieBlocks.of(scores, correct, codes, counts.shape[1])
    row_functions = {
        "auroc": lambda t, _: _auroc_rows(t),
        "prr": _prr_rows,
        "aurc": lambda t, _: _aurc_rows(t),
    }

    def rows(c: FloatArray) -> FloatArray:
        sums = _BlockSums.of(blocks, c)
        return np.column_stack([row_functions[name](sums, option) for name, option in metrics])

    return _by_rows(rows, counts, blocks.n_blocks)


def weighted_auroc(
    scores: FloatArray, correct: FloatArray, codes: np.ndarray, counts: FloatArray
) -> FloatArray:
    """Pooled AUROC (:func:`~saltbench.metrics.auroc`) of every resample, shape ``(R,)``; units with a
    non-finite score or a NaN label are dropped (:func:`weighted_ranking`)."""
    keep = np.isfinite(scores) & ~np.isnan(correct)
    if not keep.any():
        return np.full(counts.shape[0], np.nan)
    return weighted_ranking(scores[keep], correct[keep], codes[keep], counts, [("auroc", 0.0)])[:, 0]


def weighted_prr(
    scores: FloatArray, correct: FloatArray, codes: np.ndarray, counts: FloatArray, *, atol: float
) -> FloatArray:
    """Pooled PRR with ``ties="average"`` (:func:`~saltbench.metrics.prr`) of every resample, ``(R,)``
    (:func:`weighted_ranking`)."""
    return weighted_ranking(scores, correct, codes, counts, [("prr", atol)])[:, 0]


def weighted_aurc(
    scores: FloatArray, correct: FloatArray, codes: np.ndarray, counts: FloatArray
) -> FloatArray:
    """AURC with ``ties="average"`` (:func:`~saltbench.metrics.aurc`) of every resample, shape ``(R,)``
    (:func:`weighted_ranking`)."""
    return weighted_ranking(scores, correct, codes, counts, [("aurc", 0.0)])[:, 0]


def _group_sums(codes: np.ndarray, n_groups: int, values: FloatArray | None = None) -> FloatArray:
    """Per group code: the sum of ``values`` (the unit count when ``None``)."""
    return np.bincount(codes, weights=values, minlength=n_groups).astype(np.float64)


def weighted_mean(values: FloatArray, codes: np.ndarray, counts: FloatArray) -> FloatArray:
    r"""Mean of per-unit ``values`` in every resample: :math:`\sum_g c_{rg} V_g / \sum_g c_{rg} n_g`, with
    :math:`V_g` the sum and :math:`n_g` the number of units of group :math:`g`; shape ``(R,)``."""
    n_groups = counts.shape[1]
    total = _group_sums(codes, n_groups, values)
    size = _group_sums(codes, n_groups)
    return (counts @ total) / (counts @ size)


def weighted_brier(
    confidences: FloatArray, correct: FloatArray, codes: np.ndarray, counts: FloatArray
) -> FloatArray:
    r"""Brier score (:func:`~saltbench.metrics.brier`) of every resample: the weighted mean of
    :math:`(c_i - y_i)^2` (:func:`weighted_mean`); shape ``(R,)``."""
    return weighted_mean((confidences - correct) ** 2, codes, counts)


def weighted_calibration_errors(
    confidences: FloatArray,
    correct: FloatArray,
    codes: np.ndarray,
    counts: FloatArray,
    *,
    n_bins: int,
    binning: str,
) -> tuple[FloatArray, FloatArray]:
    r"""``(ece, mce)`` (:func:`~saltbench.metrics.calibration_errors`) of every resample, each ``(R,)``.

    Bin :math:`j` of unit :math:`i` is fixed (same boundaries and ``binning`` rule as the metric). Per
    group :math:`g` and bin :math:`j`: unit count :math:`n_{gj}`, confidence sum :math:`C_{gj}` and correct
    count :math:`A_{gj}`; then per resample :math:`n_{rj} = \sum_g c_{rg} n_{gj}` (likewise :math:`C_{rj}`,
    :math:`A_{rj}`) and, with :math:`N_r` all its units (``binning="paper"``: confidences of exactly 0 are
    in no bin but count in :math:`N_r`),

    .. math:: \mathrm{ECE}_r = \frac{1}{N_r}\sum_j |C_{rj} - A_{rj}|, \qquad
              \mathrm{MCE}_r = \max_{j:\,n_{rj} > 0} \frac{|C_{rj} - A_{rj}|}{n_{rj}}

    (MCE 0 when every bin is empty).
    """
    n_groups = counts.shape[1]
    boundaries = np.arange(n_bins + 1) / n_bins
    idx = np.searchsorted(boundaries, confidences, side="left")
    if binning == "corrected":
        idx = np.maximum(idx, 1)
    width = n_bins + 1
    cell = codes * width + idx

    def per_group(values: FloatArray | None) -> FloatArray:
        return _group_sums(cell, n_groups * width, values).reshape(n_groups, width)[:, 1:]

    bin_count = counts @ per_group(None)
    gap = np.abs(counts @ per_group(confidences) - counts @ per_group(correct))
    total = counts @ _group_sums(codes, n_groups)
    ece_values = gap.sum(axis=1) / total
    per_bin = np.divide(gap, bin_count, out=np.full_like(gap, -np.inf), where=bin_count > 0)
    mce_values = np.where((bin_count > 0).any(axis=1), per_bin.max(axis=1, initial=-np.inf), 0.0)
    return ece_values, mce_values


def weighted_group_mean(
    group_values: FloatArray,
    counts: FloatArray,
    group_weights: FloatArray | None = None,
    *,
    over_all: bool = False,
) -> FloatArray:
    r"""Mean of per-group values over each resample's drawn groups, shape ``(R,)``.

    Over the groups with a finite value, :math:`\sum_g c_{rg} w_g v_g / \sum_g c_{rg} w_g` (``w_g = 1``
    when ``group_weights`` is ``None``), NaN when no drawn group is defined. ``over_all=True`` divides the
    sum by the number of drawn groups ``G`` instead (undefined groups count 0; ``paper_micro``).
    """
    defined = np.isfinite(group_values)
    w = np.ones(group_values.size) if group_weights is None else group_weights
    num = counts @ np.where(defined, group_values * w, 0.0)
    if over_all:
        return num / counts.shape[1]
    den = counts @ np.where(defined, w, 0.0)
    return np.divide(num, den, out=np.full_like(num, np.nan), where=den > 0)
