"""Confidence functions beyond the paper's nine: a per-token score from the token's distribution, reduced
over the unit's tokens (docs/confidence.md §4.4, docs/extending.md §3).

A :class:`ConfidenceSpec` with a ``token_score`` is computed here; the paper's nine (no ``token_score``)
keep their summary path in :mod:`saltbench.confidence._paper`. The token's distribution is the flavour's
(docs/confidence.md §2):

* ``topk``: the renormalised top-``k`` vector of §2.1 (chosen token first, then the first ``k - 1``
  present alternatives, padding of weight 0), as log-probabilities summing to one; a token without
  log-probabilities is uniform over ``k``;
* ``full``: the model's own log-probabilities of the chosen token and the returned alternatives, not
  renormalised (their probabilities sum to at most one; the rest of the vocabulary is not stored).

Absent entries are ``-inf``. Everything is vectorised over tokens, in blocks of ``_CHUNK`` rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from saltbench.confidence._paper import (
    _CHUNK,
    PAD_LOGPROB,
    SENTINEL_THRESHOLD,
    FloatArray,
    _check_entropies,
    _check_logprobs,
    _repaired_sentinels,
)
from saltbench.confidence.specs import ConfidenceSpec, Reduction
from saltbench.core.vocabulary import Flavour


@dataclass(frozen=True)
class TokenDistributions:
    """The per-token inputs of a confidence function, for ``T`` tokens of one flavour.

    Attributes:
        flavour: ``"topk"`` or ``"full"`` (module docstring).
        logprobs: shape ``(T, K)``: column 0 the chosen token's log-probability, then the alternatives;
            ``-inf`` = absent. ``topk``: each row sums to one in probability.
        entropy: shape ``(T,)``: the token's entropy (``topk``: of the renormalised vector; ``full``: the
            full-vocabulary entropy, NaN when not recorded).
    """

    flavour: Flavour
    logprobs: FloatArray
    entropy: FloatArray

    @property
    def chosen(self) -> FloatArray:
        """``(T,)`` log-probability of the chosen token."""
        return self.logprobs[:, 0]

    def sorted_probabilities(self) -> FloatArray:
        """``(T, K)`` probabilities in descending order per row (absent entries: 0)."""
        return -np.sort(-np.exp(self.logprobs), axis=1)


def _compact_alternatives(others: FloatArray, absent: npt.NDArray[np.bool_], width: int) -> FloatArray:
    """The first ``width`` present alternatives of each row, in their order, ``-inf`` after them."""
    order = np.argsort(absent, axis=1, kind="stable")[:, :width]  # present entries first, order kept
    picked = np.take_along_axis(np.where(absent, -np.inf, others), order, axis=1)
    if picked.shape[1] < width:
        picked = np.pad(picked, ((0, 0), (0, width - picked.shape[1])), constant_values=-np.inf)
    return picked


def token_distributions(
    chosen_logprob: npt.ArrayLike,
    topk_logprobs: npt.ArrayLike | None,
    full_entropy: npt.ArrayLike | None,
    flavour: Flavour,
    *,
    chosen_in_topk: npt.ArrayLike | None = None,
    top_k: int = 20,
) -> TokenDistributions:
    """The flavour's per-token distributions (module docstring) from the stored log-probabilities.

    Arguments as :func:`saltbench.confidence.token_signals`, whose input checks apply. For ``topk`` the
    chosen column equals ``token_signals``' ``ℓ`` and the entropy its ``H`` (up to rounding and the
    ``eps`` floor there).

    Example:
        >>> d = token_distributions([np.log(.5)], [[np.log(.3)]], None, "topk", top_k=3)
        >>> np.exp(d.logprobs).round(3).tolist()
        [[0.625, 0.375, 0.0]]
    """
    chosen = np.asarray(chosen_logprob, dtype=np.float64)
    n = chosen.size
    others = np.full((n, 0), np.nan) if topk_logprobs is None else np.asarray(topk_logprobs, dtype=np.float64)
    if chosen.ndim != 1 or others.ndim != 2 or others.shape[0] != n:
        raise ValueError(
            f"chosen_logprob must be (T,) and topk_logprobs (T, K), got {chosen.shape}, {others.shape}"
        )
    _check_logprobs(chosen, "chosen_logprob")
    _check_logprobs(others, "topk_logprobs")
    absent = np.isnan(others)
    if chosen_in_topk is not None:
        absent = absent | np.asarray(chosen_in_topk, dtype=bool)
    if flavour == "full":
        if full_entropy is None:
            raise ValueError("full_entropy is required for flavour='full', got None")
        entropy = np.asarray(full_entropy, dtype=np.float64)
        _check_entropies(entropy, "full_entropy")
        alternatives = _compact_alternatives(others, absent, others.shape[1])
        return TokenDistributions(
            "full", np.column_stack([np.minimum(chosen, 0.0), alternatives]), entropy.copy()
        )
    no_logprobs = np.isnan(chosen)
    sentinel = np.flatnonzero(chosen < SENTINEL_THRESHOLD)
    repaired = chosen.copy()
    if sentinel.size:
        repaired[sentinel] = _repaired_sentinels(others[sentinel], absent[sentinel])
    d = np.column_stack([repaired, _compact_alternatives(others, absent, top_k - 1)])
    d = np.where(np.isneginf(d) & (np.arange(top_k) > 0), PAD_LOGPROB, d)  # padding (§2.1 step 3)
    with np.errstate(invalid="ignore", over="ignore"):
        m = d.max(axis=1)
        uniform = no_logprobs | ~np.isfinite(m)
        m[uniform] = 0.0
        shifted = d - m[:, None]
        log_z = np.log(np.exp(shifted).sum(axis=1))
        logprobs = shifted - log_z[:, None]
    logprobs[uniform] = -math.log(top_k)
    p = np.exp(logprobs)
    with np.errstate(invalid="ignore"):
        entropy = -np.where(p > 0, p * logprobs, 0.0).sum(axis=1)
    return TokenDistributions("topk", logprobs, entropy)


def _reduce_to_units(
    values: FloatArray,
    token_index: npt.NDArray[Any],
    unit_index: npt.NDArray[Any],
    n_units: int,
    how: Reduction,
) -> FloatArray:
    """``how`` (mean, min, max, sum) of ``values[token]`` over each unit's pairs; NaN for units without."""
    counts = np.bincount(unit_index, minlength=n_units)
    picked = values[token_index]
    if how in ("mean", "sum"):
        total = np.bincount(unit_index, weights=picked, minlength=n_units)
        out = total / np.where(counts > 0, counts, 1) if how == "mean" else total
    else:
        out = np.full(n_units, np.inf if how == "min" else -np.inf)
        (np.minimum if how == "min" else np.maximum).at(out, unit_index, picked)
    return np.where(counts > 0, out, np.nan)


