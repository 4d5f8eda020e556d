"""The paper's nine confidence functions from token log-probabilities (docs/confidence.md §2, §4).

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
   paper confidence function (:data:`~saltbench.confidence.specs.PAPER_FUNCTIONS`) per unit (NaN for
   units without tokens).

:func:`unit_confidence` is the one-unit convenience API on ragged Python lists. It works on Python
floats (numpy's per-call overhead would dominate a unit of a few tokens) but shares the nine formulas
with the batch path: both reduce a unit to the same summary (count, sums, maxima, middle order
statistics of ``ℓ``) and call :func:`_confidence_values`. The per-token preprocessing exists once per
path (arrays, floats); ``tests/test_confidence_paths.py`` checks the two paths against each other.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from operator import mul
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
import numpy.typing as npt

from saltbench.core.vocabulary import FLAVOURS, Flavour

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]

TOP_K = 20
"""Length of the renormalised top-k vector (the OpenAI/Gemini API limit used by the paper)."""
EPS = 1e-20
"""Probability floor before taking logs."""
SENTINEL_THRESHOLD = -1000.0
"""A chosen-token log-prob below this is treated as a sentinel (e.g. ``-inf``, ``-9999``) and repaired."""
PAD_LOGPROB = -1e9
"""Padding value for missing top-k entries (softmax weight 0)."""
ROUNDING_TOLERANCE = 1e-5
"""How far a log-probability may lie above 0, and an entropy below 0, before it is refused: float32
log-softmax and entropy kernels round to a few 1e-7 either side of the bound."""
_CHUNK = 1 << 14  # rows per block: temporaries stay small
_EXP_FLOOR = -700.0
"""Shifted logits ``s = d - m`` below this (absent entries: -inf) are raised to it before ``e^s``.

