"""Answer shapes of a simulated model: an inserted atom, a deleted one, two neighbours reordered.

A simulated model writes the reference with its wrong atoms replaced, so its units align one to one with the
reference's. Real answers do not: they repeat an atom, skip one, write two lines (or, in a one-line answer,
two atoms) in the wrong order. With the rates ``insertion_rate``, ``deletion_rate`` and ``reorder_rate``
(each a share of the responses, drawn independently, in that order: docs/simulation.md §6.1) the answer's
body is edited after its atoms are drawn:

* **insertion**: a uniformly chosen atom is written twice — its text and the separator after it (before it,
  for the last atom) copied right after it, with their probabilities: ``n + 1`` atoms;
* **deletion**: a uniformly chosen atom is dropped with the separator after it (before it, for the last
  atom): ``n − 1`` atoms;
* **reorder**: two neighbouring lines swap places (two neighbouring atoms in a one-line answer), the
  separator between them kept: the same atoms in another order.

An answer of one atom is left as it is (no edit would leave a well-formed answer of every task).

The atoms and lines are the evaluation's own (:func:`saltbench.evaluation.decompose_clean` with the task's
rule), so every edit is one the scoring stage reads back as planned. Every draw comes from the generator
the caller passes (seeded by the model's seed and the prompt), so a response stays a function of both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np

from saltbench.evaluation import decompose_clean

Shape = Literal["insertion", "deletion", "reorder"]
SHAPES: tuple[Shape, ...] = ("insertion", "deletion", "reorder")
"""The edits, in the order they are drawn and applied."""


def draw_shapes(rates: Mapping[str, float], rng: np.random.Generator) -> tuple[Shape, ...]:
    """The shapes one response gets: ``shape`` when a uniform draw falls below ``rates[shape]`` (one draw
    per shape, in :data:`SHAPES` order, even at rate 0: a rate moves no other shape's draws).

    Example:
        >>> draw_shapes({"insertion": 1.0, "deletion": 0.0, "reorder": 1.0}, np.random.default_rng(0))
        ('insertion', 'reorder')
    """
    draws = rng.random(len(SHAPES))
    return tuple(s for s, u in zip(SHAPES, draws, strict=True) if u < rates.get(s, 0.0))


def _spans(text: str, rule: object, granularity: str) -> tuple[np.ndarray, np.ndarray]:
    _, (starts, ends) = decompose_clean(text, rule, granularity)  # type: ignore[arg-type]
    return np.asarray(starts, np.int64), np.asarray(ends, np.int64)


def _splice(text: str, probs: np.ndarray, cuts: list[tuple[int, int]]) -> tuple[str, np.ndarray]:
    """``text`` (and its per-character ``probs``) rebuilt from the pieces ``[start, end)`` in order."""
    return (
        "".join(text[a:b] for a, b in cuts),
        np.concatenate([probs[a:b] for a, b in cuts]) if cuts else probs[:0],
    )


def _copy_or_drop(
    text: str, probs: np.ndarray, spans: tuple[np.ndarray, np.ndarray], shape: Shape, j: int
) -> tuple[str, np.ndarray]:
    """Atom ``j`` with its separator (the one after it; before it for the last atom) written twice
    (``insertion``) or dropped (``deletion``)."""
    starts, ends = spans
    last = j == starts.size - 1
    a, b = (int(ends[j - 1]), int(ends[j])) if last else (int(starts[j]), int(starts[j + 1]))
    if shape == "insertion":
        return _splice(text, probs, [(0, b), (a, b), (b, len(text))])
    return _splice(text, probs, [(0, a), (b, len(text))])


def _swap(
    text: str, probs: np.ndarray, spans: tuple[np.ndarray, np.ndarray], j: int
) -> tuple[str, np.ndarray]:
    """Units ``j`` and ``j + 1`` (lines or atoms) swapped, the text around and between them kept."""
    starts, ends = spans
    a, b, c, d = int(starts[j]), int(ends[j]), int(starts[j + 1]), int(ends[j + 1])
    return _splice(text, probs, [(0, a), (c, d), (b, c), (a, b), (d, len(text))])


def reshape(
    text: str, probs: np.ndarray, rule: object, shapes: tuple[Shape, ...], rng: np.random.Generator
) -> tuple[str, np.ndarray]:
    """``text`` (a clean answer body) and its per-character ``probs`` with each of ``shapes`` applied in
    turn (module docstring); ``rule`` is the task's unit rule (:func:`saltbench.evaluation.resolve_task`).

    Example:
        >>> from saltbench.evaluation import resolve_task
        >>> from saltbench.tasks import get_task
        >>> rule, p = resolve_task(get_task("dna")), np.ones(11)
        >>> reshape("TCT CGA AAA", p, rule, ("deletion", "reorder"), np.random.default_rng(1))[0]
        'AAA TCT'
    """
    if len(probs) != len(text):
        raise ValueError(f"reshape: {len(probs)} probabilities for {len(text)} characters")
    for shape in shapes:
        spans = _spans(text, rule, "atom")
        n = spans[0].size
        if shape == "reorder":
            lines = _spans(text, rule, "line")
            units = lines if lines[0].size > 1 else spans
            if units[0].size > 1:
                text, probs = _swap(text, probs, units, int(rng.integers(units[0].size - 1)))
        elif n > 1:
            text, probs = _copy_or_drop(text, probs, spans, shape, int(rng.integers(n)))
    return text, probs


__all__ = ["SHAPES", "Shape", "draw_shapes", "reshape"]
