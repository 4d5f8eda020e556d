"""Unit statuses and the per-response metrics dictionary (docs/evaluation.md §6.3, §7–8).

Status of an aligned pair ``(response unit, reference unit)``, checked in this order:

1. no response unit → ``missing``;
2. no reference unit → ``redundant`` (a surplus unit; a surplus DK is redundant, not selective);
3. the response unit is a DK marker → ``selective``;
4. ``correct`` when the normalised units are equal, else ``incorrect``.

Metrics, with C correct, R response units, G reference units, S selective, X redundant, M missing,
P = C + incorrect + S present aligned slots, I internal missing (missing pairs followed by a pair that has
a response unit; always 0 in strict mode)::

    precision = C / (R + I)        recall = C / G              coverage = slot_coverage = P / G
    accuracy = C / (G - S)         accuracy_include_extra = C / (G - S + X)
    hallucination_score = X / G

Every ratio is a float and is ``0.0`` when its denominator is 0 (the paper returns the int 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from saltbench.core.vocabulary import Status

METRIC_KEYS: tuple[str, ...] = (
    "num_response_units",
    "num_reference_units",
    "num_correct",
    "num_missing",
    "num_internal_missing",
    "num_precision_units",
    "num_redundant",
    "num_extra",
    "num_present_aligned_slots",
    "num_selective",
    "dynamic_alignment",
    "precision",
    "recall",
    "slot_coverage",
    "coverage",
    "accuracy",
    "accuracy_include_extra",
    "hallucination_score",
)
"""Every key of the metrics dictionary, in the order of docs/evaluation.md §8."""


@dataclass(frozen=True)
class Comparison:
    """One aligned pair of units.

    Attributes:
        index: position of the pair in the comparison sequence.
        response_unit / reference_unit: the unit texts (``None`` for a gap).
        is_correct: ``status == "correct"``.
        status: one of :data:`STATUSES`.
        response_index / reference_index: positions in the response / reference unit lists (``None``
            for a gap); ``response_index`` selects the unit's span in ``Evaluation.response_unit_spans``.
    """

    index: int
    response_unit: str | None
    reference_unit: str | None
    is_correct: bool
    status: Status
    response_index: int | None = None
    reference_index: int | None = None


T = TypeVar("T")

_new = object.__new__
_set = object.__setattr__


def frozen_instance(cls: type[T], fields: dict[str, Any]) -> T:
    """``cls(**fields)`` for a frozen dataclass without ``__post_init__``, built in one step.

    A frozen dataclass's ``__init__`` sets each field with ``object.__setattr__``; here the field
    dictionary becomes the instance dictionary at once (three times faster for :class:`Comparison`, of
    which ``evaluate`` builds one per aligned pair). ``fields`` must hold every field, in field order.
    """
    obj = _new(cls)
    _set(obj, "__dict__", fields)
    return obj


def make_comparisons(
    response_units: Sequence[str],
    reference_units: Sequence[str],
    statuses: Sequence[Status],
    pairs: tuple[Sequence[int], Sequence[int]] | None = None,
) -> tuple[Comparison, ...]:
    """The :class:`Comparison` of each aligned pair, in order: the index pairs ``pairs`` (``-1`` = gap), or
    with ``pairs=None`` the positional pairs of strict alignment (docs/evaluation.md §5).

    Each is built as :func:`frozen_instance` builds it, inlined (one per aligned pair).
    """
    out: list[Comparison] = []
    append = out.append
    if pairs is None:
        n_resp, n_ref = len(response_units), len(reference_units)
        for k, status in enumerate(statuses):
            comparison = _new(Comparison)
            _set(
                comparison,
                "__dict__",
                {
                    "index": k,
                    "response_unit": response_units[k] if k < n_resp else None,
                    "reference_unit": reference_units[k] if k < n_ref else None,
                    "is_correct": status == "correct",
                    "status": status,
                    "response_index": k if k < n_resp else None,
                    "reference_index": k if k < n_ref else None,
                },
            )
            append(comparison)
    else:
        for k, (ri, gi, status) in enumerate(zip(*pairs, statuses)):
            comparison = _new(Comparison)
            _set(
                comparison,
                "__dict__",
                {
                    "index": k,
                    "response_unit": response_units[ri] if ri >= 0 else None,
                    "reference_unit": reference_units[gi] if gi >= 0 else None,
                    "is_correct": status == "correct",
                    "status": status,
                    "response_index": ri if ri >= 0 else None,
                    "reference_index": gi if gi >= 0 else None,
                },
            )
            append(comparison)
    return tuple(out)


def pair_statuses(
    response_idx: Sequence[int],
    reference_idx: Sequence[int],
    response_keys: Sequence[str],
    response_dk: Sequence[bool],
    reference_keys: Sequence[str],
) -> list[Status]:
    """Status of each aligned index pair (``-1`` = gap), in the order of the module docstring."""
    out: list[Status] = []
    append = out.append
    for ri, gi in zip(response_idx, reference_idx):
        if ri < 0:
            append("missing")
        elif gi < 0:
            append("redundant")
        elif response_dk[ri]:
            append("selective")
        elif response_keys[ri] == reference_keys[gi]:
            append("correct")
        else:
            append("incorrect")
    return out


def count_internal_missing(statuses: Sequence[str], response_idx: Sequence[int]) -> int:
    """Missing pairs that have at least one later pair with a response unit."""
    internal = 0
    seen_response = False
    for status, ri in zip(reversed(statuses), reversed(response_idx)):
        if ri >= 0:
            seen_response = True
        elif status == "missing" and seen_response:
            internal += 1
    return internal


def compute_metrics(
    statuses: Sequence[str], n_response: int, n_reference: int, n_internal_missing: int, dynamic: bool
) -> dict[str, float | int | bool]:
    """The metrics dictionary of docs/evaluation.md §8 (keys: :data:`METRIC_KEYS`); a ratio with a zero
    denominator is ``0.0``."""
    c = statuses.count("correct")
    s = statuses.count("selective")
    x = statuses.count("redundant")
    m = statuses.count("missing")
    p = len(statuses) - x - m  # correct, incorrect or selective: both units present
    g = n_reference
    precision_units = n_response + n_internal_missing
    coverage = p / g if g else 0.0
    return {
        "num_response_units": n_response,
        "num_reference_units": g,
        "num_correct": c,
        "num_missing": m,
        "num_internal_missing": n_internal_missing,
        "num_precision_units": precision_units,
        "num_redundant": x,
        "num_extra": x,
        "num_present_aligned_slots": p,
        "num_selective": s,
        "dynamic_alignment": dynamic,
        "precision": c / precision_units if precision_units else 0.0,
        "recall": c / g if g else 0.0,
        "slot_coverage": coverage,
        "coverage": coverage,
        "accuracy": c / (g - s) if g - s else 0.0,
        "accuracy_include_extra": c / (g - s + x) if g - s + x else 0.0,
        "hallucination_score": x / g if g else 0.0,
    }
