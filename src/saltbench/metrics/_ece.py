"""Expected and maximum calibration error (docs/metrics.md §2)."""

from __future__ import annotations

import numpy as np

from saltbench.core.vocabulary import ECE_BINNINGS, EceBinning

from .validation import ArrayLike, check_unit_interval, validate_scores_correct

Binning = EceBinning
BINNINGS = ECE_BINNINGS


def _bin_stats(
    confidences: ArrayLike, correct: ArrayLike, n_bins: int, binning: Binning
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Validate, then per-bin (count, Σ confidence, Σ correct) for bins 1..n_bins, and N."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins <= 0:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if binning not in BINNINGS:
        raise ValueError(f"binning must be one of {BINNINGS}, got {binning!r}")
    conf, acc = validate_scores_correct(confidences, correct, "confidences")
    check_unit_interval(conf, "confidences")
    n_bins = int(n_bins)
    # Boundaries j / m (floating division, as upstream); bin j holds (b[j-1], b[j]].
    boundaries = np.arange(n_bins + 1) / n_bins
    idx = np.searchsorted(boundaries, conf, side="left")  # 0 only for c <= 0.0, i.e. c == 0.0
    if binning == "corrected":
        idx = np.maximum(idx, 1)
    counts = np.bincount(idx, minlength=n_bins + 1)[1:]
    conf_sum = np.bincount(idx, weights=conf, minlength=n_bins + 1)[1:]
    acc_sum = np.bincount(idx, weights=acc, minlength=n_bins + 1)[1:]
    return counts, conf_sum, acc_sum, conf.size


def calibration_errors(
    confidences: ArrayLike, correct: ArrayLike, n_bins: int = 15, binning: Binning = "paper"
) -> tuple[float, float]:
    """``(ece, mce)`` in one pass; see :func:`ece` and :func:`mce` for definitions and arguments."""
    counts, conf_sum, acc_sum, n = _bin_stats(confidences, correct, n_bins, binning)
    gap_mass = np.abs(conf_sum - acc_sum)  # = |mean_conf - mean_acc| * n_bin
    ece_value = float(gap_mass.sum() / n)
    nonempty = counts > 0
    mce_value = float((gap_mass[nonempty] / counts[nonempty]).max()) if nonempty.any() else 0.0
    return ece_value, mce_value


def ece(confidences: ArrayLike, correct: ArrayLike, n_bins: int = 15, binning: Binning = "paper") -> float:
    r"""Expected calibration error with equal-width bins.

    .. math::

        \mathrm{ECE} = \sum_{j=1}^{m} \frac{n_j}{N}\,\bigl|\overline{c}_j - \overline{a}_j\bigr|,
        \qquad B_j = \bigl(\tfrac{j-1}{m}, \tfrac{j}{m}\bigr]

    where :math:`\overline{c}_j` is the mean confidence and :math:`\overline{a}_j` the accuracy of the
    :math:`n_j` units in bin :math:`B_j`, and :math:`N` the number of units. Lower is better.

    Binning quirk (docs/metrics.md §2.2; docs/compatibility.md §1.8): bins are open below, so with
    ``binning="paper"`` a confidence of exactly ``0.0`` falls in **no** bin yet still counts in
    :math:`N` (it contributes
    nothing to the sum). ``binning="corrected"`` puts ``0.0`` into the first bin instead.

    Args:
        confidences: shape ``(N,)``, values in [0, 1] (calibrated probabilities; higher = more confident).
        correct: shape ``(N,)``, 0/1 or bools.
        n_bins: number of equal-width bins ``m`` (positive).
        binning: ``"paper"`` (upstream-compatible) or ``"corrected"``.

    Returns:
        The ECE as a float in [0, 1].

    Raises:
        ValueError: empty input, length mismatch, non-finite or out-of-range confidences, non-binary
            ``correct``, ``n_bins <= 0`` or an unknown ``binning``.

    Example:
        >>> round(ece([1, 1, .8, .8, .8], [1, 1, 0, 1, 0]), 12)
        0.28
        >>> ece([0.0, 1.0], [1, 1]), ece([0.0, 1.0], [1, 1], binning="corrected")
        (0.0, 0.5)
    """
    return calibration_errors(confidences, correct, n_bins, binning)[0]


def mce(confidences: ArrayLike, correct: ArrayLike, n_bins: int = 15, binning: Binning = "paper") -> float:
    r"""Maximum calibration error over the occupied bins (0 if every bin is empty).

    .. math:: \mathrm{MCE} = \max_{j:\,n_j>0} \bigl|\overline{c}_j - \overline{a}_j\bigr|

    Same bins, arguments and validation as :func:`ece`. Lower is better.

    Example:
        >>> round(mce([1, 1, .8, .8, .8], [1, 1, 0, 1, 0]), 6)  # 0.8 - 1/3
        0.466667
    """
    return calibration_errors(confidences, correct, n_bins, binning)[1]