def extended_confidences(
    distributions: TokenDistributions,
    token_index: npt.ArrayLike,
    unit_index: npt.ArrayLike,
    n_units: int,
    functions: tuple[ConfidenceSpec, ...],
) -> dict[str, FloatArray]:
    """``{name: (n_units,)}`` of each function with a ``token_score`` (NaN for units without tokens).

    Each ``token_score`` sees blocks of at most ``_CHUNK`` tokens: a function of one token's distribution
    gives the same values in any block (the conformance check tests it).
    """
    tok = np.asarray(token_index, dtype=np.intp)
    unit = np.asarray(unit_index, dtype=np.intp)
    n = distributions.logprobs.shape[0]
    out: dict[str, FloatArray] = {}
    for spec in functions:
        if spec.token_score is None:
            raise ValueError(
                f"confidence function {spec.name!r} has no token_score (it is one of the paper's nine)"
            )
        scores = np.empty(n)
        for lo in range(0, n, _CHUNK):
            block = TokenDistributions(
                distributions.flavour,
                distributions.logprobs[lo : lo + _CHUNK],
                distributions.entropy[lo : lo + _CHUNK],
            )
            values = np.asarray(spec.token_score(block), dtype=np.float64)
            if values.shape != (block.logprobs.shape[0],):
                raise ValueError(
                    f"confidence function {spec.name!r}: token_score returned shape {values.shape}, "
                    f"expected ({block.logprobs.shape[0]},)"
                )
            scores[lo : lo + _CHUNK] = values
        out[spec.name] = _reduce_to_units(scores, tok, unit, n_units, spec.reduce)
    return out


