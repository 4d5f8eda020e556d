"""Prediction rejection ratio, pooled and per response (docs/metrics.md §5; docs/compatibility.md §1.7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ._rejection import (
    RejectionCurves,
    Ties,
    check_ties,
    curves_from_arrays,
)
from .validation import ArrayLike, FloatArray, as_groups, check_same_length, validate_scores_correct

GroupWeighting = Literal["uniform", "size"]
GROUP_WEIGHTINGS: tuple[GroupWeighting, ...] = ("uniform", "size")


@dataclass(frozen=True, eq=False)
class PRRDetails:
    """Everything behind one PRR value.

    Attributes:
        prr: ``ar_uns / ar_orc`` (NaN when ``|ar_orc| <= atol``).
        ar_uns: ``area_random - area_model``.
        ar_orc: ``area_random - area_oracle``.
        area_model, area_random, area_oracle: trapezoid areas under the overall-error curves.
        base_error: fraction of incorrect units.
        curves: the model, oracle and random rejection curves.
    """

    prr: float
    ar_uns: float
    ar_orc: float
    area_model: float
    area_random: float
    area_oracle: float
    base_error: float
    curves: RejectionCurves


def _check_atol(atol: float) -> float:
    if not np.isfinite(atol) or atol < 0:
        raise ValueError(f"atol must be finite and >= 0, got {atol!r}")
    return float(atol)


def prr_details(
    scores: ArrayLike, correct: ArrayLike, *, ties: Ties = "average", atol: float = 1e-12
) -> PRRDetails:
    r"""PRR with its areas and rejection curves (see :func:`prr` for the definition and arguments).

    Areas here are trapezoid sums over the curves, as upstream computes them; :func:`prr` uses the
    equivalent closed form (see :func:`prr_per_group`), which agrees to rounding error and gives an
    exact 0 denominator for all-correct / all-incorrect input.

    Example:
        >>> d = prr_details([1, 1, .8, .8, .8], [1, 1, 0, 1, 0], ties="paper")
        >>> round(d.area_model, 6), round(d.area_random, 6), round(d.area_oracle, 6), round(d.prr, 6)
        (0.12, 0.2, 0.08, 0.666667)
    """
    atol = _check_atol(atol)
    s, y = validate_scores_correct(scores, correct)
    curves = curves_from_arrays(s, y, ties)
    r = curves.model.rejection_fraction
    area_model = float(np.trapezoid(curves.model.overall_error, r))
    area_random = float(np.trapezoid(curves.random.overall_error, r))
    area_oracle = float(np.trapezoid(curves.oracle.overall_error, curves.oracle.rejection_fraction))
    ar_uns = area_random - area_model
    ar_orc = area_random - area_oracle
    value = float("nan") if abs(ar_orc) <= atol else ar_uns / ar_orc
    return PRRDetails(value, ar_uns, ar_orc, area_model, area_random, area_oracle, curves.base_error, curves)


def prr(scores: ArrayLike, correct: ArrayLike, *, ties: Ties = "average", atol: float = 1e-12) -> float:
    r"""Prediction rejection ratio: how much of the oracle's gain over random rejection the scores achieve.

    Reject units least confident first; :math:`e(r)` is the loss of the kept units divided by the
    total number of units, at rejection fraction :math:`r`. With trapezoid areas :math:`A` under
    :math:`e(r)` for the model order, the oracle order (incorrect first) and random rejection
    (:math:`e_\text{rand}(r) = \bar{e}\,(1-r)`, :math:`\bar e` the error rate):

    .. math::

        \mathrm{PRR} = \frac{A_\text{random} - A_\text{model}}{A_\text{random} - A_\text{oracle}}

    1 = oracle ranking, 0 = random, −1 = the exact reverse of the oracle. Direction: scores are
    higher = more confident; higher PRR is better.

    **PRR is an affine function of AUROC** for binary correctness with the default ``ties="average"``:

    .. math::

        \mathrm{PRR} = 2\,\mathrm{AUROC} - 1.

    Derivation. Take ``n`` units, ``n_1`` incorrect (loss 1) and ``n_0 = n - n_1`` correct, ranked by
    ascending score (rejection order) with mid-ranks for ties. The closed form of :func:`prr_per_group`
    gives :math:`A_\text{model} = (R_1 - n_1/2)/n^2`, with :math:`R_1` the rank sum of the incorrect units
    (averaging the losses of a tied run is the same as giving its incorrect units the run's mid-rank),
    :math:`A_\text{random} = n_1/(2n)` and :math:`A_\text{random} - A_\text{oracle} = n_0 n_1/(2n^2)`.
    By Mann–Whitney, :math:`R_1 = n_1(n_1+1)/2 + n_0 n_1 (1 - \mathrm{AUROC})` (AUROC = probability that a
    correct unit outscores an incorrect one, ties counting 1/2, :func:`saltbench.metrics.auroc`). So
    :math:`A_\text{random} - A_\text{model} = n_0 n_1 (\mathrm{AUROC} - 1/2)/n^2` and the ratio is
    :math:`2\,\mathrm{AUROC} - 1`. Both are NaN in the same cases (a single class).

    Consequences: on pooled binary units PRR ranks confidence functions exactly as AUROC does and adds no
    information (the workflow measures the rejection aspect with AURC instead, which is not a function of
    AUROC); per response, each response's PRR is ``2·AUROC_r − 1``, so :func:`prr_per_response` with
    uniform weights equals ``2 · auroc_per_response − 1`` too. The identity does **not** hold with
    ``ties="paper"`` when scores tie (the order-dependent rule gives e.g. −1 or 1 for ``[.5, .5]`` where
    AUROC is 0.5), nor for non-binary losses. Property-tested in ``tests/metrics/test_prr.py``.

    Undefined cases: the denominator is :math:`\bar e(1-\bar e)/2`, zero when every unit is correct
    or every unit is incorrect (and for a single unit); the result is NaN when
    :math:`|A_\text{random} - A_\text{oracle}| \le` ``atol``. Upstream tests for an exact 0.0, which
    floating error can miss for all-incorrect inputs; ``atol=0.0`` reproduces that test.

    Args:
        scores: shape ``(n,)``, finite.
        correct: shape ``(n,)``, 0/1 or bools.
        ties: ``"average"`` (default; expected value over orders of tied units, independent of unit
            order) or ``"paper"`` (ties rejected in ascending index order, as upstream).
        atol: tolerance for the undefined case (>= 0).

    Example:
        >>> round(prr([1, 1, .8, .8, .8], [1, 1, 0, 1, 0], ties="paper"), 6)
        0.666667
        >>> prr([.5, .5], [1, 0], ties="paper"), prr([.5, .5], [0, 1], ties="paper"), prr([.5, .5], [1, 0])
        (-1.0, 1.0, 0.0)
        >>> prr([.1, .2, .9, .8], [0, 0, 1, 1]), prr([1, 1, 1], [0, 0, 0]), prr([.3], [1])
        (1.0, nan, nan)
    """
    atol = _check_atol(atol)
    check_ties(ties)
    s, y = validate_scores_correct(scores, correct)
    return float(_grouped_prr(s, y, np.zeros(s.size, dtype=np.intp), 1, ties, atol)[0])


def _grouped_prr(
    scores: FloatArray, correct: FloatArray, codes: np.ndarray, n_groups: int, ties: Ties, atol: float
) -> np.ndarray:
    """PRR per group code in closed form (see :func:`prr_per_group`); no Python loop over groups."""
    losses = 1.0 - correct
    # group, then ascending score (ties: ascending index); one key suffices for a single group
    order = np.argsort(scores, kind="stable") if n_groups == 1 else np.lexsort((scores, codes))
    g = codes[order]
    ordered = losses[order]
    if ties == "average" and ordered.size:
        s = scores[order]
        starts = np.flatnonzero(np.concatenate(([True], (s[1:] != s[:-1]) | (g[1:] != g[:-1]))))
        sizes = np.diff(np.append(starts, s.size))
        ordered = np.repeat(np.add.reduceat(ordered, starts) / sizes, sizes)
    counts = np.bincount(g, minlength=n_groups)
    position = np.arange(1, g.size + 1) - (np.cumsum(counts) - counts)[g]
    n = counts.astype(np.float64)
    total = np.bincount(g, weights=ordered, minlength=n_groups)
    weighted = np.bincount(g, weights=position * ordered, minlength=n_groups)
    out = np.full(n_groups, np.nan)
    ok = n > 0
    b = total[ok] / n[ok]
    area_model = (weighted[ok] - total[ok] / 2) / n[ok] ** 2
    ar_uns = b / 2 - area_model
    ar_orc = 0.5 * b * (1.0 - b)
    with np.errstate(invalid="ignore", divide="ignore"):
        out[ok] = np.where(np.abs(ar_orc) <= atol, np.nan, ar_uns / ar_orc)
    return out


def prr_per_group(
    scores: ArrayLike, correct: ArrayLike, groups: ArrayLike, *, ties: Ties = "average", atol: float = 1e-12
) -> tuple[np.ndarray, np.ndarray]:
    """PRR inside each group: ``(group_labels, values)``, labels sorted, NaN where undefined.

    Same definition as :func:`prr`, computed for all groups in one vectorised pass. On the uniform
    grid ``r_k = k/n`` the trapezoid areas have a closed form: with losses ``l_i`` in rejection order
    (1-based position ``i``), total loss ``L`` and ``b = L/n``,
    ``A_model = (Σ i·l_i − L/2) / n²``, ``A_random = b/2``, ``A_oracle = b²/2``, so
    ``AR_orc = b(1−b)/2``.
    """
    atol = _check_atol(atol)
    check_ties(ties)
    s, y = validate_scores_correct(scores, correct)
    g = np.asarray(groups)
    check_same_length(scores=s, correct=y, groups=g)
    codes, n_groups = as_groups(g)
    return np.unique(g), _grouped_prr(s, y, codes, n_groups, ties, atol)


def prr_per_response(
    scores: ArrayLike,
    correct: ArrayLike,
    groups: ArrayLike,
    *,
    group_weighting: GroupWeighting = "uniform",
    ties: Ties = "average",
    atol: float = 1e-12,
) -> float:
    """Mean of the defined per-response PRRs (docs/metrics.md §5.4); NaN if no response has a defined PRR.

    ``group_weighting="uniform"`` averages the responses equally; ``"size"`` weights each response by
    its number of units (upstream's ``"weight"`` with unit weights).

    Example:
        >>> prr_per_response([.9, .1, .5, .5, .5, .5], [1, 0, 1, 1, 0, 0], list("aabbcc"))
        1.0
    """
    if group_weighting not in GROUP_WEIGHTINGS:
        raise ValueError(f"group_weighting must be one of {GROUP_WEIGHTINGS}, got {group_weighting!r}")
    labels, values = prr_per_group(scores, correct, groups, ties=ties, atol=atol)
    defined = np.isfinite(values)
    if not defined.any():
        return float("nan")
    if group_weighting == "uniform":
        return float(values[defined].mean())
    codes, n_groups = as_groups(np.asarray(groups))
    sizes = np.bincount(codes, minlength=n_groups).astype(np.float64)
    return float(np.average(values[defined], weights=sizes[defined]))