Their weight ``e^-700 ≈ 1e-304`` vanishes in ``Z ≥ 1`` (the maximum contributes ``e^0 = 1``), so ``ℓ`` is
unchanged; ``e^s s`` stays finite (``0 · -inf`` is NaN) and adds at most ``K · 1e-301`` to ``H``. A floor
where ``e^s`` is a normal float also keeps numpy's vectorised ``exp`` on its fast path (results that
underflow to 0 or to subnormals make it two to four times slower)."""
_UNSHIFTED_MIN, _UNSHIFTED_MAX = math.exp(-40.0), math.exp(40.0)  # Σ e^d in this range: no shift needed
_SMALL_SEGMENT = 16  # units of at most this many tokens: selection network; longer ones: one sort


# -- the nine functions from a unit summary (shared by both paths) ---------------------------------------

_Value = TypeVar("_Value", float, FloatArray)


def _confidence_values(
    count: _Value,
    sum_p: _Value,
    sum_log_p: _Value,
    sum_entropy: _Value,
    max_log_p: _Value,
    max_entropy: _Value,
    middle_log_p: tuple[_Value, _Value],
    exp: Callable[[_Value], _Value],
) -> dict[str, _Value]:
    """The nine functions of docs/confidence.md §4.1, in paper order, from a unit's token summary.

    The one definition of the formulas, for floats (:func:`unit_confidence`, ``exp = math.exp``) and for
    arrays of units (:func:`unit_confidences`, ``exp = np.exp``). For ``T = count`` tokens with ``ℓ_t``,
    ``H_t`` and ``p_t = exp(ℓ_t)``:

    * ``sum_p = Σ p_t``, ``sum_log_p = Σ ℓ_t``, ``sum_entropy = Σ H_t``;
    * ``max_log_p = max ℓ_t`` (so ``max p_t = exp(max ℓ_t)``: ``exp`` is increasing), ``max_entropy``;
    * ``middle_log_p``: the order statistics ``(T-1)//2`` and ``T//2`` (0-based) of ``ℓ``, whose
      probabilities average to the median of ``p`` (equal for odd ``T``).

    Directions (:data:`~saltbench.confidence.specs.PAPER_FUNCTIONS`): higher is more confident for the five
    probability and log-probability functions, less confident for ``log_perplexity``, ``perplexity`` and
    the entropies.
    """
    lo, hi = middle_log_p
    log_perplexity = -sum_log_p / count
    return {
        "mean_probability": sum_p / count,
        "median_probability": (exp(lo) + exp(hi)) / 2,
        "max_probability": exp(max_log_p),
        "log_probability_sum": sum_log_p,
        "max_log_probability": max_log_p,
        "log_perplexity": log_perplexity,
        "perplexity": exp(log_perplexity),
        "max_entropy": max_entropy,
        "mean_entropy": sum_entropy / count,
    }


# -- layer 1: token signals ----------------------------------------------------------------------------


def _check_flavour(flavour: str) -> None:
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be one of {FLAVOURS}, got {flavour!r}")


def _check_parameters(top_k: int, eps: float) -> None:
    """``top_k`` a positive integer, ``eps`` in (0, 1) (docs/confidence.md §2.1)."""
    if type(top_k) is int and top_k > 0 and 0.0 < eps < 1.0:  # the common case, checked first
        return
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k <= 0:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    if not 0.0 < eps < 1.0:
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")


def _check_logprobs(values: npt.NDArray[Any], name: str) -> None:
    """``ValueError`` naming ``name`` and the first entry above 0 (+inf included; NaN and -inf pass)."""
    bad = values > ROUNDING_TOLERANCE
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        raise ValueError(
            f"{name} must be log-probabilities (<= 0; -inf and NaN allowed), got {values[where].item()!r} "
            f"at [{', '.join(map(str, where))}]"
        )


def _check_entropies(values: FloatArray, name: str) -> None:
    """``ValueError`` naming ``name`` and the first negative or infinite entry (NaN passes: not recorded)."""
    bad = (values < -ROUNDING_TOLERANCE) | np.isinf(values)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must be finite or NaN (not recorded) and >= 0, got {values[first].item()!r} at [{first}]"
        )


def _repaired_sentinels(others: npt.NDArray[Any], absent: BoolArray) -> FloatArray:
    """docs/confidence.md §2.1 step 2 for rows whose chosen value is a sentinel.

    Per row: ``min(finite present alternatives) - 1``; else ``min(present alternatives) - 1``; else
    ``-20``. Uses every present alternative, before the cut to ``top_k``.
    """
    values = others.astype(np.float64)
    present = ~absent
    finite = present & np.isfinite(values)
    finite_min = np.where(finite, values, np.inf).min(axis=1, initial=np.inf)
    present_min = np.where(present, values, np.inf).min(axis=1, initial=np.inf)
    return np.where(
        finite.any(axis=1), finite_min - 1.0, np.where(present.any(axis=1), present_min - 1.0, -20.0)
    )


def _row_max(initial: FloatArray, matrix: FloatArray) -> FloatArray:
    """``max(initial[t], max_j matrix[t, j])`` per row (NaN propagates), one column at a time.

    The same values as ``np.maximum(initial, matrix.max(axis=1))``, but numpy reduces short rows one
    row at a time; ``K`` elementwise passes over all rows are about twice as fast for ``K = 20``.
    """
    out = initial.copy()
    for column in matrix.T:
        np.maximum(out, column, out=out)
    return out


def _topk_chunk(
    chosen: FloatArray, others: npt.NDArray[Any], dropped: BoolArray | None, top_k: int, eps: float
) -> tuple[FloatArray, FloatArray]:
    """docs/confidence.md §2.1 for one chunk of ``T`` tokens → ``(ℓ, H)``, each of shape ``(T,)``.

    ``chosen`` (T,) float64 (NaN = no log-probabilities); ``others`` (T, K) floating, NaN = absent;
    ``dropped`` (T, K) marks alternatives that are the chosen token (treated as absent).

    Equivalent to building the padded length-``top_k`` vector ``d`` and taking its softmax, without
    materialising it: the first ``top_k - 1`` present alternatives are kept in place (the softmax does
    not depend on order), the others get weight 0 (in effect: :data:`_EXP_FLOOR`), and the ``n_pad``
    padding entries enter the sums in closed form. With ``m = max d``, shifted logits ``s = d - m`` and
    ``Z = Σ e^s``: ``ℓ = ln clip(e^{s_0} / Z, eps, 1)`` and ``H = -Σ p ln p = ln Z - (Σ e^s s) / Z``.
    ``Z`` keeps numpy's row sum (``e.sum(axis=1)``, the order earlier versions used): perplexities
    magnify last-bit changes of ``ℓ``.
    """
    width = others.shape[1]
    absent = np.isnan(others)
    if dropped is not None:
        absent |= dropped
    n_alternatives = width - np.einsum("ij->i", absent, dtype=np.intp)
    alt = others.astype(np.float64)  # a copy: shifted in place below
    np.copyto(alt, -np.inf, where=absent)
    if width > top_k - 1:  # step 3: keep the first top_k - 1 present alternatives
        over = np.flatnonzero(n_alternatives > top_k - 1)
        if over.size:
            rows = alt[over]
            rows[np.cumsum(~absent[over], axis=1) > top_k - 1] = -np.inf
            alt[over] = rows
    n_pad = (top_k - 1) - np.minimum(n_alternatives, top_k - 1)
    sentinel = np.flatnonzero(chosen < SENTINEL_THRESHOLD)  # step 2 (NaN compares False)
    if sentinel.size:
        chosen = chosen.copy()
        chosen[sentinel] = _repaired_sentinels(others[sentinel], absent[sentinel])
    with np.errstate(invalid="ignore", over="ignore"):
        m = _row_max(chosen, alt)
        m = np.where(n_pad > 0, np.maximum(m, PAD_LOGPROB), m)
        uniform = np.isnan(chosen) | ~np.isfinite(m)  # step 1, and rows whose max is ±inf
        m[uniform] = 0.0
        s_c = np.where(uniform, 0.0, chosen) - m  # exact 0 at the maximum
        alt -= m[:, None]
        np.maximum(alt, _EXP_FLOOR, out=alt)
        e_alt = np.exp(alt)
        e_c = np.exp(s_c)
        s_pad = np.where(n_pad > 0, PAD_LOGPROB - m, _EXP_FLOOR)  # no padding: no term, even if m < -1e9
        np.maximum(s_pad, _EXP_FLOOR, out=s_pad)
        e_pad = np.exp(s_pad)
        total = e_c + e_alt.sum(axis=1) + n_pad * e_pad  # Z
        log_p = np.log(np.clip(e_c / total, eps, 1.0))  # step 5
        weighted = np.einsum("ij,ij->i", e_alt, alt)  # Σ e^s s over the alternatives
        weighted += np.where(e_c > 0, e_c * s_c, 0.0) + n_pad * (e_pad * s_pad)
        entropy = np.log(total) - weighted / total
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
    _check_parameters(top_k, eps)
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
        _check_logprobs(chosen, "chosen_logprob")
        _check_entropies(ent, "full_entropy")
        return np.log(np.clip(np.exp(np.minimum(chosen, 0.0)), eps, 1.0)), ent.copy()
    # Kept in the caller's dtype (e.g. float32 from Parquet); converted chunk by chunk to bound memory.
    others = np.full((n, 0), np.nan) if topk_logprobs is None else np.asarray(topk_logprobs)
    if others.ndim != 2 or others.shape[0] != n:
        raise ValueError(f"topk_logprobs must have shape ({n}, K), got {others.shape}")
    if not np.issubdtype(others.dtype, np.floating):
        others = others.astype(np.float64)
    mask = None
    if chosen_in_topk is not None:
        mask = np.asarray(chosen_in_topk, dtype=bool)
        if mask.shape != others.shape:
            raise ValueError(f"chosen_in_topk must have shape {others.shape}, got {mask.shape}")
    _check_logprobs(chosen, "chosen_logprob")
    _check_logprobs(others, "topk_logprobs")
    log_p = np.empty(n)
    entropy = np.empty(n)
    for lo in range(0, n, _CHUNK):
        hi = min(lo + _CHUNK, n)
        dropped = None if mask is None else mask[lo:hi]
        log_p[lo:hi], entropy[lo:hi] = _topk_chunk(chosen[lo:hi], others[lo:hi], dropped, int(top_k), eps)
    return log_p, entropy


# -- layer 2: aggregation to units ---------------------------------------------------------------------


@functools.cache
def _selection_network(length: int) -> tuple[tuple[int, int, bool, bool], ...]:
    """Comparators ``(i, j, keep_min, keep_max)`` that put the order statistics ``(length-1)//2``,
    ``length//2`` and ``length-1`` (0-based; the two middle values and the maximum) on those wires.

    Batcher's merge-exchange sorting network for any ``length`` (Knuth, TAOCP vol. 3, §5.2.2,
    Algorithm M): comparator ``(i, j)``, ``i < j``, puts the minimum on wire ``i`` and the maximum on
    wire ``j``. It is then pruned backwards to the comparators those three wires depend on, and marks
    which of the two outputs is read later.
    """
    comparators: list[tuple[int, int]] = []
    if length > 1:
        t = (length - 1).bit_length()  # ceil(log2(length))
        p = 1 << (t - 1)
        while p > 0:
            q, r, d = 1 << (t - 1), 0, p
            while True:
                comparators.extend((i, i + d) for i in range(length - d) if i & p == r)
                if q == p:
                    break
                d, q, r = q - p, q >> 1, p
            p >>= 1
    needed = {(length - 1) // 2, length // 2, length - 1}
    kept: list[tuple[int, int, bool, bool]] = []
    for i, j in reversed(comparators):
        keep_min, keep_max = i in needed, j in needed
        if keep_min or keep_max:
            kept.append((i, j, keep_min, keep_max))
            needed |= {i, j}
    return tuple(reversed(kept))


class _Summaries(NamedTuple):
    """Per unit, the token summary that :func:`_confidence_values` turns into the nine functions."""

    sum_p: FloatArray
    sum_log_p: FloatArray
    sum_entropy: FloatArray
    max_log_p: FloatArray
    max_entropy: FloatArray
    low_middle_log_p: FloatArray
    high_middle_log_p: FloatArray


def _down_columns(ufunc: np.ufunc, matrix: FloatArray) -> FloatArray:
    """``ufunc`` folded over the columns of ``matrix`` left to right, ``(m[:, 0] ∘ m[:, 1]) ∘ m[:, 2] …``
    (for ``np.add`` the order in which ``np.bincount`` adds each row), into one accumulator."""
    out = matrix[:, 0].copy()
    for column in matrix.T[1:]:
        ufunc(out, column, out=out)
    return out


def _equal_length_summaries(log_p: FloatArray, entropy: FloatArray) -> _Summaries:
    """Summaries of units with the same number ``T ≤ _SMALL_SEGMENT`` of tokens: row ``u`` of the
    ``(units, T)`` matrices holds the ``ℓ`` / ``H`` of unit ``u``'s pairs, in pair order.

    Sums and maxima run down the ``T`` columns (sums left to right, as ``np.bincount`` adds); the middle
    order statistics and the maximum of ``ℓ`` come from :func:`_selection_network` applied to the
    columns (``T`` elementwise steps over all units, exact). NaN propagates through every statistic.
    """
    length = log_p.shape[1]
    columns = list(log_p.T)
    for i, j, keep_min, keep_max in _selection_network(length):
        a, b = columns[i], columns[j]
        if keep_min:
            columns[i] = np.minimum(a, b)
        if keep_max:
            columns[j] = np.maximum(a, b)
    return _Summaries(
        _down_columns(np.add, np.exp(log_p)),
        _down_columns(np.add, log_p),
        _down_columns(np.add, entropy),
        columns[-1],
        _down_columns(np.maximum, entropy),
        columns[(length - 1) // 2],
        columns[length // 2],
    )


def _segment_sums(segment: IntArray, weights: FloatArray) -> FloatArray:
    """``Σ weights`` per segment id, each added in array order (what ``np.bincount`` does)."""
    return np.bincount(segment, weights=weights).astype(np.float64, copy=False)


def _ragged_summaries(log_p: FloatArray, entropy: FloatArray, counts: IntArray) -> _Summaries:
    """Summaries of units of any lengths ``counts`` (all ≥ 1) whose pairs follow each other in order.

    ``bincount`` sums (in pair order), ``reduceat`` maxima and one ``lexsort`` for the middle order
    statistics; NaN propagates as in :func:`_equal_length_summaries`.
    """
    offsets = np.cumsum(counts) - counts
    segment = np.repeat(np.arange(counts.size), counts)
    max_lp = np.maximum.reduceat(log_p, offsets)
    ordered = log_p[np.lexsort((log_p, segment))]
    has_nan = np.isnan(max_lp)  # lexsort puts NaN last
    return _Summaries(
        _segment_sums(segment, np.exp(log_p)),
        _segment_sums(segment, log_p),
        _segment_sums(segment, entropy),
        max_lp,
        np.maximum.reduceat(entropy, offsets),
        np.where(has_nan, np.nan, ordered[offsets + (counts - 1) // 2]),
        np.where(has_nan, np.nan, ordered[offsets + counts // 2]),
    )


def _unit_summaries(log_p: FloatArray, entropy: FloatArray, tokens: IntArray, counts: IntArray) -> _Summaries:
    """Summaries of every unit (NaN for units without tokens): unit ``u`` holds the next ``counts[u]``
    entries of ``tokens`` (the pairs sorted stably by unit), indices into the per-token ``log_p`` (``ℓ``)
    and ``entropy`` (``H``).

    Units are grouped by length (their pairs move as blocks): each length up to ``_SMALL_SEGMENT`` goes
    through :func:`_equal_length_summaries`, the longer units together through
    :func:`_ragged_summaries`. The loop runs over lengths, never over tokens or units.
    """
    summaries = _Summaries(*(np.full(counts.size, np.nan) for _ in _Summaries._fields))
    length_class = np.minimum(counts, _SMALL_SEGMENT + 1).astype(np.uint8)  # the cap: long units
    units_by_class = np.argsort(length_class, kind="stable")
    class_sizes = np.bincount(length_class, minlength=_SMALL_SEGMENT + 2)
    # Pair k of the grouped order belongs to unit u = units_by_class[j]: it is pair k - (start of u in
    # the grouped order) + (start of u in the sorted order) of ``tokens``.
    grouped_counts = counts[units_by_class]
    block_shift = (np.cumsum(counts) - counts)[units_by_class] - (np.cumsum(grouped_counts) - grouped_counts)
    positions = np.repeat(block_shift, grouped_counts)
    positions += np.arange(tokens.size)
    grouped = tokens[positions]
    log_p, entropy = log_p[grouped], entropy[grouped]
    unit_start, pair_start = class_sizes[0], 0
    for length in range(1, _SMALL_SEGMENT + 2):
        n_units = class_sizes[length]
        if n_units == 0:
            continue
        units = units_by_class[unit_start : unit_start + n_units]
        if length <= _SMALL_SEGMENT:
            pairs = slice(pair_start, pair_start + n_units * length)
            part = _equal_length_summaries(
                log_p[pairs].reshape(-1, length), entropy[pairs].reshape(-1, length)
            )
        else:
            part = _ragged_summaries(log_p[pair_start:], entropy[pair_start:], counts[units])
        for whole, values in zip(summaries, part):
            whole[units] = values
        unit_start, pair_start = unit_start + n_units, pair_start + n_units * length
    return summaries


def unit_confidences(
    log_p: npt.ArrayLike,
    entropy: npt.ArrayLike,
    unit_token_index: npt.ArrayLike,
    unit_ids: npt.ArrayLike,
    n_units: int,
) -> dict[str, np.ndarray]:
    """Every confidence function for every unit, from ``(token, unit)`` membership pairs.

    Pair ``i`` says token ``unit_token_index[i]`` belongs to unit ``unit_ids[i]``; a token may appear in
    several pairs (it then counts fully for each unit). Formulas: :func:`_confidence_values`
    (docs/confidence.md §4.1), with ``p_t = exp(ℓ_t)``, from :func:`_unit_summaries` of the pairs
    sorted stably by unit (skipped when they already are); no loop over tokens or units.

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
        if arr.size and (arr.min() < 0 or arr.max() >= bound):
            raise ValueError(f"{name} must lie in [0, {bound}), got {arr[(arr < 0) | (arr >= bound)][0]}")

    counts = np.bincount(unit, minlength=n_units)
    if (unit[1:] < unit[:-1]).any():  # a stable sort keeps the pair order within a unit
        tok = tok[np.argsort(unit, kind="stable")]
    s = _unit_summaries(lp_all, h_all, tok, counts)
    middle = (s.low_middle_log_p, s.high_middle_log_p)
    values = _confidence_values(
        counts.astype(np.float64),
        s.sum_p,
        s.sum_log_p,
        s.sum_entropy,
        s.max_log_p,
        s.max_entropy,
        middle,
        np.exp,
    )
    result: dict[str, np.ndarray] = dict(values)
    result["num_tokens"] = counts.astype(np.int64)
    return result


