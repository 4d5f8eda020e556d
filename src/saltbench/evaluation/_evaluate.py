"""The evaluation pipeline: extraction → clean answer → units (+ spans) → alignment → statuses → metrics.

``evaluate`` handles one response; ``evaluate_many`` runs the same core over many responses and returns one
polars row per comparison; ``summarize_units`` turns such a frame back into per-response metrics.

Span contract (fix of docs/compatibility.md §1.5): every response unit carries the half-open span
``(start, end)`` of its text **in the original response**. Spans are found while decomposing: the
answer region
``response[fence_start:fence_end]`` is cleaned (``*`` removed, stripped) with an offset map kept, units are
cut from the clean text with their clean offsets, and each clean span is mapped back. Hence
``response[start:end].replace("*", "") == unit`` for every unit: asterisks inside a unit lie inside its span,
the fences and surrounding whitespace do not, and a bracket-trimmed first/last atom (``[0`` → ``0``) has a
span shrunk by the trimmed character. The scoring stage can therefore take exactly the tokens overlapping
each evaluator unit, for every task (Logic atoms and multi-line comma lists included).

Line breaks are universal newlines (``"\\n"``, ``"\\r\\n"``, a lone ``"\\r"``; see ``_units``): lines and
atoms are split at any of them with offsets kept, and a generation unit is compared with its line breaks
written ``"\\n"``, while its text and span stay those of the original response. A CRLF rendering of an
answer therefore scores exactly like its LF rendering, and spans still index the original response.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Unpack

import numpy as np
import polars as pl

from saltbench.core.contracts import UNIT_COLUMNS
from saltbench.core.vocabulary import (
    GRANULARITIES,
    STATUSES,
    Alignment,
    Granularity,
    Status,
)
from saltbench.evaluation._alignment import (
    IndexPairs,
    check_scores,
    dynamic_pairs,
    dynamic_pairs_many,
)
from saltbench.evaluation._comparison import (
    METRIC_KEYS,
    Comparison,
    compute_metrics,
    count_internal_missing,
    frozen_instance,
    make_comparisons,
    pair_statuses,
)
from saltbench.evaluation._extraction import Answer, CleanText, find_answer
from saltbench.evaluation._options import EvaluateKeywords, EvaluateOptions, resolve_options
from saltbench.evaluation._units import (
    DK_CASE_VARIANTS,
    TaskLike,
    UnitRule,
    check_granularity,
    decompose_clean,
    is_dk,
    line_key,
    resolve_task,
)


@dataclass(frozen=True)
class Evaluation:
    """Result of evaluating one response against its reference at one granularity.

    Attributes:
        granularity: ``atom``, ``line`` or ``generation``.
        alignment: ``strict`` or ``dynamic``.
        fenced_response: the extracted answer region, fences included (``""`` when there is none).
        fence_start, fence_end: its span in the response (``-1, -1`` when there is none).
        clean_response: the region without ``*``, stripped.
        response_units, reference_units: the decomposed units.
        response_unit_spans: ``(start, end)`` of each response unit in the original response text.
        comparisons: the aligned pairs with their statuses.
        metrics: the docs/evaluation.md §8 dictionary (keys ``METRIC_KEYS``).
    """

    granularity: Granularity
    alignment: Alignment
    fenced_response: str
    fence_start: int
    fence_end: int
    clean_response: str
    response_units: tuple[str, ...]
    reference_units: tuple[str, ...]
    response_unit_spans: tuple[tuple[int, int], ...]
    comparisons: tuple[Comparison, ...]
    metrics: dict[str, float | int | bool] = field(hash=False)


Units = tuple[list[str], list[int], list[int], list[str], list[str], list[bool], list[str]]
"""One response and its reference decomposed at one granularity (docs/evaluation.md §3–4): the response
units, their span starts and ends in the original response (§3.6), the reference units, the response
units' comparison keys (§4.1) and DK flags (§4.2), and the reference units' keys."""


def _clean_reference(reference: object) -> str:
    """The reference's clean text: ``*`` removed, stripped (docs/evaluation.md §3.1); a reference is
    required (``None`` is a ``TypeError``, unlike a response, where it means "no text")."""
    if not isinstance(reference, str):
        raise TypeError(f"reference must be a string, got {type(reference).__name__} {reference!r:.60}")
    return reference.replace("*", "").strip()


def _dk_flags(units: Sequence[str], text: str) -> list[bool]:
    """DK flags (docs/evaluation.md §4.2) of units decomposed from ``text``.

    Every DK marker contains ``k`` or ``K`` (no other character upper-cases to ``K``), so a text without
    either has no DK unit. Only the first and last atoms can keep surrounding whitespace (after bracket
    trimming); every other unit is stripped, so a set lookup of the case variants suffices.
    """
    if "k" not in text and "K" not in text:
        return [False] * len(units)
    flags = [u in DK_CASE_VARIANTS for u in units]
    if flags:
        flags[0] = is_dk(units[0])
        flags[-1] = is_dk(units[-1])
    return flags


def _keys(units: list[str], rule: UnitRule, granularity: str, text: str) -> list[str]:
    """Comparison keys (``UnitRule.key``) of units decomposed from ``text``. Only a generation unit can
    contain a line break (``decompose_clean``), so line breaks are normalised there alone, and only when
    ``text`` has a ``"\\r"``."""
    keys = [u.replace(" ", "") for u in units] if rule.strip_spaces else units
    return [line_key(k) for k in keys] if granularity == "generation" and "\r" in text else keys


def _units(clean: CleanText | None, reference: str, rule: UnitRule, granularity: str) -> Units:
    """Decompose an answer (its :class:`CleanText`, ``None`` when there is none) and a clean reference."""
    if clean is None or not clean.clean:
        response: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        dk: list[bool] = []
    else:
        shift = clean.shift
        if shift is not None:  # spans in response coordinates directly
            response, (starts, ends) = decompose_clean(clean.clean, rule, granularity, offset=shift)
        else:
            response, clean_spans = decompose_clean(clean.clean, rule, granularity)
            starts, ends = clean.to_response(clean_spans)
        dk = _dk_flags(response, clean.clean)
    ref_units, _ = decompose_clean(reference, rule, granularity, with_spans=False)
    if not rule.strip_spaces and granularity != "generation":  # the units are their own keys
        return response, starts, ends, ref_units, response, dk, ref_units
    return (
        response,
        starts,
        ends,
        ref_units,
        _keys(response, rule, granularity, clean.clean if clean is not None else ""),
        dk,
        _keys(ref_units, rule, granularity, reference),
    )


def _strict_statuses(
    response_keys: list[str], response_dk: list[bool], reference_keys: list[str]
) -> list[Status]:
    """Statuses of the positional pairs (docs/evaluation.md §5, §7)."""
    if any(response_dk):
        statuses: list[Status] = [
            "selective" if dk else ("correct" if rk == gk else "incorrect")
            for dk, rk, gk in zip(response_dk, response_keys, reference_keys)
        ]
    else:
        statuses = ["correct" if rk == gk else "incorrect" for rk, gk in zip(response_keys, reference_keys)]
    surplus = len(response_keys) - len(reference_keys)
    if surplus:
        statuses += ["redundant"] * surplus if surplus > 0 else ["missing"] * -surplus
    return statuses


def _as_text(value: object, name: str) -> str:
    """``value`` itself when it is a string, ``""`` for ``None``; a ``TypeError`` otherwise."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    raise TypeError(f"{name} must be a string or None, got {type(value).__name__}")