# -- the built-in functions beyond the paper ------------------------------------------------------------

RENYI_ALPHA = 0.5
"""Order α of the Rényi negentropy (α → 1 gives the Shannon negentropy, ``ln K − H``)."""


def _probability(d: TokenDistributions) -> FloatArray:
    return np.exp(d.chosen)


def _margin(d: TokenDistributions) -> FloatArray:
    top = d.sorted_probabilities()
    second = top[:, 1] if top.shape[1] > 1 else np.zeros(top.shape[0])
    return top[:, 0] - second


def _renyi_negentropy(d: TokenDistributions) -> FloatArray:
    k = d.logprobs.shape[1]
    power_sum = np.exp(RENYI_ALPHA * d.logprobs).sum(axis=1)
    return math.log(k) + np.log(power_sum) / (RENYI_ALPHA - 1.0)


def _fisher_rao_to_uniform(d: TokenDistributions) -> FloatArray:
    k = d.logprobs.shape[1]
    affinity = np.exp(0.5 * d.logprobs).sum(axis=1) / math.sqrt(k)  # Σ √(p_i · 1/K)
    return (2.0 / math.pi) * np.arccos(np.clip(affinity, 0.0, 1.0))


BOOST_JUMP = 0.3
"""BoostedProb's relative jump: a gap after rank ``i`` counts if ``p_(i) − p_(i+1) > BOOST_JUMP · p_(i)``."""
BOOST_EPSILON = 0.005
"""BoostedProb's absolute jump: the gap must also exceed this."""


def _boosted_probability(d: TokenDistributions) -> FloatArray:
    """BoostedProb of the chosen token (Dinh et al. 2025): with the token's probabilities sorted,
    ``p_(1) ≥ p_(2) ≥ …``, the dominant tokens are ranks ``1..c`` where ``c`` is the *last* rank whose gap to
    the next one exceeds both ``BOOST_JUMP · p_(c)`` and ``BOOST_EPSILON`` (none without such a gap); a
    dominant chosen token scores the mass of the dominant tokens, any other its own probability."""
    p = np.exp(d.logprobs)  # absent entries (-inf): 0
    ranked = -np.sort(-p, axis=1)
    gap = ranked[:, :-1] - ranked[:, 1:]
    jump = (gap > BOOST_JUMP * ranked[:, :-1]) & (gap > BOOST_EPSILON)
    has_cut = jump.any(axis=1)
    cut = (jump.shape[1] - 1) - np.argmax(jump[:, ::-1], axis=1)  # last jump: ranks 0..cut dominate
    mass = np.take_along_axis(np.cumsum(ranked, axis=1), cut[:, None], axis=1)[:, 0]
    chosen = p[:, 0]
    rank = (p[:, 1:] > chosen[:, None]).sum(axis=1)  # alternatives more likely than the chosen token
    return np.where(has_cut & (rank <= cut), mass, chosen)


def _self_certainty(d: TokenDistributions) -> FloatArray:
    """KL(U ‖ p) of the token's distribution over its ``V`` present entries: ``−ln V − (1/V) Σ_j ln p_j``
    (Kang et al. 2025); 0 for a uniform distribution, larger the more peaked."""
    present = d.logprobs > PAD_LOGPROB / 2  # padding (weight 0) and absent entries are not outcomes
    n = present.sum(axis=1)
    total = np.where(present, d.logprobs, 0.0).sum(axis=1)
    return -np.log(n) - total / n