# -- one-unit convenience API --------------------------------------------------------------------------


def _check_vectors(vectors: object) -> None:
    """``TypeError`` / ``ValueError`` naming the entry of ``token_logprob_vectors`` that is not a
    log-probability vector (docs/confidence.md §1.3). Per token one ``max``; the entry-by-entry diagnosis
    runs only for a vector that fails it (or holds NaN first, which ``max`` cannot see past)."""
    if isinstance(vectors, (str, bytes)) or not isinstance(vectors, (Sequence, np.ndarray)):
        raise TypeError(
            "token_logprob_vectors must be a sequence with one entry per token, "
            f"got {type(vectors).__name__} {vectors!r:.60}"
        )
    for i, vector in enumerate(vectors):
        if vector is None:
            continue
        try:
            if len(vector) == 0 or max(vector) <= ROUNDING_TOLERANCE:
                continue
        except TypeError:
            pass
        _diagnose_vector(i, vector)


def _diagnose_vector(i: int, vector: object) -> None:
    """Raise for the first entry of ``token_logprob_vectors[i]`` that is not a log-probability."""
    if isinstance(vector, (str, bytes)) or not isinstance(vector, Iterable):
        hint = (
            "; one log-probability per token is written [[-0.5], [-1.0]]"
            if isinstance(vector, numbers.Real)
            else ""
        )
        raise TypeError(
            f"token_logprob_vectors[{i}] must be None or a sequence of log-probabilities, "
            f"got {type(vector).__name__} {vector!r:.60}{hint}"
        )
    for j, x in enumerate(vector):
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise TypeError(
                f"token_logprob_vectors[{i}][{j}] must be a number, got {type(x).__name__} {x!r:.60}"
            )
        if float(x) > ROUNDING_TOLERANCE:
            raise ValueError(
                f"token_logprob_vectors[{i}][{j}] must be a log-probability (<= 0; -inf and NaN allowed), "
                f"got {x!r}"
            )