def _find_answer(response: object, opts: EvaluateOptions) -> Answer:
    """:func:`find_answer` of ``response`` (``None``: empty) with the extraction options of ``opts``."""
    text = _as_text(response, "response")
    return find_answer(text, opts.keyword_filter, opts.require_fence, opts.reasoning, opts.fence_rule)


def evaluate(
    response: str | None,
    reference: str,
    task: str | TaskLike | UnitRule,
    *,
    variant: str | None = None,
    granularity: Granularity = "atom",
    options: EvaluateOptions | None = None,
    **keywords: Unpack[EvaluateKeywords],
) -> Evaluation:
    """Evaluate one response against its reference (docs/evaluation.md).

    **The defaults are the authors' rules, not the workflow's:** the fence rule here is ``positional``
    (paper-compatible, as this API promises), while the workflow scores with ``scoring.fence_rule: line``
    (docs/compatibility.md §1.3). To get the units a run scored, pass its options:
    ``options=EvaluateOptions.from_scoring(config["scoring"], reasoning=...)`` (or ``fence_rule="line"``).

    Args:
        response: the model's full generated text (``None`` counts as empty).
        reference: the reference answer (asterisks removed and stripped before decomposition).
        task: a task slug (resolved with ``saltbench.tasks.get_task(task, variant)``) or any object with
            ``delimiter`` and ``atom_regex`` attributes.
        variant: Code variant / Words subject, used only when ``task`` is a slug.
        granularity: ``atom`` | ``line`` | ``generation``.
        options: how to evaluate (:class:`EvaluateOptions`: alignment, keyword filter, required fence,
            dynamic-alignment scores, reasoning format, fence rule); default ``EvaluateOptions()``.
        **keywords: any field of :class:`EvaluateOptions` (``alignment="dynamic"``, ``keyword_filter``,
            ``require_fence``, ``match_score``, ``mismatch_penalty``, ``gap_penalty``, ``reasoning``,
            ``fence_rule``), applied over ``options``.

    Line breaks ``"\\n"``, ``"\\r\\n"`` and ``"\\r"`` are equivalent (module docstring). Any ``str`` is
    accepted, lone surrogates included (compared as they are).

    Example:
        >>> from types import SimpleNamespace
        >>> dna = SimpleNamespace(delimiter=" ", atom_regex=None)
        >>> ev = evaluate("scratch\\n********\\nTCT AAA\\n********", "TCT CGA", dna)
        >>> [c.status for c in ev.comparisons], ev.metrics["precision"], ev.response_unit_spans
        (['correct', 'incorrect'], 0.5, ((17, 20), (21, 24)))
    """
    opts = resolve_options(options, keywords, "evaluate")
    if granularity not in GRANULARITIES:
        check_granularity(granularity)
    rule = resolve_task(task, variant)
    answer = _find_answer(response, opts)
    units = _units(answer[3], _clean_reference(reference), rule, granularity)
    return _evaluation(answer, units, granularity, opts.alignment, opts.scores)


