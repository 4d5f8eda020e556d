"""What a confidence function is (:class:`ConfidenceSpec`) and the paper's nine (docs/confidence.md §4.1).

Standard library only: the configuration (imported by the Snakefile on every invocation) takes the default
of ``scoring.confidence_functions`` from here. The formulas of the nine are computed in
:mod:`saltbench.confidence._paper`; the registry of every function, plugins included, is
:data:`saltbench.confidence.CONFIDENCE_FUNCTIONS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from saltbench.core.vocabulary import FLAVOURS, Flavour

Reduction = Literal["mean", "min", "max", "sum"]
REDUCTIONS: tuple[Reduction, ...] = get_args(Reduction)
"""How a function's per-token scores become the unit's value (functions with a ``token_score``)."""

TokenScore = Callable[[Any], Any]
"""``token_score(distributions) -> (T,) float array``: a function's value for each token, from a
:class:`saltbench.confidence.TokenDistributions` of ``T`` tokens."""


@dataclass(frozen=True)
class ConfidenceSpec:
    """A confidence function: its name, direction and whether its range needs calibration.

    Attributes:
        name: the function's name (a key of :data:`saltbench.confidence.CONFIDENCE_FUNCTIONS`).
        higher_is_confident: ``True`` if larger values mean more confident.
        needs_calibration: ``True`` if values are not probabilities in [0, 1].
        formula: the definition over the unit's tokens ``t = 1..T``.
        token_score: the per-token score (:data:`TokenScore`) reduced over the unit's tokens by ``reduce``;
            ``None`` for the paper's nine, computed from unit summaries by :func:`unit_confidences`.
        reduce: ``mean`` | ``min`` | ``max`` | ``sum`` of the token scores (with ``token_score``).
        flavours: the flavours the function supports (a distribution-based one needs ``topk``'s whole
            renormalised distribution).
        citation: where the formula comes from (functions beyond the paper).
        label: the short name of figures (default: the name with spaces for underscores).
    """

    name: str
    higher_is_confident: bool
    needs_calibration: bool
    formula: str
    token_score: TokenScore | None = None
    reduce: Reduction = "mean"
    flavours: tuple[Flavour, ...] = FLAVOURS
    citation: str = ""
    label: str = ""

    def short_label(self) -> str:
        """:attr:`label`, or the name with spaces for underscores."""
        return self.label or self.name.replace("_", " ")


PAPER_FUNCTIONS: tuple[ConfidenceSpec, ...] = (
    ConfidenceSpec("mean_probability", True, False, "(1/T) Σ p_t", label="mean prob."),
    ConfidenceSpec(
        "median_probability",
        True,
        False,
        "median_t p_t (mean of the two middle values)",
        label="median prob.",
    ),
    ConfidenceSpec("max_probability", True, False, "max_t p_t", label="max prob."),
    ConfidenceSpec("log_probability_sum", True, True, "Σ ℓ_t", label="log-prob. sum"),
    ConfidenceSpec("max_log_probability", True, True, "max_t ℓ_t", label="max log-prob."),
    ConfidenceSpec("log_perplexity", False, True, "-(1/T) Σ ℓ_t", label="log-perplexity"),
    ConfidenceSpec("perplexity", False, True, "exp(-(1/T) Σ ℓ_t)", label="perplexity"),
    ConfidenceSpec("max_entropy", False, True, "max_t H_t", label="max entropy"),
    ConfidenceSpec("mean_entropy", False, True, "(1/T) Σ H_t", label="mean entropy"),
)
"""The nine paper confidence functions (docs/confidence.md §4.1) with their directions, in paper order."""

PAPER_CONFIDENCE_NAMES: tuple[str, ...] = tuple(spec.name for spec in PAPER_FUNCTIONS)
"""The nine functions of the paper, in paper order: the default of ``scoring.confidence_functions``."""

STAGE_FUNCTIONS: tuple[ConfidenceSpec, ...] = (
    ConfidenceSpec(
        "ccp",
        True,
        False,
        "Π_t Σ_{a ≡ g_t} p_t(a) / Σ_a p_t(a): the top-k mass of alternatives that leave the unit's "
        "comparison key unchanged",
        flavours=("topk",),
        label="CCP",
        citation="claim-conditioned probability: Fadeeva et al. (2024), Fact-checking the output of large "
        "language models via token-level uncertainty quantification, ACL Findings (alternatives judged by "
        "the task's unit equivalence instead of an NLI model)",
    ),
    ConfidenceSpec(
        "reasoning_tokens",
        False,
        True,
        "the number of tokens of the response's reasoning trace (generation units only)",
        flavours=(),
        label="reasoning tokens",
        citation="trace length as a confidence signal: arXiv 2510.10409",
    ),
)
"""Single-pass estimators that the scoring stage computes itself, always, from the whole unit rather than
per token (docs/confidence.md §4.6–4.7): columns ``topk.ccp`` and ``trace.reasoning_tokens``, whatever
``scoring.confidence_functions`` selects; registered so that the metrics, the figures and
``metrics.default_confidence`` know them and their directions."""

__all__ = [
    "PAPER_CONFIDENCE_NAMES",
    "PAPER_FUNCTIONS",
    "REDUCTIONS",
    "STAGE_FUNCTIONS",
    "ConfidenceSpec",
    "Reduction",
    "TokenScore",
]