def _repaired_chosen(alternatives: Sequence[float]) -> float:
    """docs/confidence.md §2.1 step 2 for one token (as :func:`_repaired_sentinels` for rows)."""
    finite = [x for x in alternatives if -math.inf < x < math.inf]
    if finite:
        return min(finite) - 1.0
    return min(alternatives) - 1.0 if alternatives else -20.0


def _topk_token_signal(vector: Sequence[float] | None, top_k: int, eps: float) -> tuple[float, float] | None:
    """``(ℓ, H)`` of one token, docs/confidence.md §2.1, in floats; ``None`` = uniform (step 1).

    ``vector`` is ``[chosen, *alternatives]``; NaN alternatives are absent, a NaN chosen value means no
    log-probabilities. Same closed form as :func:`_topk_chunk` with a shift ``m``: ``s = d - m``,
    ``Z = Σ e^s`` (plus ``n_pad · e^(-1e9 - m)``), ``ℓ = ln clip(e^{s_0} / Z, eps, 1)``,
    ``H = ln Z - (Σ e^s s) / Z`` over ``e^s > 0``. Every shift ``m`` gives the same values up to
    rounding. ``m = 0`` saves a pass over ``d`` and is used while ``e^-40 < Z < e^40`` (always, for top-k
    log-probabilities: the largest is at least ln(1 / vocabulary size)); ``H`` then carries an absolute
    error of at most about ``40 ε ≈ 1e-14`` from the cancelling shift. Otherwise ``m = max d``, as in
    the batch path.
    """
    if vector is None or len(vector) == 0:
        return None
    checksum = sum(vector)
    d: Sequence[float] = vector
    if checksum != checksum or type(checksum) is not float:  # NaN entries, or not plain Python floats
        d = [float(x) for x in vector]
        if d[0] != d[0]:
            return None
        d = [d[0], *(x for x in d[1:] if x == x)]
    if d[0] < SENTINEL_THRESHOLD:  # step 2
        d = [_repaired_chosen(d[1:]), *d[1:]]
    size = len(d)
    if size == 1:  # step 4 renormalises a single entry to p = 1 (the padding has weight 0)
        return (0.0, 0.0) if d[0] < math.inf else None
    if size > top_k:  # step 3
        d, size = d[:top_k], top_k
    n_pad = top_k - size
    m, s = 0.0, d
    e = list(map(math.exp, s))  # step 4
    total = sum(e)
    if not _UNSHIFTED_MIN < total < _UNSHIFTED_MAX:
        m = max(d)
        if n_pad and m < PAD_LOGPROB:
            m = PAD_LOGPROB
        if not math.isfinite(m):
            return None
        s = [x - m for x in d]
        e = list(map(math.exp, s))
        total = sum(e)
    weighted = sum(map(mul, e, s))
    if weighted != weighted:  # 0 * -inf of -inf entries, which carry no mass
        weighted = sum([w * x for w, x in zip(e, s) if w])
    if n_pad:
        s_pad = PAD_LOGPROB - m
        e_pad = math.exp(s_pad)
        total += n_pad * e_pad
        weighted += n_pad * (e_pad * s_pad)
    return math.log(min(max(e[0] / total, eps), 1.0)), math.log(total) - weighted / total  # step 5


