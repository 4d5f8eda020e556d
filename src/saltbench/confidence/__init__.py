"""Unit confidence (docs/confidence.md): the one registry of confidence estimators.

:data:`CONFIDENCE_FUNCTIONS` is the one list of estimators, each a :class:`ConfidenceSpec` with its family,
source, direction and extra cost (docs/confidence.md §Families): the paper's nine (:data:`PAPER_FUNCTIONS`,
computed from unit summaries by :func:`unit_confidences`), six from the literature
(:data:`EXTENDED_FUNCTIONS`), CCP, the reasoning trace, the draws' consistency and the second pass, and those
of installed plugins (entry-point group ``saltbench.confidence``, docs/extending.md); functions with a
``token_score`` are computed by :func:`extended_confidences` from :func:`token_distributions`. A run scores
the token functions its configuration selects (``scoring.confidence_functions``, names of
:data:`TOKEN_FUNCTIONS`; default: the paper's nine); the other estimators' columns come from the stages that
compute them.

>>> PAPER_CONFIDENCE_NAMES[:2], CONFIDENCE_FUNCTIONS["perplexity"].higher_is_confident
(('mean_probability', 'median_probability'), False)
>>> ranking_scores("perplexity", [2.0, 5.0]).tolist()
[-2.0, -5.0]
"""

from typing import TYPE_CHECKING

from saltbench.confidence.specs import (
    EXTRA_COSTS,
    FAMILY_COSTS,
    PAPER_CONFIDENCE_NAMES,
    PAPER_FUNCTIONS,
    REDUCTIONS,
    ConfidenceSpec,
    ExtraCost,
    Reduction,
    TokenScore,
)
from saltbench.core.lazy import lazy_getattr
from saltbench.core.vocabulary import FLAVOURS, Flavour

# numpy-backed names load on first access: the configuration imports this package for its defaults only
_LAZY = {
    **dict.fromkeys(
        (
            "CONFIDENCE_FUNCTIONS",
            "CONFIDENCE_PLUGINS",
            "NAME_PATTERN",
            "TOKEN_FUNCTIONS",
            "confidence_spec",
            "estimator_column",
            "estimator_family",
            "ranking_scores",
            "scored_columns",
        ),
        "registry",
    ),
    **dict.fromkeys(
        (
            "EXTENDED_FUNCTIONS",
            "RENYI_ALPHA",
            "TokenDistributions",
            "extended_confidences",
            "token_distributions",
        ),
        "_extended",
    ),
    **dict.fromkeys(
        (
            "EPS",
            "PAD_LOGPROB",
            "ROUNDING_TOLERANCE",
            "SENTINEL_THRESHOLD",
            "TOP_K",
            "token_signals",
            "unit_confidence",
            "unit_confidences",
        ),
        "_paper",
    ),
}
__getattr__ = lazy_getattr(__name__, _LAZY)

if TYPE_CHECKING:
    from saltbench.confidence._extended import (
        EXTENDED_FUNCTIONS,
        RENYI_ALPHA,
        TokenDistributions,
        extended_confidences,
        token_distributions,
    )
    from saltbench.confidence._paper import (
        EPS,
        PAD_LOGPROB,
        ROUNDING_TOLERANCE,
        SENTINEL_THRESHOLD,
        TOP_K,
        token_signals,
        unit_confidence,
        unit_confidences,
    )
    from saltbench.confidence.registry import (
        CONFIDENCE_FUNCTIONS,
        CONFIDENCE_PLUGINS,
        NAME_PATTERN,
        TOKEN_FUNCTIONS,
        confidence_spec,
        estimator_column,
        estimator_family,
        ranking_scores,
        scored_columns,
    )

__all__ = [
    "CONFIDENCE_FUNCTIONS",
    "CONFIDENCE_PLUGINS",
    "EPS",
    "EXTENDED_FUNCTIONS",
    "EXTRA_COSTS",
    "FAMILY_COSTS",
    "FLAVOURS",
    "NAME_PATTERN",
    "PAD_LOGPROB",
    "PAPER_CONFIDENCE_NAMES",
    "PAPER_FUNCTIONS",
    "REDUCTIONS",
    "RENYI_ALPHA",
    "ROUNDING_TOLERANCE",
    "SENTINEL_THRESHOLD",
    "TOKEN_FUNCTIONS",
    "TOP_K",
    "ConfidenceSpec",
    "ExtraCost",
    "Flavour",
    "Reduction",
    "TokenDistributions",
    "TokenScore",
    "confidence_spec",
    "estimator_column",
    "estimator_family",
    "extended_confidences",
    "ranking_scores",
    "scored_columns",
    "token_distributions",
    "token_signals",
    "unit_confidence",
    "unit_confidences",
]
