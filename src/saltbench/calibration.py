"""Post-hoc calibration of confidence scores: fit on one split, apply to another (docs/confidence.md §5).

Every calibrator maps a raw score to a probability of being correct in [0, 1]; all but
``"histogram"`` are non-decreasing in *confidence*. Scores whose direction is lower = more confident
(perplexity, entropy) are handled by ``higher_is_confident=False``: the calibrator then works on the
negated score.

Methods (:data:`CALIBRATION_METHODS`):

* ``"zscore_sigmoid"`` — the only method of the authors' release: standardise with the training mean
  and population std, then a logistic sigmoid. Uses no labels.
* ``"platt"`` — logistic regression of correctness on the score (Platt scaling, with Platt's smoothed
  targets so that separable data still has a finite fit), solved by Newton's method.
* ``"isotonic"`` — isotonic regression (scikit-learn), increasing in confidence, clipped outside the
  training range.
* ``"histogram"`` — histogram binning: training accuracy per score bin (equal-mass or equal-width);
  empty bins fall back to the overall training accuracy. Not necessarily monotone.
* ``"none"`` — identity for scores that already are probabilities (must lie in [0, 1]).

Degenerate training data (a single class, or a constant score for ``"platt"``) gives a constant
calibrator at the training accuracy.

Example:
    >>> cal = fit_calibrator("platt", [0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
    >>> p = cal.apply([0.0, 0.5, 1.0]); bool(p[0] < p[1] < p[2])
    True
"""

from __future__ import annotations

import abc
import hashlib
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from saltbench.core.vocabulary import CALIBRATION_METHODS, CalibrationMethod
from saltbench.metrics.validation import as_1d_float, as_labels, check_same_length, check_unit_interval

FloatArray = npt.NDArray[np.float64]

HistogramBinning = Literal["equal_mass", "equal_width"]
HISTOGRAM_BINNINGS: tuple[HistogramBinning, ...] = ("equal_mass", "equal_width")
SplitMethod = Literal["permutation", "hash"]


