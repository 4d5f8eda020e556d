"""Unit-level evaluation of SALT responses (docs/evaluation.md): extraction, units, alignment, statuses,
metrics.

Paper-compatible by default. Selectable fixes: ``keyword_filter=False`` (no bad-keyword filter, §1.2),
``require_fence=True`` (an unfenced response has no answer, §1.1), and unit spans in the original
response for every unit (``Evaluation.response_unit_spans``, the ``span_*`` columns of ``evaluate_many``),
which removes the span/unit mismatch of §1.5 (section numbers of docs/compatibility.md).
"""

from __future__ import annotations

from saltbench.core.vocabulary import ALIGNMENTS, GRANULARITIES, STATUSES, Alignment, Granularity, Status
from saltbench.evaluation._alignment import dynamic_pairs, strict_pairs
from saltbench.evaluation._comparison import METRIC_KEYS, Comparison
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
    strip_fence_markers,
)
from saltbench.evaluation._units import (
    DK_MARKERS,
    TaskLike,
    UnitRule,
    decompose,
    is_dk,
    normalize_unit,
    resolve_task,
)

__all__ = [
    "ALIGNMENTS",
    "BAD_KEYWORDS",
    "DK_MARKERS",
    "GRANULARITIES",
    "METRIC_KEYS",
    "STATUSES",
    "UNITS_SCHEMA",
    "Alignment",
    "Comparison",
    "Evaluation",
    "Granularity",
    "Status",
    "TaskLike",
    "UnitRule",
    "align_units",
    "decompose",
    "dynamic_pairs",
    "evaluate",
    "evaluate_many",
    "extract_answer",
    "is_dk",
    "normalize_unit",
    "passes_keyword_filter",
    "resolve_task",
    "strict_pairs",
    "strip_fence_markers",
    "summarize_units",
]
