"""Planning the interventions of one sample: positions ``k``, corruption counts ``c``, placements.

For a sample with ``n >= 2`` reference atoms:

* positions: the absolute ``positions`` within ``[2, n]``, plus ``k = clamp(floor(f·n + 1/2), 2, n)``
  for each ``f`` in ``position_fractions``; duplicates merged, ascending.
* counts at position ``k``: the ``corruption_counts`` with ``c <= k - 1``, plus
  ``c = max(1, floor(f·(k-1) + 1/2))`` for each ``f`` in ``corruption_fractions``; merged, ascending.
* ``c = 0`` gives one ``clean`` intervention; every ``c > 0`` one intervention per placement.

Seeding (``derive_seed``, independent of ``PYTHONHASHSEED`` and of the grid): the wrong value of atom
``i`` of a sample is drawn once, from ``Random(derive_seed(seed, sample_id, "atom", i))``, and reused by
every intervention that corrupts atom ``i`` — placements at equal ``c`` therefore differ only in *which*
atoms are wrong, not in *how* wrong they are. The positions of a ``random`` placement come from
``Random(derive_seed(seed, sample_id, "random", k, c))``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from saltbench.core.seeds import derive_seed
from saltbench.core.vocabulary import Placement
from saltbench.evaluation import AtomCorruptor
from saltbench.interventions._layout import AnswerLayout
from saltbench.interventions._placement import choose_positions

PlacementLabel = Literal["clean", "random", "local", "distant"]


@dataclass(frozen=True)
class InterventionSpec:
    """One intervention of one sample.

    Attributes:
        position: ``k`` (1-based index of the atom the model predicts next), ``2 <= k <= n``.
        n_corrupted: ``c`` (number of wrong atoms among the ``k - 1`` prefix atoms).
        placement: ``clean`` (``c = 0``), ``random``, ``local`` or ``distant``.
        corrupted_positions: 1-based positions of the wrong atoms, ascending.
        corrupted_atoms: the wrong atoms, in the same order.
    """

    position: int
    n_corrupted: int
    placement: PlacementLabel
    corrupted_positions: tuple[int, ...]
    corrupted_atoms: tuple[str, ...]

    @property
    def replacements(self) -> dict[int, str]:
        return dict(zip(self.corrupted_positions, self.corrupted_atoms))


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def grid_positions(n_atoms: int, positions: Sequence[int], fractions: Sequence[float]) -> tuple[int, ...]:
    """Positions ``k`` tested for an answer of ``n_atoms`` atoms (module docstring); ``()`` if ``n < 2``."""
    if n_atoms < 2:
        return ()
    ks = {k for k in positions if 2 <= k <= n_atoms}
    ks |= {min(n_atoms, max(2, _round_half_up(f * n_atoms))) for f in fractions}
    return tuple(sorted(ks))


def grid_counts(k: int, counts: Sequence[int], fractions: Sequence[float]) -> tuple[int, ...]:
    """Corruption counts ``c`` tested at position ``k`` (rule: module docstring)."""
    cs = {c for c in counts if 0 <= c <= k - 1}
    cs |= {max(1, _round_half_up(f * (k - 1))) for f in fractions}
    return tuple(sorted(c for c in cs if c <= k - 1))


def plan_sample(
    layout: AnswerLayout,
    corruptor: AtomCorruptor,
    *,
    sample_id: str,
    seed: int,
    positions: Sequence[int] = (),
    position_fractions: Sequence[float] = (0.1, 0.25, 0.5, 0.75, 1.0),
    corruption_counts: Sequence[int] = (0, 1, 2, 4),
    corruption_fractions: Sequence[float] = (),
    placements: Sequence[Placement] = ("random", "local", "distant"),
) -> list[InterventionSpec]:
    """Every intervention of one sample, ordered by ``k``, then ``c``, then placement (as given)."""
    wrong: dict[int, str] = {}

    def wrong_atom(i: int) -> str:
        if i not in wrong:
            rng = random.Random(derive_seed(seed, sample_id, "atom", i))
            wrong[i] = corruptor(layout.atoms[i - 1], rng)
        return wrong[i]

    specs: list[InterventionSpec] = []
    for k in grid_positions(layout.n_atoms, positions, position_fractions):
        for c in grid_counts(k, corruption_counts, corruption_fractions):
            if c == 0:
                specs.append(InterventionSpec(k, 0, "clean", (), ()))
                continue
            for placement in placements:
                rng = None
                if placement == "random":
                    rng = random.Random(derive_seed(seed, sample_id, "random", k, c))
                chosen = choose_positions(k, c, placement, rng)
                specs.append(InterventionSpec(k, c, placement, chosen, tuple(wrong_atom(i) for i in chosen)))
    return specs


__all__ = ["InterventionSpec", "PlacementLabel", "grid_counts", "grid_positions", "plan_sample"]
