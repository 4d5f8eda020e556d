"""Brier score of probabilistic confidences."""

from __future__ import annotations

import numpy as np

from .validation import ArrayLike, check_unit_interval, validate_scores_correct


def brier(confidences: ArrayLike, correct: ArrayLike) -> float:
    r"""Brier score :math:`\frac{1}{N}\sum_i (c_i - y_i)^2`; lower is better.

    Args:
        confidences: shape ``(N,)``, probabilities of being correct in [0, 1].
        correct: shape ``(N,)``, 0/1 or bools.

    Raises:
        ValueError: empty input, length mismatch, non-finite or out-of-range confidences.

    Example:
        >>> brier([1.0, 0.8], [1, 0])
        0.32000000000000006
        >>> brier([.5, .5], [1, 0])
        0.25
    """
    c, y = validate_scores_correct(confidences, correct, "confidences")
    check_unit_interval(c, "confidences")
    return float(np.mean((c - y) ** 2))
