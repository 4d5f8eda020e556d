"""How responses are evaluated: the options :func:`~saltbench.evaluation.evaluate` and
:func:`~saltbench.evaluation.evaluate_many` share, declared once (:class:`EvaluateOptions`).

The defaults are the authors' rules (paper-compatible, as the package's API promises; docs/compatibility.md
§1): **they are not all the workflow's**. The workflow scores with its config's ``scoring`` block, whose
``fence_rule`` defaults to ``line`` (docs/configuration.md §3); :meth:`EvaluateOptions.from_scoring` gives
the options a run scored with, so a notebook call reproduces the run's units.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from saltbench.core.vocabulary import ALIGNMENTS, Alignment, FenceRule, ReasoningFormat
from saltbench.evaluation._alignment import check_scores
from saltbench.evaluation._extraction import check_fence_rule
from saltbench.evaluation._reasoning import check_reasoning_format


@dataclass(frozen=True)
class EvaluateOptions:
    """Every option of :func:`~saltbench.evaluation.evaluate` and :func:`~saltbench.evaluation.evaluate_many`
    but the task's variant and the granularities; checked when made (``ValueError`` naming the option).

    Attributes:
        alignment: ``strict`` (positional, the paper's) | ``dynamic`` (Needleman–Wunsch,
            docs/evaluation.md §6).
        keyword_filter: apply the authors' bad-keyword filter during extraction (paper: on).
        require_fence: an unfenced response has no answer (docs/compatibility.md §1.1; paper: off, the whole
            text is used).
        match_score, mismatch_penalty, gap_penalty: dynamic-alignment scores (docs/evaluation.md §6.1).
        reasoning: the model's reasoning format, ``think`` or ``harmony`` (docs/reasoning.md §1): the answer
            is looked for only in the final content after the reasoning, and a response whose reasoning
            never ends has none; ``None``: plain text, the whole response.
        fence_rule: ``positional`` (the authors': every run of four ``*`` is a fence; the default here) or
            ``line`` (only a run that starts a line, or ends one and closes a fence; **the workflow's
            default**, docs/compatibility.md §1.3).

    Example:
        >>> EvaluateOptions().fence_rule, EvaluateOptions.from_scoring({"fence_rule": "line"}).fence_rule
        ('positional', 'line')
    """

    alignment: Alignment = "strict"
    keyword_filter: bool = True
    require_fence: bool = False
    match_score: float = 2
    mismatch_penalty: float = 1
    gap_penalty: float = 1
    reasoning: ReasoningFormat | None = None
    fence_rule: FenceRule = "positional"

    def __post_init__(self) -> None:
        if self.alignment not in ALIGNMENTS:
            raise ValueError(f"alignment must be one of {ALIGNMENTS}, got {self.alignment!r}")
        if self.scores != (2, 1, 1):
            check_scores(*self.scores)
        check_reasoning_format(self.reasoning)
        check_fence_rule(self.fence_rule)

    @property
    def scores(self) -> tuple[float, float, float]:
        """``(match_score, mismatch_penalty, gap_penalty)``."""
        return (self.match_score, self.mismatch_penalty, self.gap_penalty)

    @classmethod
    def from_scoring(cls, scoring: Any, reasoning: ReasoningFormat | None = None) -> EvaluateOptions:
        """The options the workflow's scoring stage evaluates a model's responses with: ``scoring`` is the
        config's ``scoring`` block (a ``saltbench.config.ScoringConfig``, or a mapping such as a resolved
        ``config["scoring"]``; keys it lacks keep the block's defaults: ``fence_rule`` ``line``),
        ``reasoning`` the model's registry ``reasoning_format``."""
        workflow = {"alignment": "strict", "keyword_filter": True, "fence_rule": "line"}
        if isinstance(scoring, Mapping):
            chosen = {key: scoring.get(key, default) for key, default in workflow.items()}
        else:
            chosen = {key: getattr(scoring, key, default) for key, default in workflow.items()}
        return cls(**chosen, reasoning=reasoning)


class EvaluateKeywords(TypedDict, total=False):
    """:class:`EvaluateOptions`' fields as keyword arguments of ``evaluate`` / ``evaluate_many`` (the stable
    API's keywords; a test keeps the two declarations equal)."""

    alignment: Alignment
    keyword_filter: bool
    require_fence: bool
    match_score: float
    mismatch_penalty: float
    gap_penalty: float
    reasoning: ReasoningFormat | None
    fence_rule: FenceRule


DEFAULT_OPTIONS = EvaluateOptions()
_NAMES = frozenset(f.name for f in dataclasses.fields(EvaluateOptions))


def resolve_options(
    options: EvaluateOptions | None, keywords: Mapping[str, Any], caller: str
) -> EvaluateOptions:
    """``options`` (default: :data:`DEFAULT_OPTIONS`) with the keyword arguments of a ``caller`` call
    applied; ``TypeError`` naming an unknown keyword, ``ValueError`` a bad value."""
    base = DEFAULT_OPTIONS if options is None else options
    if not keywords:
        return base
    unknown = sorted(set(keywords) - _NAMES)
    if unknown:
        raise TypeError(f"{caller}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}")
    items = tuple(keywords.items())
    try:
        hash(items)
    except TypeError:  # an unhashable value: refused by the checks, with its name
        return dataclasses.replace(base, **keywords)
    return _replaced(base, items)


@functools.lru_cache(maxsize=256)
def _replaced(base: EvaluateOptions, items: tuple[tuple[str, Any], ...]) -> EvaluateOptions:
    """``base`` with ``items`` replaced, remembered: a loop of ``evaluate`` calls with the same keywords
    checks them once (a few microseconds a call otherwise)."""
    return dataclasses.replace(base, **dict(items))
