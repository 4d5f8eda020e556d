"""Shared input validation for the metric functions (private).

Every public metric accepts Python sequences or numpy arrays; these helpers turn them into 1-D float
arrays and raise ``ValueError`` naming the argument and the offending value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]


def _first_bad(values: np.ndarray, bad: np.ndarray) -> Any:
    """The first offending value (for error messages)."""
    return values[np.flatnonzero(bad)[0]].item()


def as_1d_float(values: ArrayLike, name: str, *, allow_nonfinite: bool = False) -> FloatArray:
    """``values`` as a 1-D float64 array; non-finite entries rejected unless ``allow_nonfinite``."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {values!r:.80}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if not allow_nonfinite:
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(f"{name} must be finite, got {_first_bad(arr, bad)!r}")
    return arr


def as_labels(correct: ArrayLike, name: str = "correct", *, allow_nan: bool = False) -> FloatArray:
    """Binary correctness as a float64 array of 0.0/1.0 (bools accepted; NaN kept if ``allow_nan``)."""
    arr = as_1d_float(correct, name, allow_nonfinite=True)  # a NaN or inf label is named as not 0/1 below
    nan = np.isnan(arr)
    bad = ~(nan | (arr == 0.0) | (arr == 1.0))
    if not allow_nan:
        bad |= nan
    if bad.any():
        raise ValueError(f"{name} must contain only 0/1 (or bools), got {_first_bad(arr, bad)!r}")
    return arr


def check_same_length(**arrays: Sequence[Any] | np.ndarray) -> int:
    """The common length of the named arrays; ``ValueError`` listing all lengths if they differ."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"len({k})={v}" for k, v in lengths.items())
        raise ValueError(f"length mismatch: {detail}")
    return next(iter(lengths.values()))


def check_nonempty(arr: np.ndarray, name: str) -> None:
    """``ValueError`` if ``arr`` is empty."""
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")


def check_unit_interval(arr: np.ndarray, name: str) -> None:
    """``ValueError`` unless every entry of ``arr`` lies in [0, 1]."""
    bad = (arr < 0.0) | (arr > 1.0)
    if bad.any():
        raise ValueError(f"{name} must lie in [0, 1], got {_first_bad(arr, bad)!r}")


def as_groups(groups: ArrayLike, name: str = "groups") -> tuple[np.ndarray, int]:
    """Group labels (any hashable-by-numpy dtype) → (dense codes 0..G-1 in sorted-label order, G)."""
    arr = np.asarray(groups)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp), 0
    _, codes = np.unique(arr, return_inverse=True)
    codes = codes.reshape(-1).astype(np.intp, copy=False)
    return codes, int(codes.max()) + 1


def validate_scores_correct(
    scores: ArrayLike, correct: ArrayLike, scores_name: str = "scores"
) -> tuple[FloatArray, FloatArray]:
    """Finite 1-D scores and 0/1 correctness of equal, non-zero length: the input policy of every metric
    (docs/metrics.md §1): empty input, a non-finite score and a label other than 0/1 are ``ValueError``s
    naming the argument; a valid input on which the metric is undefined (one class) gives NaN."""
    s = as_1d_float(scores, scores_name)
    y = as_labels(correct)
    check_same_length(**{scores_name: s, "correct": y})
    check_nonempty(s, scores_name)
    return s, y
