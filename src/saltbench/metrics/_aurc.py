"""Area under the risk–coverage curve (selective classification)."""

from __future__ import annotations

import numpy as np

from ._rejection import Ties, check_ties, rejection_losses
from .validation import ArrayLike, validate_scores_correct


def aurc(scores: ArrayLike, correct: ArrayLike, *, ties: Ties = "average") -> float:
    r"""Area under the risk–coverage curve; lower is better.

    Keep the :math:`k` most confident units (scores: higher = more confident); the *selective risk*
    is the error rate among them, :math:`\rho_k = \frac{1}{k}\sum_{i \le k}(1 - y_{(i)})`. AURC is
    the mean over the :math:`n` coverage levels :math:`k/n`:

    .. math:: \mathrm{AURC} = \frac{1}{n} \sum_{k=1}^{n} \rho_k

    A perfect ranking of a set with error rate :math:`\bar e` reaches
    :math:`\frac{1}{n}\sum_{k > n(1-\bar e)} (k - n(1-\bar e))/k`; random ranking gives :math:`\bar e`
    in expectation. Unlike PRR (which equals ``2·AUROC − 1`` on binary units), AURC is not a function of
    AUROC: the risk of the retained set weights the most confident units most (``1/k``), so two rankings
    with equal AUROC can differ in AURC. ``ties`` as in :func:`prr`: ``"average"`` uses the expected
    risk over orders of tied units (order-independent), ``"paper"`` breaks ties by index like the PRR
    rejection order.

    Args:
        scores: shape ``(n,)``, finite.
        correct: shape ``(n,)``, 0/1 or bools.
        ties: ``"average"`` or ``"paper"``.

    Example:
        >>> aurc([.9, .8, .1], [1, 1, 0])  # risks 0, 0, 1/3
        0.1111111111111111
        >>> aurc([.5, .5], [1, 0])  # expected risks 1/2, 1/2
        0.5
    """
    check_ties(ties)
    s, y = validate_scores_correct(scores, correct)
    _, ordered = rejection_losses(s, 1.0 - y, ties)  # least confident first
    kept_first = ordered[::-1]  # most confident first
    n = kept_first.size
    risk = np.cumsum(kept_first) / np.arange(1, n + 1)
    return float(risk.mean())