def _evaluation(
    answer: Answer,
    units: Units,
    granularity: Granularity,
    alignment: Alignment,
    scores: tuple[float, float, float],
) -> Evaluation:
    """Align an extracted answer's decomposed units (strict: by position; dynamic: Needleman–Wunsch with
    ``scores``) and give their :class:`Evaluation`: statuses and metrics (docs/evaluation.md §5–8)."""
    fenced, fence_start, fence_end, clean = answer
    response_units, starts, ends, reference_units, response_keys, response_dk, reference_keys = units
    dynamic = alignment == "dynamic"
    if dynamic:
        response_indices, reference_indices = dynamic_pairs(
            response_keys, response_dk, reference_keys, *scores
        )
        pairs: IndexPairs | None = (response_indices, reference_indices)
        statuses = pair_statuses(
            response_indices, reference_indices, response_keys, response_dk, reference_keys
        )
        internal_missing = count_internal_missing(statuses, response_indices)
    else:
        pairs = None  # positional
        statuses = _strict_statuses(response_keys, response_dk, reference_keys)
        internal_missing = 0
    return frozen_instance(
        Evaluation,
        {
            "granularity": granularity,
            "alignment": alignment,
            "fenced_response": fenced,
            "fence_start": fence_start,
            "fence_end": fence_end,
            "clean_response": clean.clean if clean is not None else "",
            "response_units": tuple(response_units),
            "reference_units": tuple(reference_units),
            "response_unit_spans": tuple(zip(starts, ends)),
            "comparisons": make_comparisons(response_units, reference_units, statuses, pairs),
            "metrics": compute_metrics(
                statuses, len(response_units), len(reference_units), internal_missing, dynamic
            ),
        },
    )