def sigmoid(x: npt.ArrayLike) -> FloatArray:
    """Numerically stable logistic function ``1 / (1 + exp(-x))`` (no overflow for large ``|x|``)."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _signed(scores: npt.ArrayLike, name: str, higher_is_confident: bool) -> FloatArray:
    x = as_1d_float(scores, name)
    return x if higher_is_confident else -x


def _check_eps(eps: float) -> None:
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps!r}")


def zscore_sigmoid(
    train_scores: npt.ArrayLike, scores: npt.ArrayLike, higher_is_confident: bool = True, eps: float = 1e-12
) -> FloatArray:
    r"""Z-score + sigmoid calibration (docs/confidence.md §5.1).

    .. math:: \hat p(s) = \sigma\!\left(\pm \frac{s - \mu}{\sigma_\text{train}}\right)

    with :math:`\mu` the training mean, :math:`\sigma_\text{train}` the **population** std (divide by
    n), sign + for confidence-style and − for uncertainty-style scores. If
    :math:`\sigma_\text{train} \le` ``eps`` every output is 0.5.

    Args:
        train_scores: shape ``(m,)``, finite, non-empty (labels are not used).
        scores: shape ``(n,)``, finite.
        higher_is_confident: direction of the raw scores.
        eps: std threshold (> 0).

    Example:
        >>> zscore_sigmoid([1, 1, 1.8, 1.8, 1.8], [1, 1, 1.8, 1.8, 1.8], higher_is_confident=False).round(4)
        array([0.7729, 0.7729, 0.3065, 0.3065, 0.3065])
    """
    return ZScoreSigmoidCalibrator.fit(train_scores, higher_is_confident, eps).apply(scores)


@dataclass(frozen=True)
class Calibrator(abc.ABC):
    """A fitted calibrator; :meth:`apply` maps raw scores to probabilities in [0, 1]."""

    higher_is_confident: bool

    method: ClassVar[str]

    def apply(self, scores: npt.ArrayLike) -> FloatArray:
        """Calibrated probabilities for raw ``scores`` (shape ``(n,)``, finite)."""
        return self._apply_signed(_signed(scores, "scores", self.higher_is_confident))

    @abc.abstractmethod
    def _apply_signed(self, x: FloatArray) -> FloatArray:
        """Map confidence-direction scores to probabilities."""


@dataclass(frozen=True)
class ConstantCalibrator(Calibrator):
    """Always ``value`` (degenerate training data); ``fitted_method`` is the method that fell back."""

    value: float = 0.5
    fitted_method: str = "constant"
    method: ClassVar[str] = "constant"

    def _apply_signed(self, x: FloatArray) -> FloatArray:
        return np.full(x.shape, self.value)


@dataclass(frozen=True)
class ZScoreSigmoidCalibrator(Calibrator):
    """``sigmoid((x - mean) / std)`` on the signed score; 0.5 everywhere when ``std <= eps``."""

    mean: float = 0.0
    std: float = 1.0
    eps: float = 1e-12
    method: ClassVar[str] = "zscore_sigmoid"

    @classmethod
    def fit(
        cls, train_scores: npt.ArrayLike, higher_is_confident: bool, eps: float = 1e-12
    ) -> ZScoreSigmoidCalibrator:
        """Mean and population std of the signed training scores."""
        _check_eps(eps)
        x = _signed(train_scores, "train_scores", higher_is_confident)
        if x.size == 0:
            raise ValueError("train_scores must not be empty")
        return cls(higher_is_confident, float(x.mean()), float(x.std()), eps)

    def _apply_signed(self, x: FloatArray) -> FloatArray:
        if self.std <= self.eps:
            return np.full(x.shape, 0.5)
        return sigmoid((x - self.mean) / self.std)


@dataclass(frozen=True)
class PlattCalibrator(Calibrator):
    """``sigmoid(slope * x + intercept)`` on the signed score."""

    slope: float = 0.0
    intercept: float = 0.0
    method: ClassVar[str] = "platt"

    def _apply_signed(self, x: FloatArray) -> FloatArray:
        return sigmoid(self.slope * x + self.intercept)


@dataclass(frozen=True, eq=False)
class IsotonicCalibrator(Calibrator):
    """Piecewise-linear interpolation through the isotonic fit's thresholds, clipped at the ends."""

    x_thresholds: FloatArray = field(default_factory=lambda: np.zeros(1))
    y_thresholds: FloatArray = field(default_factory=lambda: np.full(1, 0.5))
    method: ClassVar[str] = "isotonic"

    def _apply_signed(self, x: FloatArray) -> FloatArray:
        return np.clip(np.interp(x, self.x_thresholds, self.y_thresholds), 0.0, 1.0)


@dataclass(frozen=True, eq=False)
class HistogramCalibrator(Calibrator):
    """Bin ``i`` = ``[edges[i-1], edges[i])`` of the interior edges (outer bins open) → ``values[i]``."""

    interior_edges: FloatArray = field(default_factory=lambda: np.zeros(0))
    values: FloatArray = field(default_factory=lambda: np.full(1, 0.5))
    method: ClassVar[str] = "histogram"

    def _apply_signed(self, x: FloatArray) -> FloatArray:
        return self.values[np.searchsorted(self.interior_edges, x, side="right")]


@dataclass(frozen=True)
class IdentityCalibrator(Calibrator):
    """Scores are already probabilities: returned unchanged after checking they lie in [0, 1]."""

    method: ClassVar[str] = "none"

    def _apply_signed(self, x: FloatArray) -> FloatArray:
        check_unit_interval(x, "scores")
        return x.copy()