EXTENDED_FUNCTIONS: tuple[ConfidenceSpec, ...] = (
    ConfidenceSpec(
        "min_probability",
        True,
        False,
        "min_t p_t",
        token_score=_probability,
        reduce="min",
        label="min prob.",
        citation="the least likely token of the span: Manakul, Liusie & Gales (2023), SelfCheckGPT, "
        "the Max(-log p) baseline (here as a probability, min_t p_t = exp(-max_t(-log p_t)))",
    ),
    ConfidenceSpec(
        "mean_margin",
        True,
        False,
        "(1/T) Σ (p_t^(1) - p_t^(2)), the top two probabilities of the token",
        token_score=_margin,
        reduce="mean",
        label="mean margin",
        citation="margin of the two most likely outcomes: Scheffer, Decomain & Wrobel (2001), Active hidden "
        "Markov models for information extraction, IDA",
    ),
    ConfidenceSpec(
        "mean_renyi_negentropy",
        True,
        True,
        "(1/T) Σ D_α(p_t ‖ u_K) = (1/T) Σ [ln K + ln(Σ_i p_ti^α) / (α - 1)], α = 0.5",
        token_score=_renyi_negentropy,
        reduce="mean",
        flavours=("topk",),
        label="Rényi negentropy",
        citation="Rényi divergence to the uniform distribution: Darrin, Piantanida & Colombo (2023), "
        "Rainproof: an umbrella to shield text generators from out-of-distribution data, EMNLP",
    ),
    ConfidenceSpec(
        "mean_fisher_rao",
        True,
        True,
        "(1/T) Σ (2/π) arccos(Σ_i √(p_ti / K)), the distance to u_K",
        token_score=_fisher_rao_to_uniform,
        reduce="mean",
        flavours=("topk",),
        label="Fisher–Rao",
        citation="Fisher–Rao distance to the uniform distribution: Darrin, Piantanida & Colombo (2023), "
        "Rainproof, EMNLP (normalised to [0, 1] by 2/π)",
    ),
    ConfidenceSpec(
        "mean_boosted_probability",
        True,
        False,
        "(1/T) Σ b_t; b_t = Σ_{i≤c_t} p_t^(i) if the chosen token ranks ≤ c_t, else p_t; c_t the last rank "
        "with p^(i) − p^(i+1) > 0.3·p^(i) and > 0.005",
        token_score=_boosted_probability,
        reduce="mean",
        label="boosted prob.",
        citation="BoostedProb: Dinh & Niehues (2025), Are generative models underconfident? Better "
        "quality estimation with boosted model probability, EMNLP (their defaults: difference jump 0.3, "
        "epsilon 0.005, the last cut point); tested against the boostedprob package",
    ),
    ConfidenceSpec(
        "mean_self_certainty",
        True,
        True,
        "(1/T) Σ KL(U_V ‖ p_t) = (1/T) Σ [−ln V − (1/V) Σ_j ln p_tj], V the token's stored outcomes",
        token_score=_self_certainty,
        reduce="mean",
        flavours=("topk",),
        label="self-certainty",
        citation="Kang, Zhao & Song (2025), Scalable best-of-N selection for large language models via "
        "self-certainty (over the renormalised top-k outcomes here, not the whole vocabulary)",
    ),
)
"""Six token-level functions from the literature that the stored top-20 log-probabilities support
(docs/confidence.md §4.4). The Rényi, Fisher–Rao and self-certainty functions need a whole distribution:
the renormalised top-k one only."""


__all__ = [
    "BOOST_EPSILON",
    "BOOST_JUMP",
    "EXTENDED_FUNCTIONS",
    "RENYI_ALPHA",
    "TokenDistributions",
    "extended_confidences",
    "token_distributions",
]
