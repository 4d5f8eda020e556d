"""Unit confidence from token log-probabilities (docs/confidence.md): the registry of confidence functions.

:data:`CONFIDENCE_FUNCTIONS` is the one list of confidence functions: the paper's nine
(:data:`PAPER_FUNCTIONS`, computed from unit summaries by :func:`unit_confidences`), four from the literature
(:data:`EXTENDED_FUNCTIONS`) and those of installed plugins (entry-point group ``saltbench.confidence``,
docs/extending.md), each a :class:`ConfidenceSpec`; functions with a ``token_score`` are computed by
:func:`extended_confidences` from :func:`token_distributions`. A run scores the functions its configuration
selects (``scoring.confidence_functions``; default: the paper's nine).

>>> PAPER_CONFIDENCE_NAMES[:2], CONFIDENCE_FUNCTIONS["perplexity"].higher_is_confident
(('mean_probability', 'median_probability'), False)
>>> ranking_scores("perplexity", [2.0, 5.0]).tolist()
[-2.0, -5.0]
"""

from typing import TYPE_CHECKING

from saltbench.confidence.specs import (
    PAPER_CONFIDENCE_NAMES,
    PAPER_FUNCTIONS,
    REDUCTIONS,
    STAGE_FUNCTIONS,
    ConfidenceSpec,
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
            "confidence_spec",
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
        confidence_spec,
        ranking_scores,
        scored_columns,
    )

__all__ = [
    "CONFIDENCE_FUNCTIONS",
    "CONFIDENCE_PLUGINS",
    "EPS",
    "EXTENDED_FUNCTIONS",
    "FLAVOURS",
    "NAME_PATTERN",
    "PAD_LOGPROB",
    "PAPER_CONFIDENCE_NAMES",
    "PAPER_FUNCTIONS",
    "REDUCTIONS",
    "RENYI_ALPHA",
    "ROUNDING_TOLERANCE",
    "SENTINEL_THRESHOLD",
    "STAGE_FUNCTIONS",
    "TOP_K",
    "ConfidenceSpec",
    "Flavour",
    "Reduction",
    "TokenDistributions",
    "TokenScore",
    "confidence_spec",
    "extended_confidences",
    "ranking_scores",
    "scored_columns",
    "token_distributions",
    "token_signals",
    "unit_confidence",
    "unit_confidences",
]