def align_units(
    response_units: Sequence[str],
    reference_units: Sequence[str],
    task: str | TaskLike | UnitRule,
    match_score: float = 2,
    mismatch_penalty: float = 1,
    gap_penalty: float = 1,
) -> list[tuple[str | None, str | None]]:
    """Dynamic alignment (docs/evaluation.md §6) as ``(response_unit | None, reference_unit | None)`` pairs.

    Units are compared in normalised form (``normalize_unit``); a DK response unit never matches.

    Example:
        >>> from types import SimpleNamespace
        >>> align_units(["A", "A"], ["A"], SimpleNamespace(delimiter=" ", atom_regex=None))
        [('A', None), ('A', 'A')]
    """
    check_scores(match_score, mismatch_penalty, gap_penalty)
    rule = resolve_task(task)
    clean = [u.replace("*", "").strip() for u in response_units]
    ridx, gidx = dynamic_pairs(
        [rule.key(u) for u in clean],
        [is_dk(u) for u in clean],
        [rule.key(u.replace("*", "").strip()) for u in reference_units],
        match_score,
        mismatch_penalty,
        gap_penalty,
    )
    return [
        (response_units[ri] if ri >= 0 else None, reference_units[gi] if gi >= 0 else None)
        for ri, gi in zip(ridx, gidx)
    ]


_SURROGATE = re.compile("[\ud800-\udfff]")
_REPLACEMENT = "\ufffd"


def _storable(units: list[str]) -> list[str]:
    """Units with every surrogate code point (U+D800–U+DFFF) replaced by U+FFFD, one for one (polars stores
    only valid UTF-8, which cannot encode a surrogate)."""
    return [_SURROGATE.sub(_REPLACEMENT, u) for u in units]


UNITS_SCHEMA: dict[str, pl.DataType] = {
    "sample_idx": pl.Int64(),
    **{
        name: UNIT_COLUMNS[name]
        for name in (
            "granularity",
            "unit_index",
            "status",
            "response_unit",
            "reference_unit",
            "is_correct",
            "span_start",
            "span_end",
        )
    },
}
"""Columns of the ``evaluate_many`` frame: ``sample_idx`` (position in the input), then the units table's
evaluation columns (:data:`saltbench.core.contracts.UNIT_COLUMNS`) with the same dtypes."""


def evaluate_many(
    responses: Iterable[str | None],
    references: Iterable[str],
    task: str | TaskLike | UnitRule,
    *,
    variant: str | None = None,
    granularities: Sequence[Granularity] | Granularity = GRANULARITIES,
    options: EvaluateOptions | None = None,
    **keywords: Unpack[EvaluateKeywords],
) -> pl.DataFrame:
    """Evaluate many responses of one task: one row per (sample, granularity, comparison).

    ``options`` and ``**keywords`` are :func:`evaluate`'s (:class:`EvaluateOptions`, the same defaults:
    **the authors' fence rule, not the workflow's** — ``EvaluateOptions.from_scoring`` gives a run's).

    Rows are ordered by ``sample_idx`` (position in ``responses``), then granularity in the order given, then
    ``unit_index`` (the comparison index). Columns: :data:`UNITS_SCHEMA`; ``span_start``/``span_end`` are the
    response unit's span in the original response (null for missing units). A (sample, granularity) with
    no units on either side has no rows. Per-response metrics: :func:`summarize_units`.

    Statuses, spans and metrics are those of :func:`evaluate` on the same arguments, for any ``str`` input.
    The one difference is in the text columns: polars stores valid UTF-8 only, so in ``response_unit`` and
    ``reference_unit`` every surrogate code point (U+D800–U+DFFF, e.g. a lone ``"\\ud800"``, which has no
    UTF-8 encoding) is written as U+FFFD, one character for one; the comparison itself uses the original
    text, exactly as ``evaluate`` does (so ``"\\ud800"`` and ``"\\udc00"`` stay different units).

    The extraction and clean-offset map are computed once per response and shared by all granularities;
    the work is linear in the number of units. Dynamic alignment (O(R·G) time per response) runs once per
    granularity for all responses (:func:`saltbench.evaluation._alignment.dynamic_pairs_many`): tiny tables
    memoised by their pattern of matches, the others filled by a compiled kernel in batches, large ones on
    their own with the memory bounds of :mod:`saltbench.evaluation._alignment`.
    """
    grans: tuple[str, ...] = (granularities,) if isinstance(granularities, str) else tuple(granularities)
    opts = resolve_options(options, keywords, "evaluate_many")
    for granularity in grans:
        check_granularity(granularity)
    rule = resolve_task(task, variant)
    responses = list(responses)
    references = list(references)
    if len(responses) != len(references):
        raise ValueError(
            f"responses and references must have the same length, got {len(responses)} and {len(references)}"
        )
    codes = [GRANULARITIES.index(g) for g in grans]
    columns = _Columns()
    for first in range(0, len(responses), CHUNK):  # a chunk's units are held until its rows are written
        cleans = [_find_answer(r, opts)[3] for r in responses[first : first + CHUNK]]
        ref_cleans = [_clean_reference(r) for r in references[first : first + CHUNK]]
        by_granularity = [
            _granularity_blocks(cleans, ref_cleans, rule, g, opts.alignment == "dynamic", opts.scores)
            for g in grans
        ]
        for sample, (clean, ref_clean) in enumerate(zip(cleans, ref_cleans), start=first):
            resp_surrogates = clean is not None and _has_surrogate(clean.clean)
            ref_surrogates = _has_surrogate(ref_clean)
            for code, blocks in zip(codes, by_granularity):
                units, pairs, statuses = blocks[sample - first]
                if statuses:
                    columns.add(sample, code, units, pairs, statuses, resp_surrogates, ref_surrogates)
    return columns.frame()


