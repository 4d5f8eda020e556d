"""Rejection (risk–coverage) curves shared by PRR and AURC (docs/metrics.md §4).

Units are rejected one at a time, least confident first. After rejecting ``k`` of ``n`` units:

* rejection fraction ``r_k = k / n``, coverage ``1 - r_k``;
* overall error ``e_k = (loss of the kept units) / n`` — normalised by **all** units (used by PRR);
* selective risk ``e_k / (1 - r_k)`` — the error rate among the kept units (used by AURC; NaN at
  coverage 0).

Tie handling (``ties``):

* ``"paper"`` — upstream behaviour: tied scores are rejected in ascending index order, so the result
  depends on the order in which units are listed.
* ``"average"`` — the expected curve over all orders of the tied units. Within a block of tied scores
  each unit's loss is replaced by the block's mean loss; the curve is then linear across the block, so
  its trapezoid area equals the trapezoid over the block boundaries (tied units rejected together) and
  equals the average of the ``"paper"`` area over every permutation of the tied units. The result does
  not depend on unit order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from saltbench.core.vocabulary import REJECTION_TIES, RejectionTies

from .validation import ArrayLike, FloatArray, validate_scores_correct

Ties = RejectionTies
TIES = REJECTION_TIES


@dataclass(frozen=True, eq=False)
class RejectionCurve:
    """One rejection curve at points ``k = 0..n`` (arrays of length ``n + 1``).

    Attributes:
        rejection_fraction: ``k / n``.
        coverage: ``1 - k / n``.
        overall_error: remaining loss divided by ``n``.
        selective_risk: remaining loss divided by the number of kept units (NaN when none is kept).
        order: unit indices in rejection order (length ``n``; for the random baseline, ``None``).
    """

    rejection_fraction: FloatArray
    coverage: FloatArray
    overall_error: FloatArray
    selective_risk: FloatArray
    order: np.ndarray | None = field(default=None)


@dataclass(frozen=True, eq=False)
class RejectionCurves:
    """Model, oracle and random rejection curves for one set of scores (for plotting and PRR)."""

    model: RejectionCurve
    oracle: RejectionCurve
    random: RejectionCurve
    base_error: float


def check_ties(ties: str) -> None:
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")


def rejection_losses(scores: FloatArray, losses: FloatArray, ties: Ties) -> tuple[np.ndarray, FloatArray]:
    """``(order, ordered_losses)``: rejection order (ascending score, stable) and the losses along it.

    With ``ties="average"`` each loss inside a block of equal scores is replaced by the block mean.
    """
    check_ties(ties)
    order = np.argsort(scores, kind="stable")
    ordered = losses[order]
    if ties == "average" and ordered.size:
        s = scores[order]
        starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
        sizes = np.diff(np.append(starts, s.size))
        ordered = np.repeat(np.add.reduceat(ordered, starts) / sizes, sizes)
    return order, ordered


def _curve(ordered_losses: FloatArray, order: np.ndarray | None) -> RejectionCurve:
    n = ordered_losses.size
    k = np.arange(n + 1)
    remaining = np.zeros(n + 1)
    remaining[:n] = np.cumsum(ordered_losses[::-1])[::-1]  # suffix sums: exact 0 at the end
    kept = (n - k).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        selective = np.where(kept > 0, remaining / kept, np.nan)
    rejection = k / n
    return RejectionCurve(rejection, 1.0 - rejection, remaining / n, selective, order)


def curves_from_arrays(scores: FloatArray, correct: FloatArray, ties: Ties) -> RejectionCurves:
    """Model/oracle/random curves from validated arrays (losses = 1 - correct)."""
    losses = 1.0 - correct
    order, ordered = rejection_losses(scores, losses, ties)
    model = _curve(ordered, order)
    # loss descending, ties by ascending index (a stable partition, as losses are 0/1)
    oracle_order = np.concatenate((np.flatnonzero(losses == 1.0), np.flatnonzero(losses == 0.0)))
    oracle = _curve(losses[oracle_order], oracle_order)
    n = losses.size
    base_error = float(losses.sum() / n)
    r = model.rejection_fraction
    rand_overall = base_error * (1.0 - r)
    with np.errstate(invalid="ignore", divide="ignore"):
        rand_selective = np.where(model.coverage > 0, base_error, np.nan)
    random = RejectionCurve(r, model.coverage, rand_overall, rand_selective, None)
    return RejectionCurves(model, oracle, random, base_error)


def rejection_curve(scores: ArrayLike, correct: ArrayLike, *, ties: Ties = "average") -> RejectionCurves:
    """Rejection curves of the scores, the oracle and the random baseline (for plots, PRR and AURC).

    Units are rejected least-confident first (scores: higher = more confident); the oracle rejects
    incorrect units first; the random baseline is ``base_error * (1 - r)`` (overall error) or
    ``base_error`` (selective risk). Each curve has ``n + 1`` points from full coverage to none.

    Args:
        scores: shape ``(n,)``, finite.
        correct: shape ``(n,)``, 0/1 or bools.
        ties: ``"average"`` (order-independent) or ``"paper"`` (ascending index among ties).

    Example:
        >>> c = rejection_curve([1, 1, .8, .8, .8], [1, 1, 0, 1, 0], ties="paper")
        >>> c.model.order.tolist(), c.model.overall_error.round(6).tolist()
        ([2, 3, 4, 0, 1], [0.4, 0.2, 0.2, 0.0, 0.0, 0.0])
        >>> c.oracle.order.tolist(), c.oracle.overall_error.round(6).tolist()
        ([2, 4, 0, 1, 3], [0.4, 0.2, 0.0, 0.0, 0.0, 0.0])
        >>> c.model.selective_risk.round(6).tolist()[:3]
        [0.4, 0.25, 0.333333]
    """
    s, y = validate_scores_correct(scores, correct)
    return curves_from_arrays(s, y, ties)
