"""Unit confidence from token log-probabilities (docs/confidence.md §2, §4).

Two layers, both vectorised over all tokens / units of a run:

1. :func:`token_signals` turns per-token log-probabilities into a per-token log-likelihood ``ℓ_t`` and
   entropy ``H_t``.

   * ``flavour="topk"`` (paper-compatible, docs/confidence.md §2.1): the vector
     ``d = [chosen, alternatives...]`` is repaired (a sentinel chosen value ``< -1000`` becomes
     ``min(finite alternatives) - 1``), cut/padded
     to ``top_k = 20`` entries with ``-1e9``, and **renormalised with a softmax**, so ``p_t`` is the
     chosen token's share of the returned top-k mass; ``ℓ_t = ln clip(p_t, 1e-20, 1)`` and ``H_t`` is
     the entropy of the renormalised top-k distribution. A token without log-probabilities gets
     ``d = 0`` (uniform: ``p = 1/20``, ``H = ln 20``).
   * ``flavour="full"``: ``p_t = exp(chosen log-prob)`` (the model's true probability, clipped to
     ``[1e-20, 1]``) and ``H_t`` = the full-vocabulary entropy stored at generation time (NaN when the
     backend did not record it — vLLM — so ``mean_entropy``/``max_entropy`` of its units are NaN).

2. :func:`unit_confidences` aggregates tokens into units given ``(token, unit)`` pairs — a token may
   belong to several units (it then counts fully for each, docs/confidence.md §3.4) — and returns every
   confidence function of :data:`CONFIDENCE_FUNCTIONS` per unit (NaN for units without tokens).

:func:`unit_confidence` is the one-unit convenience API on ragged Python lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Flavour = Literal["topk", "full"]
FLAVOURS: tuple[Flavour, ...] = ("topk", "full")

TOP_K = 20
"""Length of the renormalised top-k vector (the OpenAI/Gemini API limit used by the paper)."""
EPS = 1e-20
"""Probability floor before taking logs."""
SENTINEL_THRESHOLD = -1000.0
"""A chosen-token log-prob below this is treated as a sentinel (e.g. ``-inf``, ``-9999``) and repaired."""
PAD_LOGPROB = -1e9
"""Padding value for missing top-k entries (softmax weight 0)."""
_CHUNK = 1 << 14  # rows per block: temporaries stay small and are reused


@dataclass(frozen=True)
class ConfidenceSpec:
    """A confidence function: its name, direction and whether its range needs calibration.

    Attributes:
        name: the function's name (a key of :data:`CONFIDENCE_FUNCTIONS`).
        higher_is_confident: ``True`` if larger values mean more confident.
        needs_calibration: ``True`` if values are not probabilities in [0, 1].
        formula: the definition over the unit's tokens ``t = 1..T``.
    """

    name: str
    higher_is_confident: bool
    needs_calibration: bool
    formula: str


CONFIDENCE_FUNCTIONS: Mapping[str, ConfidenceSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            ConfidenceSpec("mean_probability", True, False, "(1/T) Σ p_t"),
            ConfidenceSpec("median_probability", True, False, "median_t p_t (mean of the two middle values)"),
            ConfidenceSpec("max_probability", True, False, "max_t p_t"),
            ConfidenceSpec("log_probability_sum", True, True, "Σ ℓ_t"),
            ConfidenceSpec("max_log_probability", True, True, "max_t ℓ_t"),
            ConfidenceSpec("log_perplexity", False, True, "-(1/T) Σ ℓ_t"),
            ConfidenceSpec("perplexity", False, True, "exp(-(1/T) Σ ℓ_t)"),
            ConfidenceSpec("max_entropy", False, True, "max_t H_t"),
            ConfidenceSpec("mean_entropy", False, True, "(1/T) Σ H_t"),
        )
    }
)
"""The nine paper confidence functions (docs/confidence.md §4.1) with their directions, in paper order."""

CONFIDENCE_NAMES: tuple[str, ...] = tuple(CONFIDENCE_FUNCTIONS)


def ranking_scores(name: str, values: npt.ArrayLike) -> FloatArray:
    """Values of confidence function ``name`` oriented so that higher = more confident (negated if needed)."""
    if name not in CONFIDENCE_FUNCTIONS:
        raise ValueError(f"name must be one of {CONFIDENCE_NAMES}, got {name!r}")
    arr = np.asarray(values, dtype=np.float64)
    return arr if CONFIDENCE_FUNCTIONS[name].higher_is_confident else -arr


# -- layer 1: token signals ----------------------------------------------------------------------------


def _check_flavour(flavour: str) -> None:
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be one of {FLAVOURS}, got {flavour!r}")


def _topk_chunk(
    chosen: FloatArray, others: FloatArray, top_k: int, eps: float
) -> tuple[FloatArray, FloatArray]:
    """docs/confidence.md §2.1 for one chunk: ``chosen`` (T,), ``others`` (T, K) with NaN = absent → (ℓ, H).

    Equivalent to building the padded length-``top_k`` vector and taking its softmax, without
    materialising it: the first ``top_k - 1`` present alternatives are kept in place (the softmax does
    not depend on order) and the ``n_pad`` padding entries enter the sums in closed form.
    """
    present = ~np.isnan(others)
    keep = present
    if others.shape[1] > top_k - 1:  # truncation: the first top_k - 1 present alternatives
        keep = present & (np.cumsum(present, axis=1) <= top_k - 1)
    n_pad = (top_k - 1) - keep.sum(axis=1)
    empty = np.isnan(chosen)  # step 1: no log-probabilities → uniform
    # Step 2: repair sentinel chosen values (uses all alternatives, before truncation).
    sentinel = chosen < SENTINEL_THRESHOLD
    if sentinel.any():
        o = others[sentinel]
        p = present[sentinel]
        finite = np.isfinite(o)
        finite_min = np.where(finite, o, np.inf).min(axis=1, initial=np.inf)
        present_min = np.where(p, o, np.inf).min(axis=1, initial=np.inf)
        repaired = np.where(
            finite.any(axis=1), finite_min - 1.0, np.where(p.any(axis=1), present_min - 1.0, -20.0)
        )
        chosen = chosen.copy()
        chosen[sentinel] = repaired
    # Steps 3-4: softmax over [chosen, kept alternatives, n_pad x PAD_LOGPROB].
    alt = np.where(keep, others, -np.inf)
    m = np.maximum(chosen, alt.max(axis=1, initial=-np.inf))
    m = np.where(n_pad > 0, np.maximum(m, PAD_LOGPROB), m)
    uniform = empty | ~np.isfinite(m)  # rows whose max is -inf are treated as uniform too
    m = np.where(uniform, 0.0, m)
    with np.errstate(invalid="ignore"):
        s_c = np.where(uniform, 0.0, chosen) - m  # shifted logits: exact 0 at the maximum
        s_alt = alt - m[:, None]
        s_pad = PAD_LOGPROB - m
        e_c, e_alt, e_pad = np.exp(s_c), np.exp(s_alt), np.exp(s_pad)
        total = e_c + e_alt.sum(axis=1) + n_pad * e_pad
        log_total = np.log(total)
        p_c, p_alt, p_pad = e_c / total, e_alt / total[:, None], e_pad / total
        # Step 5: ℓ = ln clip(p0); entropy -Σ p ln p over p > 0, with ln p = shifted - ln total.
        log_p = np.log(np.clip(p_c, eps, 1.0))
        entropy = -(
            p_c * np.where(p_c > 0, s_c - log_total, 0.0)
            + (p_alt * np.where(p_alt > 0, s_alt - log_total[:, None], 0.0)).sum(axis=1)
            + n_pad * p_pad * np.where(p_pad > 0, s_pad - log_total, 0.0)
        )
    log_p[uniform] = np.log(np.clip(1.0 / top_k, eps, 1.0))
    entropy[uniform] = np.log(top_k)
    return log_p, entropy


def token_signals(
    chosen_logprob: npt.ArrayLike,
    topk_logprobs: npt.ArrayLike | None = None,
    full_entropy: npt.ArrayLike | None = None,
    flavour: Flavour = "topk",
    *,
    chosen_in_topk: npt.ArrayLike | None = None,
    top_k: int = TOP_K,
    eps: float = EPS,
) -> tuple[FloatArray, FloatArray]:
    """Per-token log-likelihood ``ℓ`` and entropy ``H`` for ``T`` tokens (see the module docstring).

    Args:
        chosen_logprob: shape ``(T,)``, log-probability of each generated token; NaN = the token has no
            log-probabilities (``"topk"``: uniform fallback; ``"full"``: error).
        topk_logprobs: shape ``(T, K)``, the alternatives in the order they were returned (for the
            ``"topk"`` flavour; NaN = absent). By default they are taken to *exclude* the chosen token,
            i.e. the docs/confidence.md §2.1 vector is ``[chosen_logprob[t], *topk_logprobs[t]]``.
        full_entropy: shape ``(T,)``, full-vocabulary entropy per token (``"full"`` flavour only); NaN =
            not recorded (the vLLM backend), which makes the entropy functions of every unit holding
            that token NaN.
        flavour: ``"topk"`` (paper-compatible renormalised top-k) or ``"full"``.
        chosen_in_topk: optional bool mask ``(T, K)`` marking the alternative that *is* the chosen token
            (e.g. ``topk_ids == chosen_ids[:, None]``); those entries are dropped, as in vLLM's output
            where the sampled token appears once, first.
        top_k: length of the renormalised vector (> 0).
        eps: probability floor in (0, 1).

    Returns:
        ``(log_p, entropy)``, each float64 of shape ``(T,)``; ``p_t = exp(log_p[t])``.

    Example:
        >>> lp, h = token_signals(np.log([.5]), np.log([[.3]]))
        >>> round(float(np.exp(lp[0])), 6), round(float(h[0]), 5)
        (0.625, 0.66156)
    """
    _check_flavour(flavour)
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k <= 0:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    if not 0.0 < eps < 1.0:
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    chosen = np.asarray(chosen_logprob, dtype=np.float64)
    if chosen.ndim != 1:
        raise ValueError(f"chosen_logprob must be 1-D, got shape {chosen.shape}")
    n = chosen.size
    if flavour == "full":
        if full_entropy is None:
            raise ValueError("full_entropy is required for flavour='full', got None")
        ent = np.asarray(full_entropy, dtype=np.float64)
        if ent.shape != (n,):
            raise ValueError(f"full_entropy must have shape ({n},), got {ent.shape}")
        if np.isnan(chosen).any():
            raise ValueError("chosen_logprob must not contain NaN for flavour='full'")
        if np.isinf(ent).any():
            raise ValueError(
                f"full_entropy must be finite or NaN (not recorded), got {ent[np.isinf(ent)][0]!r}"
            )
        return np.log(np.clip(np.exp(np.minimum(chosen, 0.0)), eps, 1.0)), ent.copy()
    # Kept in the caller's dtype (e.g. float32 from Parquet); converted chunk by chunk to bound memory.
    others = np.full((n, 0), np.nan) if topk_logprobs is None else np.asarray(topk_logprobs)
    if others.ndim != 2 or others.shape[0] != n:
        raise ValueError(f"topk_logprobs must have shape ({n}, K), got {others.shape}")
    if not np.issubdtype(others.dtype, np.floating) and others.size:
        others = others.astype(np.float64)
    mask = None
    if chosen_in_topk is not None:
        mask = np.asarray(chosen_in_topk, dtype=bool)
        if mask.shape != others.shape:
            raise ValueError(f"chosen_in_topk must have shape {others.shape}, got {mask.shape}")
    log_p = np.empty(n)
    entropy = np.empty(n)
    for lo in range(0, n, _CHUNK):
        hi = min(lo + _CHUNK, n)
        block = others[lo:hi].astype(np.float64)  # always a copy
        if mask is not None:
            block[mask[lo:hi]] = np.nan
        log_p[lo:hi], entropy[lo:hi] = _topk_chunk(chosen[lo:hi], block, int(top_k), eps)
    return log_p, entropy


# -- layer 2: aggregation to units ---------------------------------------------------------------------


_SMALL_SEGMENT = 16


def _segment_middle_values(
    values: FloatArray, starts: np.ndarray, counts: np.ndarray
) -> tuple[FloatArray, FloatArray]:
    """The two middle order statistics (``(c-1)//2`` and ``c//2``, 0-based) of each contiguous segment.

    Segments of at most ``_SMALL_SEGMENT`` values are sorted row-wise in a padded matrix (fast for
    atoms and lines); the longer ones by one ``lexsort`` over their values only.
    """
    lo = np.empty(starts.size)
    hi = np.empty(starts.size)
    small = counts <= _SMALL_SEGMENT
    if small.any():
        s_starts, s_counts = starts[small], counts[small]
        width = int(s_counts.max())
        rows = np.repeat(np.arange(s_starts.size), s_counts)
        cols = np.arange(rows.size) - np.repeat(np.cumsum(s_counts) - s_counts, s_counts)
        matrix = np.full((s_starts.size, width), np.inf)
        matrix[rows, cols] = values[np.repeat(s_starts, s_counts) + cols]
        matrix.sort(axis=1)
        idx = np.arange(s_starts.size)
        lo[small] = matrix[idx, (s_counts - 1) // 2]
        hi[small] = matrix[idx, s_counts // 2]
    if (~small).any():
        l_starts, l_counts = starts[~small], counts[~small]
        seg = np.repeat(np.arange(l_starts.size), l_counts)
        offsets = np.cumsum(l_counts) - l_counts
        within = np.arange(seg.size) - np.repeat(offsets, l_counts)
        vals = values[np.repeat(l_starts, l_counts) + within]
        vals = vals[np.lexsort((vals, seg))]
        lo[~small] = vals[offsets + (l_counts - 1) // 2]
        hi[~small] = vals[offsets + l_counts // 2]
    return lo, hi


def unit_confidences(
    log_p: npt.ArrayLike,
    entropy: npt.ArrayLike,
    unit_token_index: npt.ArrayLike,
    unit_ids: npt.ArrayLike,
    n_units: int,
) -> dict[str, np.ndarray]:
    """Every confidence function for every unit, from ``(token, unit)`` membership pairs.

    Pair ``i`` says token ``unit_token_index[i]`` belongs to unit ``unit_ids[i]``; a token may appear in
    several pairs (it then counts fully for each unit). Formulas: :data:`CONFIDENCE_FUNCTIONS`, with
    ``p_t = exp(ℓ_t)``. One sort and a few ``bincount``/``reduceat`` passes; no Python loop.

    Args:
        log_p: shape ``(T,)`` per-token ``ℓ`` (from :func:`token_signals`).
        entropy: shape ``(T,)`` per-token ``H``.
        unit_token_index: shape ``(P,)`` ints in ``[0, T)``.
        unit_ids: shape ``(P,)`` ints in ``[0, n_units)``.
        n_units: number of units.

    Returns:
        ``{name: float64 array (n_units,)}`` for the nine names (NaN for units without tokens) plus
        ``"num_tokens"`` (int64 array).

    Example:
        >>> lp = np.log([.9, .8, .905, .5, .6, .7])
        >>> lines = unit_confidences(lp, np.zeros(6), [0, 1, 3, 4, 5], [0, 0, 1, 1, 1], 2)
        >>> lines["mean_probability"].round(4).tolist(), lines["num_tokens"].tolist()
        ([0.85, 0.6], [2, 3])
    """
    lp_all = np.asarray(log_p, dtype=np.float64)
    h_all = np.asarray(entropy, dtype=np.float64)
    if lp_all.ndim != 1 or h_all.shape != lp_all.shape:
        raise ValueError(
            f"log_p and entropy must be 1-D of equal shape, got {lp_all.shape} and {h_all.shape}"
        )
    tok = np.asarray(unit_token_index)
    unit = np.asarray(unit_ids)
    if tok.shape != unit.shape or tok.ndim != 1:
        raise ValueError(
            f"unit_token_index and unit_ids must be 1-D of equal shape, got {tok.shape} and {unit.shape}"
        )
    for name, arr in (("unit_token_index", tok), ("unit_ids", unit)):
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    if isinstance(n_units, bool) or not isinstance(n_units, (int, np.integer)) or n_units < 0:
        raise ValueError(f"n_units must be a non-negative integer, got {n_units!r}")
    tok = tok.astype(np.intp, copy=False)
    unit = unit.astype(np.intp, copy=False)
    for name, arr, bound in (("unit_token_index", tok, lp_all.size), ("unit_ids", unit, n_units)):
        bad = (arr < 0) | (arr >= bound)
        if bad.any():
            raise ValueError(f"{name} must lie in [0, {bound}), got {arr[bad][0]}")

    lp = lp_all[tok]
    h = h_all[tok]
    counts = np.bincount(unit, minlength=n_units)
    ne = counts > 0
    c = counts[ne].astype(np.float64)
    out = {name: np.full(n_units, np.nan) for name in CONFIDENCE_NAMES}
    if ne.any():
        order = np.argsort(unit, kind="stable")  # units contiguous (cheap: pairs usually come sorted)
        lps = lp[order]
        starts = (np.cumsum(counts) - counts)[ne]
        sum_p = np.bincount(unit, weights=np.exp(lp), minlength=n_units)[ne]
        sum_lp = np.bincount(unit, weights=lp, minlength=n_units)[ne]
        sum_h = np.bincount(unit, weights=h, minlength=n_units)[ne]
        max_lp = np.maximum.reduceat(lps, starts)
        lo, hi = _segment_middle_values(lps, starts, counts[ne])
        out["mean_probability"][ne] = sum_p / c
        out["median_probability"][ne] = (np.exp(lo) + np.exp(hi)) / 2
        out["max_probability"][ne] = np.exp(max_lp)
        out["log_probability_sum"][ne] = sum_lp
        out["max_log_probability"][ne] = max_lp
        out["log_perplexity"][ne] = -sum_lp / c
        out["perplexity"][ne] = np.exp(-sum_lp / c)
        out["max_entropy"][ne] = np.maximum.reduceat(h[order], starts)
        out["mean_entropy"][ne] = sum_h / c
    result: dict[str, np.ndarray] = dict(out)
    result["num_tokens"] = counts.astype(np.int64)
    return result


# -- one-unit convenience API --------------------------------------------------------------------------


def unit_confidence(
    token_logprob_vectors: Sequence[Sequence[float] | None],
    flavour: Flavour = "topk",
    *,
    full_entropy: Sequence[float] | None = None,
    top_k: int = TOP_K,
    eps: float = EPS,
) -> dict[str, float | int]:
    """Every confidence function for one unit from its tokens' log-probability vectors.

    Args:
        token_logprob_vectors: one entry per token: the chosen token's log-prob first, then the other
            returned candidates (``None`` or empty = no log-probabilities, docs/confidence.md §2.1 step 1).
        flavour: ``"topk"`` (paper) or ``"full"`` (needs ``full_entropy``; uses ``exp(vector[0])``).
        full_entropy: per-token full-vocabulary entropies (``"full"`` only).
        top_k, eps: as in :func:`token_signals`.

    Returns:
        ``{name: value}`` for the nine names of :data:`CONFIDENCE_FUNCTIONS` and ``"num_tokens"``.

    Raises:
        ValueError: zero tokens, an unknown flavour, or invalid ``top_k``/``eps``.

    Example:
        >>> c = unit_confidence([[0, -1], [-1, -2]])
        >>> round(c["mean_probability"], 5), round(c["perplexity"], 5), c["num_tokens"]
        (0.73106, 1.36788, 2)
        >>> round(unit_confidence([None])["perplexity"], 6)
        20.0
    """
    _check_flavour(flavour)
    n = len(token_logprob_vectors)
    if n == 0:
        raise ValueError("token_logprob_vectors must contain at least one token, got 0")
    width = max((len(v) - 1 for v in token_logprob_vectors if v), default=0)
    chosen = np.full(n, np.nan)
    others = np.full((n, width), np.nan)
    for i, vector in enumerate(token_logprob_vectors):
        if vector:
            row = np.asarray(vector, dtype=np.float64)
            chosen[i] = row[0]
            others[i, : row.size - 1] = row[1:]
    if flavour == "full" and np.isnan(chosen).any():
        raise ValueError("flavour='full' needs a log-probability for every token, got an empty vector")
    log_p, entropy = token_signals(chosen, others, full_entropy, flavour, top_k=top_k, eps=eps)
    values = unit_confidences(log_p, entropy, np.arange(n), np.zeros(n, dtype=np.intp), 1)
    result: dict[str, float | int] = {name: float(values[name][0]) for name in CONFIDENCE_NAMES}
    result["num_tokens"] = n
    return result


__all__ = [
    "CONFIDENCE_FUNCTIONS",
    "CONFIDENCE_NAMES",
    "EPS",
    "FLAVOURS",
    "PAD_LOGPROB",
    "SENTINEL_THRESHOLD",
    "TOP_K",
    "ConfidenceSpec",
    "Flavour",
    "ranking_scores",
    "token_signals",
    "unit_confidence",
    "unit_confidences",
]
