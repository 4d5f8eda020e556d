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
from typing import Literal

from saltbench.contracts import Status

Alignment = Literal["strict", "dynamic"]
ALIGNMENTS: tuple[Alignment, ...] = ("strict", "dynamic")

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


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def compute_metrics(
    statuses: Sequence[str], n_response: int, n_reference: int, n_internal_missing: int, dynamic: bool
) -> dict[str, float | int | bool]:
    """The metrics dictionary of docs/evaluation.md §8 (keys: :data:`METRIC_KEYS`)."""
    c = statuses.count("correct")
    wrong = statuses.count("incorrect")
    s = statuses.count("selective")
    x = statuses.count("redundant")
    m = statuses.count("missing")
    p = c + wrong + s
    g = n_reference
    precision_units = n_response + n_internal_missing
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
        "precision": _ratio(c, precision_units),
        "recall": _ratio(c, g),
        "slot_coverage": _ratio(p, g),
        "coverage": _ratio(p, g),
        "accuracy": _ratio(c, g - s),
        "accuracy_include_extra": _ratio(c, g - s + x),
        "hallucination_score": _ratio(x, g),
    }