CHUNK = 256
"""Responses decomposed and aligned together by ``evaluate_many`` (one batch of dynamic alignment per
granularity); their units are held only until the chunk's rows are written."""


_Block = tuple[Units, IndexPairs | None, list[Status]]
"""One (sample, granularity): its units, the dynamic index pairs (``None``: strict), the statuses."""


def _granularity_blocks(
    cleans: list[CleanText | None],
    ref_cleans: list[str],
    rule: UnitRule,
    granularity: str,
    dynamic: bool,
    scores: tuple[float, float, float],
) -> list[_Block]:
    """Every sample's block at one granularity; dynamic alignment runs once for all samples
    (:func:`dynamic_pairs_many`: memoised tiny tables, batched compiled row filling)."""
    units = [_units(clean, ref, rule, granularity) for clean, ref in zip(cleans, ref_cleans)]
    if not dynamic:
        return [(u, None, _strict_statuses(u[4], u[5], u[6])) for u in units]
    pairs = dynamic_pairs_many(((u[4], u[5], u[6]) for u in units), *scores)
    return [(u, p, pair_statuses(*p, u[4], u[5], u[6])) for u, p in zip(units, pairs)]


def _has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (an ASCII text cannot)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


class _Columns:
    """The columns of the ``evaluate_many`` frame, block by block."""

    def __init__(self) -> None:
        self.counts: list[int] = []  # comparisons per (sample, granularity) block
        self.block_sample: list[int] = []
        self.block_gran: list[int] = []
        self.statuses: list[str] = []
        self.resp: list[str | None] = []
        self.ref: list[str | None] = []
        self.starts: list[int | None] = []
        self.ends: list[int | None] = []

    def add(
        self,
        sample: int,
        granularity_code: int,
        units: Units,
        pairs: IndexPairs | None,
        statuses: list[Status],
        resp_surrogates: bool,
        ref_surrogates: bool,
    ) -> None:
        """Append one block's rows: strict pairs are positional (``pairs is None``), dynamic ones indexed."""
        resp_units, starts, ends, ref_units = units[:4]
        n = len(statuses)
        self.counts.append(n)
        self.block_sample.append(sample)
        self.block_gran.append(granularity_code)
        self.statuses.extend(statuses)
        # statuses above use the original text; the frame stores valid UTF-8
        if resp_surrogates:
            resp_units = _storable(resp_units)
        if ref_surrogates:
            ref_units = _storable(ref_units)
        if pairs is None:
            pad_resp = [None] * (n - len(resp_units))
            self.resp.extend(resp_units)
            self.resp.extend(pad_resp)
            self.ref.extend(ref_units)
            self.ref.extend([None] * (n - len(ref_units)))
            self.starts.extend(starts)
            self.starts.extend(pad_resp)
            self.ends.extend(ends)
            self.ends.extend(pad_resp)
        else:
            ridx, gidx = pairs
            self.resp.extend([resp_units[i] if i >= 0 else None for i in ridx])
            self.ref.extend([ref_units[i] if i >= 0 else None for i in gidx])
            self.starts.extend([starts[i] if i >= 0 else None for i in ridx])
            self.ends.extend([ends[i] if i >= 0 else None for i in ridx])

    def frame(self) -> pl.DataFrame:
        """The frame of :data:`UNITS_SCHEMA`, rows in the order the blocks were added."""
        count_arr = np.asarray(self.counts, dtype=np.int64)
        total = int(count_arr.sum())
        block_offsets = np.cumsum(count_arr) - count_arr
        status_series = pl.Series("status", self.statuses, dtype=pl.Enum(STATUSES))
        frame = pl.DataFrame(
            {
                "sample_idx": np.repeat(np.asarray(self.block_sample, dtype=np.int64), count_arr),
                "granularity": pl.Series(np.repeat(np.asarray(self.block_gran, dtype=np.uint32), count_arr)),
                "unit_index": (np.arange(total, dtype=np.int64) - np.repeat(block_offsets, count_arr)).astype(
                    np.int32
                ),
                "status": status_series,
                "response_unit": pl.Series(self.resp, dtype=pl.String),
                "reference_unit": pl.Series(self.ref, dtype=pl.String),
                "is_correct": status_series == "correct",
                "span_start": pl.Series(self.starts, dtype=pl.Int64),
                "span_end": pl.Series(self.ends, dtype=pl.Int64),
            }
        )
        gran_names = pl.Series(GRANULARITIES, dtype=pl.Enum(GRANULARITIES))
        return frame.with_columns(granularity=gran_names.gather(frame["granularity"])).select(
            [pl.col(c).cast(t) for c, t in UNITS_SCHEMA.items()]
        )


