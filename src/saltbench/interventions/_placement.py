"""Placements of ``c`` corrupted atoms among the prefix positions ``1..k-1`` (1-based) of an intervention at
position ``k``: ``local`` = ``k-c..k-1`` (just before the predicted atom), ``distant`` = ``1..c`` (farthest
from it), ``random`` = ``c`` distinct positions drawn uniformly (sorted). The corruption rules themselves are
the evaluator's (:mod:`saltbench.evaluation._corruption`).
"""

from __future__ import annotations

import random

from saltbench.core.vocabulary import PLACEMENTS, Placement


def choose_positions(
    k: int, c: int, placement: Placement, rng: random.Random | None = None
) -> tuple[int, ...]:
    """1-based prefix positions (among ``1..k-1``) of the ``c`` corrupted atoms, ascending.

    Raises:
        ValueError: ``k < 2``, ``c`` outside ``[0, k-1]``, unknown placement, or ``random`` without ``rng``.
    """
    if k < 2:
        raise ValueError(f"k must be >= 2, got {k}")
    if not 0 <= c <= k - 1:
        raise ValueError(f"c must lie in [0, k-1] = [0, {k - 1}], got {c}")
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    if placement == "local":
        return tuple(range(k - c, k))
    if placement == "distant":
        return tuple(range(1, c + 1))
    if rng is None:
        raise ValueError("placement 'random' needs an rng, got None")
    return tuple(sorted(rng.sample(range(1, k), c)))


__all__ = ["choose_positions"]
