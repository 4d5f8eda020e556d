"""Unit-level evaluation of SALT responses (docs/evaluation.md): extraction, units, alignment, statuses,
metrics.

Paper-compatible by default — **not the workflow's defaults**, which score with ``fence_rule="line"``
(``EvaluateOptions.from_scoring`` gives a run's options). Selectable fixes (the fields of
:class:`EvaluateOptions`, keywords of ``evaluate`` and ``evaluate_many``): ``keyword_filter=False`` (no
bad-keyword filter, §1.2), ``require_fence=True`` (an unfenced response has no answer, §1.1),
``fence_rule="line"`` (a fence quoted in prose is none, §1.3), and unit spans in the original response for
every unit (``Evaluation.response_unit_spans``, the ``span_*`` columns of ``evaluate_many``), which removes
the span/unit mismatch of §1.5 (section numbers of docs/compatibility.md). A reasoning model's answer is
looked for after its reasoning only (``reasoning="think"`` or ``"harmony"``; docs/reasoning.md), and
:func:`response_status` says what a response holds (answered, truncated, no fence, error).
:func:`draw_consistency` scores each greedy unit by how often a response's sampled answers repeat it
(docs/confidence.md §7); :func:`unit_ccp` judges a unit's top-k alternatives by the task's own unit
equivalence (claim-conditioned probability, docs/confidence.md §4.6); :func:`second_pass_instruction`,
:func:`parse_verbalized` and :func:`p_true` ask a model about its own answer and read its reply
(docs/confidence.md §8).
"""

from __future__ import annotations

from saltbench.core.vocabulary import ALIGNMENTS, GRANULARITIES, STATUSES, Alignment, Granularity, Status
from saltbench.evaluation._alignment import dynamic_pairs, strict_pairs
from saltbench.evaluation._ccp import CcpTokens, merge_vocabularies, strip_flags, token_vocabulary, unit_ccp
from saltbench.evaluation._comparison import METRIC_KEYS, Comparison
from saltbench.evaluation._consistency import (
    CONSISTENCY_COLUMNS,
    CONSISTENCY_FUNCTIONS,
    EXACT_MATCHER,
    UNIT_VALUE_COLUMNS,
    ExactMatcher,
    UnitMatcher,
    draw_consistency,
)
from saltbench.evaluation._corruption import (
    CODONS,
    CORRUPTION_KINDS,
    AtomCorruptor,
    CorruptionKind,
    corruptor_for,
    near_integer,
)
from saltbench.evaluation._evaluate import (
    UNITS_SCHEMA,
    Evaluation,
    align_units,
    evaluate,
    evaluate_many,
    summarize_units,
)
from saltbench.evaluation._extraction import (
    BAD_KEYWORDS,
    extract_answer,
    passes_keyword_filter,
    response_status,
    strip_fence_markers,
)
from saltbench.evaluation._options import EvaluateKeywords, EvaluateOptions
from saltbench.evaluation._reasoning import final_content
from saltbench.evaluation._second_pass import (
    SECOND_PASS_KINDS,
    SECOND_PASS_STATUSES,
    VERBALIZED_BUDGET,
    SecondPassKind,
    SecondPassStatus,
    p_true,
    parse_verbalized,
    second_pass_instruction,
    spelled_first_ids,
    true_false_ids,
)
from saltbench.evaluation._units import (
    DK_MARKERS,
    TaskLike,
    UnitRule,
    decompose,
    decompose_clean,
    is_dk,
    normalize_unit,
    resolve_task,
)

__all__ = [
    "ALIGNMENTS",
    "CODONS",
    "CORRUPTION_KINDS",
    "AtomCorruptor",
    "CorruptionKind",
    "corruptor_for",
    "near_integer",
    "BAD_KEYWORDS",
    "CONSISTENCY_COLUMNS",
    "CONSISTENCY_FUNCTIONS",
    "DK_MARKERS",
    "EXACT_MATCHER",
    "GRANULARITIES",
    "METRIC_KEYS",
    "SECOND_PASS_KINDS",
    "SECOND_PASS_STATUSES",
    "VERBALIZED_BUDGET",
    "SecondPassKind",
    "SecondPassStatus",
    "p_true",
    "parse_verbalized",
    "second_pass_instruction",
    "spelled_first_ids",
    "true_false_ids",
    "STATUSES",
    "UNITS_SCHEMA",
    "UNIT_VALUE_COLUMNS",
    "Alignment",
    "CcpTokens",
    "Comparison",
    "EvaluateKeywords",
    "EvaluateOptions",
    "Evaluation",
    "ExactMatcher",
    "Granularity",
    "Status",
    "TaskLike",
    "UnitMatcher",
    "UnitRule",
    "align_units",
    "decompose",
    "decompose_clean",
    "draw_consistency",
    "dynamic_pairs",
    "evaluate",
    "evaluate_many",
    "extract_answer",
    "final_content",
    "is_dk",
    "merge_vocabularies",
    "normalize_unit",
    "passes_keyword_filter",
    "resolve_task",
    "response_status",
    "strict_pairs",
    "strip_flags",
    "strip_fence_markers",
    "summarize_units",
    "token_vocabulary",
    "unit_ccp",
]