def summarize_units(units: pl.DataFrame, *, dynamic_alignment: bool = False) -> pl.DataFrame:
    """Per-response metrics from an ``evaluate_many`` frame: one row per (sample_idx, granularity).

    Columns: ``sample_idx``, ``granularity`` and every metric key of docs/evaluation.md §8 (same values as
    ``evaluate(...).metrics``); ``dynamic_alignment`` is the value passed here. Responses with no row at a
    granularity (empty answer and empty reference) are absent.
    """
    keys = ["sample_idx", "granularity"]
    has_resp = pl.col("response_unit").is_not_null().cast(pl.Int64)
    later_resp = has_resp.reverse().cum_sum().reverse().over(keys, order_by="unit_index") - has_resp
    status = pl.col("status")
    counted = units.with_columns(
        internal=((status == "missing") & (later_resp > 0)) if dynamic_alignment else pl.lit(False)
    )

    def n(name: str) -> pl.Expr:
        return (status == name).sum().cast(pl.Int64)

    agg = counted.group_by(keys, maintain_order=True).agg(
        num_response_units=pl.col("response_unit").is_not_null().sum().cast(pl.Int64),
        num_reference_units=pl.col("reference_unit").is_not_null().sum().cast(pl.Int64),
        num_correct=n("correct"),
        num_missing=n("missing"),
        num_internal_missing=pl.col("internal").sum().cast(pl.Int64),
        num_redundant=n("redundant"),
        num_selective=n("selective"),
        num_incorrect=n("incorrect"),
    )

    def ratio(num: pl.Expr, den: pl.Expr) -> pl.Expr:
        return pl.when(den != 0).then(num / den).otherwise(0.0)

    c, g, s, x = (pl.col(k) for k in ("num_correct", "num_reference_units", "num_selective", "num_redundant"))
    present = c + pl.col("num_incorrect") + s
    precision_units = pl.col("num_response_units") + pl.col("num_internal_missing")
    return agg.with_columns(
        num_precision_units=precision_units,
        num_extra=x,
        num_present_aligned_slots=present,
        dynamic_alignment=pl.lit(dynamic_alignment),
        precision=ratio(c, precision_units),
        recall=ratio(c, g),
        slot_coverage=ratio(present, g),
        coverage=ratio(present, g),
        accuracy=ratio(c, g - s),
        accuracy_include_extra=ratio(c, g - s + x),
        hallucination_score=ratio(x, g),
    ).select([*keys, *METRIC_KEYS])
