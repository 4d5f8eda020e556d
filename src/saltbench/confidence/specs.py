"""What a confidence estimator is (:class:`ConfidenceSpec`) and the paper's nine (docs/confidence.md §4.1).

Standard library only: the configuration (imported by the Snakefile on every invocation) takes the default
of ``scoring.confidence_functions`` from here. The formulas of the nine are computed in
:mod:`saltbench.confidence._paper`; the registry of every function, plugins included, is
:data:`saltbench.confidence.CONFIDENCE_FUNCTIONS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, get_args

from saltbench.core.vocabulary import FLAVOURS, EstimatorFamily, Flavour

Reduction = Literal["mean", "min", "max", "sum"]
REDUCTIONS: tuple[Reduction, ...] = get_args(Reduction)
"""How a function's per-token scores become the unit's value (functions with a ``token_score``)."""

TokenScore = Callable[[Any], Any]
"""``token_score(distributions) -> (T,) float array``: a function's value for each token, from a
:class:`saltbench.confidence.TokenDistributions` of ``T`` tokens."""


ExtraCost = Literal["none", "draws", "second_pass"]
EXTRA_COSTS: tuple[ExtraCost, ...] = get_args(ExtraCost)
"""What an estimator costs beyond the greedy answer, per response (docs/confidence.md §Families): nothing; the
``n`` sampled answers of ``inference.samples`` (tokens generated); or a second pass (the prompt tokens scored
and the reply tokens generated, per unit asked about)."""

FAMILY_COSTS: MappingProxyType[EstimatorFamily, ExtraCost] = MappingProxyType(
    {"single_pass": "none", "samples": "draws", "second_pass": "second_pass"}
)
"""The extra cost of each estimator family (:data:`saltbench.core.vocabulary.ESTIMATOR_FAMILIES`)."""


@dataclass(frozen=True)
class ConfidenceSpec:
    """A confidence estimator: its name, direction, whether its range needs calibration, its family and the
    source its column is read from (docs/confidence.md §Families).

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
        family: what it needs beyond the greedy answer (``single_pass``, ``samples``, ``second_pass``);
            its extra cost follows (:attr:`extra_cost`, :data:`FAMILY_COSTS`).
        source: ``""`` for a function of the token distributions, computed by the scoring stage in each
            of its ``flavours`` and selected by ``scoring.confidence_functions``; otherwise the one source
            its column ``{source}.{name}`` is read from (``topk`` for CCP, ``draws``, ``second_pass``,
            ``trace``), added to the units table by the stage that computes it.
        inputs: what it reads, in words (default: the unit's token distributions).
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
    family: EstimatorFamily = "single_pass"
    source: str = ""
    inputs: str = ""

    def short_label(self) -> str:
        """:attr:`label`, or the name with spaces for underscores."""
        return self.label or self.name.replace("_", " ")

    @property
    def from_tokens(self) -> bool:
        """Whether the scoring stage computes it from the token distributions (``source`` empty): only such
        a function can be named in ``scoring.confidence_functions``."""
        return not self.source

    @property
    def sources(self) -> tuple[str, ...]:
        """The sources its column exists in: its ``flavours``, or its one ``source``."""
        return (self.source,) if self.source else tuple(self.flavours)

    @property
    def extra_cost(self) -> ExtraCost:
        """What it costs beyond the greedy answer (:data:`FAMILY_COSTS` of its family)."""
        return FAMILY_COSTS[self.family]

    def input_text(self) -> str:
        """:attr:`inputs`, or the default of a token function: the unit's token distributions."""
        return self.inputs or f"the unit's token distributions ({', '.join(self.flavours)})"


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

__all__ = [
    "EXTRA_COSTS",
    "FAMILY_COSTS",
    "PAPER_CONFIDENCE_NAMES",
    "PAPER_FUNCTIONS",
    "REDUCTIONS",
    "ConfidenceSpec",
    "ExtraCost",
    "Reduction",
    "TokenScore",
]
