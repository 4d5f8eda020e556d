"""AUROC of correctness vs. confidence: pooled and per response (docs/metrics.md §3;
docs/compatibility.md §1.9).

Naming. *Pooled AUROC* ranks every unit of every response together (one ROC curve). *Per-response
AUROC* computes one AUROC inside each response (group) and averages them. The SALT tutorial calls the
pooled value "macro-AUROC" and the per-response average "micro-AUROC" — the reverse of the usual
scikit-learn convention — so this module avoids both words.
"""

from __future__ import annotations

import numpy as np

from .validation import ArrayLike, as_groups, check_same_length, validate_scores_correct


def _grouped_auroc(scores: np.ndarray, labels: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Mann–Whitney AUROC per group code (NaN where a class is empty), ranks averaged over ties.

    Entries with a non-finite score or a NaN label are dropped first.
    """
    keep = np.isfinite(scores) & ~np.isnan(labels)
    s, y, g = scores[keep], labels[keep], codes[keep]
    out = np.full(n_groups, np.nan)
    if s.size == 0:
        return out
    # by group, then score (stable); a single group needs only one key
    order = np.argsort(s, kind="stable") if n_groups == 1 else np.lexsort((s, g))
    s, y, g = s[order], y[order], g[order]
    n = s.size
    # Tie blocks: maximal runs with equal (group, score).
    new_block = np.empty(n, dtype=bool)
    new_block[0] = True
    new_block[1:] = (g[1:] != g[:-1]) | (s[1:] != s[:-1])
    starts = np.flatnonzero(new_block)
    ends = np.append(starts[1:], n) - 1
    block_of = np.cumsum(new_block) - 1
    mid = ((starts + ends) / 2.0)[block_of]  # average 0-based global position of the tie block
    counts = np.bincount(g, minlength=n_groups)
    group_start = (np.cumsum(counts) - counts)[g]  # first global position of each item's group
    rank = mid - group_start + 1.0  # average 1-based rank within the group
    n_pos = np.bincount(g, weights=y, minlength=n_groups)
    n_all = counts.astype(np.float64)
    n_neg = n_all - n_pos
    rank_sum = np.bincount(g, weights=rank * y, minlength=n_groups)
    defined = (n_pos > 0) & (n_neg > 0)
    out[defined] = (rank_sum[defined] - n_pos[defined] * (n_pos[defined] + 1) / 2) / (
        n_pos[defined] * n_neg[defined]
    )
    return out


def auroc(scores: ArrayLike, correct: ArrayLike) -> float:
    r"""Pooled AUROC: probability that a correct unit outranks an incorrect one (ties count 1/2).

    Rank-sum (Mann–Whitney) form with average 1-based ranks :math:`R_i` over all kept units:

    .. math:: \mathrm{AUROC} = \frac{\sum_{i:\,y_i=1} R_i - P(P+1)/2}{P\,N}

    with :math:`P` correct and :math:`N` incorrect units. Direction: scores are higher = more
    confident (negate uncertainty-style scores first); higher AUROC is better, 0.5 is chance.
    Input policy of every metric (docs/metrics.md §1): empty input, a non-finite score or a label other
    than 0/1 is a ``ValueError``; if either class is empty the result is NaN.

    Args:
        scores: shape ``(n,)`` confidence scores.
        correct: shape ``(n,)`` 0/1 or bools.

    Example:
        >>> round(auroc([1, 1, .8, .8, .8], [1, 1, 0, 1, 0]), 6)  # 5/6
        0.833333
        >>> auroc([.5, .5], [1, 0]), auroc([.9, .1], [0, 1]), auroc([.88], [0])
        (0.5, 0.0, nan)
    """
    s, y = validate_scores_correct(scores, correct)
    return float(_grouped_auroc(s, y, np.zeros(s.size, dtype=np.intp), 1)[0])


def auroc_per_group(
    scores: ArrayLike, correct: ArrayLike, groups: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """AUROC inside each group: ``(group_labels, values)``, labels sorted, NaN where undefined.

    Same conventions as :func:`auroc`, computed for all groups at once (one sort, no Python loop).

    Example:
        >>> labels, values = auroc_per_group([.7, .65, .68, .5, .45, .48], [1, 0, 1, 1, 0, 1], list("aaabbb"))
        >>> labels.tolist(), values.tolist()
        (['a', 'b'], [1.0, 1.0])
    """
    s, y = validate_scores_correct(scores, correct)
    g = np.asarray(groups)
    check_same_length(scores=s, correct=y, groups=g)
    codes, n_groups = as_groups(g)
    labels = np.unique(g) if g.size else g
    return labels, _grouped_auroc(s, y, codes, n_groups)


def auroc_per_response(
    scores: ArrayLike, correct: ArrayLike, groups: ArrayLike, *, paper_micro: bool = False
) -> float:
    r"""Per-response AUROC: the mean of the per-group AUROCs (groups = responses / examples).

    * ``paper_micro=False`` (default): mean over groups whose AUROC is defined; NaN if none is.
    * ``paper_micro=True``: the SALT tutorial's "micro-AUROC" — the sum of the defined per-group values
      divided by the **total** number of groups, so undefined groups count as 0 (docs/compatibility.md §1.9).

    Note the authors' naming swap: their "macro-AUROC" is :func:`auroc` on pooled units, their
    "micro-AUROC" is this function with ``paper_micro=True``.

    Args:
        scores: shape ``(n,)``, higher = more confident.
        correct: shape ``(n,)`` 0/1 or bools.
        groups: shape ``(n,)`` response identifiers (any sortable labels).

    Example:
        >>> s = [.70, .65, .68, .50, .45, .48]; y = [1, 0, 1, 1, 0, 1]; g = [0, 0, 0, 1, 1, 1]
        >>> auroc_per_response(s, y, g), auroc(s, y)
        (1.0, 0.75)
        >>> auroc_per_response([.9, .1, .5], [1, 0, 1], [0, 0, 1], paper_micro=True)
        0.5
    """
    _, values = auroc_per_group(scores, correct, groups)
    defined = ~np.isnan(values)
    if paper_micro:
        return float(values[defined].sum() / values.size)
    return float(values[defined].mean()) if defined.any() else float("nan")