def _topk_unit_signals(
    vectors: Sequence[Sequence[float] | None], top_k: int, eps: float
) -> tuple[list[float], list[float]]:
    """``(ℓ, H)`` lists of one unit's tokens, docs/confidence.md §2.1 (:func:`_topk_token_signal`)."""
    log_p: list[float] = []
    entropy: list[float] = []
    for vector in vectors:
        signal = _topk_token_signal(vector, top_k, eps)
        if signal is None:  # step 1: d = [0] * top_k, uniform
            signal = math.log(min(max(1.0 / top_k, eps), 1.0)), math.log(top_k)
        log_p.append(signal[0])
        entropy.append(signal[1])
    return log_p, entropy


def _full_unit_signals(
    vectors: Sequence[Sequence[float] | None], full_entropy: Sequence[float] | None, top_k: int, eps: float
) -> tuple[list[float], list[float]]:
    """``(ℓ, H)`` lists of one unit, docs/confidence.md §2.2: ``ℓ = ln clip(exp(min(chosen, 0)), eps, 1)``."""
    exp, log = math.exp, math.log
    try:  # exp(min(chosen, 0)) <= 1: of the clip, only the floor can bind
        log_p = [log(max(exp(min(v[0], 0.0)), eps)) for v in vectors]  # type: ignore[index]
    except (TypeError, IndexError):  # a None or empty vector
        log_p = [math.nan]
    if math.isnan(sum(log_p)):  # or a NaN chosen value
        raise ValueError("flavour='full' needs a log-probability for every token, got an empty vector")
    _check_parameters(top_k, eps)
    if full_entropy is None:
        raise ValueError("full_entropy is required for flavour='full', got None")
    try:
        entropy = list(map(float, full_entropy))
    except TypeError:
        entropy = []
    if len(entropy) != len(vectors):
        raise ValueError(f"full_entropy must have shape ({len(vectors)},), got {np.shape(full_entropy)}")
    if not math.isfinite(sum(entropy)) or min(entropy) < -ROUNDING_TOLERANCE:  # NaN entries (allowed)
        _check_entropies(np.asarray(entropy), "full_entropy")  # may hide an infinite or negative one
    return log_p, entropy