def _fit_platt(x: FloatArray, y: FloatArray, higher_is_confident: bool) -> Calibrator:
    """Newton's method on the logistic log-loss with Platt's targets (N+ + 1)/(N+ + 2), 1/(N- + 2)."""
    n_pos = float(y.sum())
    n_neg = y.size - n_pos
    mu, sd = float(x.mean()), float(x.std())
    if n_pos == 0 or n_neg == 0 or sd == 0.0:
        return ConstantCalibrator(higher_is_confident, n_pos / y.size, "platt")
    z = (x - mu) / sd
    t = np.where(y == 1.0, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    design = np.stack([z, np.ones_like(z)], axis=1)

    def loss(w: FloatArray) -> float:
        a = design @ w  # -log sigmoid(a) = logaddexp(0, -a)
        return float(np.sum(t * np.logaddexp(0.0, -a) + (1 - t) * np.logaddexp(0.0, a)))

    w = np.array([0.0, np.log((n_pos + 1) / (n_neg + 1))])
    current = loss(w)
    for _ in range(100):
        p = sigmoid(design @ w)
        grad = design.T @ (p - t)
        hess = (design * (p * (1 - p))[:, None]).T @ design + 1e-12 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        scale = 1.0
        while scale > 1e-10:  # backtracking line search
            candidate = w - scale * step
            new = loss(candidate)
            if new <= current:
                break
            scale /= 2
        else:
            break
        w, current = candidate, new
        if np.max(np.abs(scale * step)) < 1e-10:
            break
    slope = float(w[0] / sd)
    return PlattCalibrator(higher_is_confident, slope, float(w[1] - slope * mu))


def _fit_isotonic(x: FloatArray, y: FloatArray, higher_is_confident: bool) -> Calibrator:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(increasing=True, out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(x, y)
    return IsotonicCalibrator(
        higher_is_confident, np.asarray(iso.X_thresholds_, float), np.asarray(iso.y_thresholds_, float)
    )


def _fit_histogram(
    x: FloatArray, y: FloatArray, higher_is_confident: bool, n_bins: int, binning: HistogramBinning
) -> Calibrator:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins <= 0:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if binning not in HISTOGRAM_BINNINGS:
        raise ValueError(f"histogram_binning must be one of {HISTOGRAM_BINNINGS}, got {binning!r}")
    if binning == "equal_width":
        edges = np.linspace(x.min(), x.max(), n_bins + 1)
    else:
        edges = np.quantile(x, np.linspace(0.0, 1.0, n_bins + 1))
    interior = np.unique(edges[1:-1])
    idx = np.searchsorted(interior, x, side="right")
    count = np.bincount(idx, minlength=interior.size + 1)
    hits = np.bincount(idx, weights=y, minlength=interior.size + 1)
    base = float(y.mean())
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(count > 0, hits / np.maximum(count, 1), base)
    return HistogramCalibrator(higher_is_confident, interior, values)


def fit_calibrator(
    method: CalibrationMethod,
    train_scores: npt.ArrayLike,
    train_correct: npt.ArrayLike,
    higher_is_confident: bool = True,
    *,
    n_bins: int = 15,
    histogram_binning: HistogramBinning = "equal_mass",
    eps: float = 1e-12,
) -> Calibrator:
    """Fit a calibrator of the given ``method`` on a training (calibration) split.

    Args:
        method: one of :data:`CALIBRATION_METHODS`.
        train_scores: shape ``(m,)`` raw scores, finite, non-empty.
        train_correct: shape ``(m,)`` 0/1 or bools (unused by ``"zscore_sigmoid"`` and ``"none"`` but
            still length-checked).
        higher_is_confident: direction of the raw scores; must be ``True`` for ``"none"``.
        n_bins: number of bins for ``"histogram"``.
        histogram_binning: ``"equal_mass"`` (quantile edges) or ``"equal_width"``.
        eps: std threshold of ``"zscore_sigmoid"``.

    Returns:
        A frozen :class:`Calibrator`; ``.apply(scores)`` gives probabilities in [0, 1].

    Example:
        >>> cal = fit_calibrator("histogram", [.1, .2, .3, .4], [0, 0, 1, 1], n_bins=2)
        >>> cal.apply([0.0, 0.2, 0.3, 1.0]).tolist()
        [0.0, 0.0, 1.0, 1.0]
    """
    if method not in CALIBRATION_METHODS:
        raise ValueError(f"method must be one of {CALIBRATION_METHODS}, got {method!r}")
    x = _signed(train_scores, "train_scores", higher_is_confident)
    y = as_labels(train_correct, "train_correct")
    check_same_length(train_scores=x, train_correct=y)
    if x.size == 0:
        raise ValueError("train_scores must not be empty")
    if method == "zscore_sigmoid":
        return ZScoreSigmoidCalibrator.fit(train_scores, higher_is_confident, eps)
    if method == "none":
        if not higher_is_confident:
            raise ValueError(
                "method 'none' needs probability scores: higher_is_confident must be True, got False"
            )
        check_unit_interval(x, "train_scores")
        return IdentityCalibrator(True)
    if y.min() == y.max():
        return ConstantCalibrator(higher_is_confident, float(y[0]), method)
    if method == "platt":
        return _fit_platt(x, y, higher_is_confident)
    if method == "isotonic":
        return _fit_isotonic(x, y, higher_is_confident)
    return _fit_histogram(x, y, higher_is_confident, n_bins, histogram_binning)


def split_by_sample(
    sample_ids: npt.ArrayLike, calibration_fraction: float, seed: int, *, method: SplitMethod = "permutation"
) -> npt.NDArray[np.bool_]:
    """Boolean mask selecting the calibration split; all rows of a sample id fall on the same side.

    * ``"permutation"``: the sorted unique ids are permuted with ``numpy.random.default_rng(seed)``;
      the first ``round(fraction * U)`` ids (clipped to ``1..U-1``) form the calibration split. Exact
      sizes; depends on the whole set of ids.
    * ``"hash"``: an id is in the calibration split iff ``blake2b(seed, id)`` mapped to [0, 1) is below
      the fraction. Each id's side is independent of the other ids (stable when data are added), sizes
      are only approximate.

    Args:
        sample_ids: shape ``(n,)``, one id per unit (str or int).
        calibration_fraction: in (0, 1).
        seed: integer seed.
        method: ``"permutation"`` or ``"hash"``.

    Returns:
        ``mask`` of shape ``(n,)``: ``True`` = calibration split, ``False`` = evaluation split.

    Example:
        >>> m = split_by_sample(["a", "a", "b", "c", "c", "d"], 0.5, seed=0)
        >>> int(m.sum()) in (2, 3, 4), bool(m[0] == m[1] and m[3] == m[4])
        (True, True)
    """
    if not 0.0 < calibration_fraction < 1.0:
        raise ValueError(f"calibration_fraction must lie in (0, 1), got {calibration_fraction!r}")
    ids = np.asarray(sample_ids)
    if ids.ndim != 1:
        raise ValueError(f"sample_ids must be 1-D, got shape {ids.shape}")
    if ids.size == 0:
        return np.zeros(0, dtype=bool)
    uniq, codes = np.unique(ids, return_inverse=True)
    codes = codes.reshape(-1)
    if method == "permutation":
        if uniq.size < 2:
            raise ValueError(f"need at least 2 distinct sample_ids to split, got {uniq.size}")
        n_cal = int(np.clip(round(calibration_fraction * uniq.size), 1, uniq.size - 1))
        chosen = np.zeros(uniq.size, dtype=bool)
        chosen[np.random.default_rng(seed).permutation(uniq.size)[:n_cal]] = True
    elif method == "hash":
        key = str(int(seed)).encode()

        def unit(value: object) -> float:
            digest = hashlib.blake2b(str(value).encode(), digest_size=8, key=key).digest()
            return int.from_bytes(digest, "big") / 2.0**64

        chosen = np.fromiter((unit(u) < calibration_fraction for u in uniq.tolist()), bool, uniq.size)
    else:
        raise ValueError(f"method must be 'permutation' or 'hash', got {method!r}")
    return chosen[codes]
