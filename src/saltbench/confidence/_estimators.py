"""The estimators that are not token functions selected by ``scoring.confidence_functions``
(docs/confidence.md §Families): claim-conditioned probability and the reasoning trace (single pass), the
draws' consistency (samples) and the model's answers about its own answer (second pass).

Declared here once, with their family, source, direction and inputs; the columns ``{source}.{name}`` are
computed by the stages that own them (scoring: the draws' consistency, CCP, the trace, the second pass) and
read by the metrics, the analysis and the explorer wherever a units table has them. Standard library only.
"""

from __future__ import annotations

from saltbench.confidence.specs import ConfidenceSpec
from saltbench.core.vocabulary import DRAW_SOURCE, SECOND_PASS_SOURCE, TRACE_SOURCE

_DRAWS = "the n sampled answers (inference.samples), aligned to the greedy answer by the task's alignment"

OTHER_ESTIMATORS: tuple[ConfidenceSpec, ...] = (
    ConfidenceSpec(
        "ccp",
        True,
        False,
        "Π_t [Σ_{a ≡ chosen} p_t(a) / Σ_a p_t(a)] over the unit's tokens t and their top-k alternatives a, "
        "≡ the task's unit equivalence",
        flavours=("topk",),
        source="topk",
        inputs="the unit's stored top-k alternatives, judged by the task's unit equivalence (no NLI model)",
        citation="claim-conditioned probability: Fadeeva et al. (2024), Fact-checking the output of large "
        "language models via token-level uncertainty quantification, ACL Findings",
        label="CCP",
    ),
    ConfidenceSpec(
        "reasoning_tokens",
        False,
        True,
        "the number of tokens of the response's reasoning trace",
        flavours=(),
        source=TRACE_SOURCE,
        inputs="the length of a reasoning model's trace (generation level; NaN elsewhere, other models)",
        citation="trace length as a confidence signal: arXiv 2510.10409",
        label="reasoning tokens",
    ),
    ConfidenceSpec(
        "agreement",
        True,
        False,
        "the share of the n draws whose aligned unit equals the greedy unit",
        flavours=(),
        family="samples",
        source=DRAW_SOURCE,
        inputs=_DRAWS,
        label="draw agreement",
    ),
    ConfidenceSpec(
        "entropy",
        False,
        True,
        "the entropy of the values the n draws put at the unit's place",
        flavours=(),
        family="samples",
        source=DRAW_SOURCE,
        inputs=_DRAWS,
        label="draw entropy",
    ),
    ConfidenceSpec(
        "distinct",
        False,
        True,
        "the number of distinct values the n draws put at the unit's place",
        flavours=(),
        family="samples",
        source=DRAW_SOURCE,
        inputs=_DRAWS,
        label="draw distinct",
    ),
    ConfidenceSpec(
        "verbalized",
        True,
        False,
        "the probability the model states, asked how likely its unit is correct (a number in [0, 1])",
        flavours=(),
        family="second_pass",
        source=SECOND_PASS_SOURCE,
        inputs="the model's reply to a second prompt about its own unit (parsed strictly)",
        label="verbalized",
    ),
    ConfidenceSpec(
        "p_true",
        True,
        False,
        "p(True) / (p(True) + p(False)) of the first reply token, asked whether its unit is true",
        flavours=(),
        family="second_pass",
        source=SECOND_PASS_SOURCE,
        inputs="the first reply token's top-k probabilities of True and False to a second prompt",
        citation="P(True): Kadavath et al. (2022), Language models (mostly) know what they know",
        label="P(True)",
    ),
)
"""The estimators beyond the token functions, in family order (docs/confidence.md §Families): their columns
are ``topk.ccp``, ``trace.reasoning_tokens``, ``draws.{agreement,entropy,distinct}`` and
``second_pass.{verbalized,p_true}``."""

__all__ = ["OTHER_ESTIMATORS"]