def _one_unit_values(log_p: list[float], entropy: list[float]) -> dict[str, float | int]:
    """:func:`_confidence_values` of one unit from its tokens' ``ℓ`` (never NaN) and ``H`` (finite or
    NaN), summed in token order as :func:`unit_confidences` sums, plus ``num_tokens``."""
    n = len(log_p)
    ordered = sorted(log_p) if n > 1 else log_p
    sum_entropy = sum(entropy)
    values = _confidence_values(
        float(n),
        sum(map(math.exp, log_p)),
        sum(log_p),
        sum_entropy,
        ordered[-1],
        max(entropy) if sum_entropy == sum_entropy else math.nan,  # a NaN H makes max H NaN
        (ordered[(n - 1) // 2], ordered[n // 2]),
        math.exp,
    )
    result = cast("dict[str, float | int]", values)  # a fresh dict: the int count joins the floats
    result["num_tokens"] = n
    return result


def unit_confidence(
    token_logprob_vectors: Sequence[Sequence[float] | None],
    flavour: Flavour = "topk",
    *,
    full_entropy: Sequence[float] | None = None,
    top_k: int = TOP_K,
    eps: float = EPS,
) -> dict[str, float | int]:
    """Every confidence function for one unit from its tokens' log-probability vectors.

    Equal (up to rounding) to :func:`token_signals` + :func:`unit_confidences` on the same tokens, but
    computed on Python floats: numpy's per-call overhead would dominate a unit of a few tokens.

    Args:
        token_logprob_vectors: one entry per token: the chosen token's log-prob first, then the other
            returned candidates (``None`` or empty = no log-probabilities, docs/confidence.md §2.1 step 1;
            NaN alternatives are absent).
        flavour: ``"topk"`` (paper) or ``"full"`` (needs ``full_entropy``; uses ``exp(vector[0])``).
        full_entropy: per-token full-vocabulary entropies (``"full"`` only; NaN = not recorded).
        top_k, eps: as in :func:`token_signals`.

    Returns:
        ``{name: value}`` for the nine paper names (:data:`~saltbench.confidence.specs.PAPER_FUNCTIONS`) and
        ``"num_tokens"``.

    Raises:
        TypeError: ``token_logprob_vectors`` or one of its entries is not a sequence of numbers (the message
            names the entry, e.g. ``token_logprob_vectors[0]``).
        ValueError: zero tokens, a log-probability above 0 (or +inf), an unknown flavour, or invalid
            ``top_k``/``eps``/``full_entropy`` (negative or infinite entropies).

    Example:
        >>> c = unit_confidence([[0, -1], [-1, -2]])
        >>> round(c["mean_probability"], 5), round(c["perplexity"], 5), c["num_tokens"]
        (0.73106, 1.36788, 2)
        >>> round(unit_confidence([None])["perplexity"], 6)
        20.0
    """
    _check_flavour(flavour)
    _check_vectors(token_logprob_vectors)
    if len(token_logprob_vectors) == 0:
        raise ValueError("token_logprob_vectors must contain at least one token, got 0")
    if flavour == "full":
        return _one_unit_values(*_full_unit_signals(token_logprob_vectors, full_entropy, top_k, eps))
    _check_parameters(top_k, eps)
    return _one_unit_values(*_topk_unit_signals(token_logprob_vectors, top_k, eps))


__all__ = [
    "EPS",
    "PAD_LOGPROB",
    "ROUNDING_TOLERANCE",
    "SENTINEL_THRESHOLD",
    "TOP_K",
    "token_signals",
    "unit_confidence",
    "unit_confidences",
]
