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

import numpy as np
import polars as pl

from saltbench.contracts import GRANULARITIES, STATUSES, UNIT_COLUMNS, Granularity, Status
from saltbench.evaluation._alignment import check_scores, dynamic_pairs, strict_pairs
from saltbench.evaluation._comparison import (
    ALIGNMENTS,
    METRIC_KEYS,
    Alignment,
    Comparison,
    compute_metrics,
    count_internal_missing,
    pair_statuses,
)
from saltbench.evaluation._extraction import extract_answer
from saltbench.evaluation._units import (
    DK_CASE_VARIANTS,
    CleanText,
    Spans,
    TaskLike,
    UnitRule,
    check_granularity,
    decompose_clean,
    is_dk,
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


@dataclass(frozen=True)
class _Answer:
    fenced: str
    start: int
    end: int
    clean: CleanText | None


def _prepare(response: str, keyword_filter: bool, require_fence: bool) -> _Answer:
    fenced, start, end = extract_answer(response, keyword_filter=keyword_filter, require_fence=require_fence)
    return _Answer(fenced, start, end, CleanText(fenced, start) if fenced else None)


def _response_units(answer: _Answer, rule: UnitRule, granularity: str) -> tuple[list[str], Spans]:
    if answer.clean is None or not answer.clean.clean:
        return [], ([], [])
    units, clean_spans = decompose_clean(answer.clean.clean, rule, granularity)
    return units, answer.clean.to_response(clean_spans)


def _dk_flags(units: Sequence[str]) -> list[bool]:
    """DK flags of decomposed units. Only the first and last atoms can keep surrounding whitespace (after
    bracket trimming); every other unit is stripped, so a set lookup of the case variants suffices."""
    flags = [u in DK_CASE_VARIANTS for u in units]
    if flags:
        flags[0] = is_dk(units[0])
        flags[-1] = is_dk(units[-1])
    return flags


def _keys(units: list[str], rule: UnitRule, granularity: str) -> list[str]:
    """Comparison keys (``UnitRule.key``) of decomposed units. Only a generation unit can contain a line
    break (``decompose_clean``), so line breaks are normalised there alone."""
    if granularity == "generation":
        return [rule.key(u) for u in units]
    return [u.replace(" ", "") for u in units] if rule.strip_spaces else units


def _align(
    response_units: list[str],
    reference_units: list[str],
    rule: UnitRule,
    granularity: str,
    alignment: str,
    scores: tuple[float, float, float],
) -> tuple[tuple[list[int], list[int]] | None, list[Status]]:
    """Statuses of decomposed units and, for dynamic alignment, the index pairs (``-1`` = gap).

    Strict alignment returns ``None`` for the pairs: they are ``strict_pairs(R, G)``.
    """
    resp_keys = _keys(response_units, rule, granularity)
    ref_keys = _keys(reference_units, rule, granularity)
    resp_dk = _dk_flags(response_units)
    if alignment == "dynamic":
        ridx, gidx = dynamic_pairs(resp_keys, resp_dk, ref_keys, *scores)
        return (ridx, gidx), pair_statuses(ridx, gidx, resp_keys, resp_dk, ref_keys)
    n_resp, n_ref = len(response_units), len(reference_units)
    common = min(n_resp, n_ref)
    statuses: list[Status] = [
        "selective" if dk else ("correct" if rk == gk else "incorrect")
        for dk, rk, gk in zip(resp_dk, resp_keys, ref_keys)
    ]
    statuses += ["redundant"] * (n_resp - common) if n_resp > common else ["missing"] * (n_ref - common)
    return None, statuses


def _check_modes(alignment: str, scores: tuple[float, float, float]) -> None:
    if alignment not in ALIGNMENTS:
        raise ValueError(f"alignment must be one of {ALIGNMENTS}, got {alignment!r}")
    check_scores(*scores)


def _as_text(value: object, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string or None, got {type(value).__name__}")
    return value


def evaluate(
    response: str | None,
    reference: str,
    task: str | TaskLike | UnitRule,
    *,
    variant: str | None = None,
    granularity: Granularity = "atom",
    alignment: Alignment = "strict",
    keyword_filter: bool = True,
    require_fence: bool = False,
    match_score: float = 2,
    mismatch_penalty: float = 1,
    gap_penalty: float = 1,
) -> Evaluation:
    """Evaluate one response against its reference (docs/evaluation.md).

    Args:
        response: the model's full generated text (``None`` counts as empty).
        reference: the reference answer (asterisks removed and stripped before decomposition).
        task: a task slug (resolved with ``saltbench.tasks.get_task(task, variant)``) or any object with
            ``delimiter`` and ``atom_regex`` attributes.
        variant: Code variant / Words subject, used only when ``task`` is a slug.
        granularity: ``atom`` | ``line`` | ``generation``.
        alignment: ``strict`` (positional, the paper default) | ``dynamic`` (Needleman–Wunsch,
            docs/evaluation.md §6).
        keyword_filter: apply the bad-keyword filter during extraction (paper: on).
        require_fence: an unfenced response has no answer (docs/compatibility.md §1.1; paper: off,
            whole text used).
        match_score, mismatch_penalty, gap_penalty: dynamic-alignment scores (docs/evaluation.md §6.1).

    Line breaks ``"\\n"``, ``"\\r\\n"`` and ``"\\r"`` are equivalent (module docstring). Any ``str`` is
    accepted, lone surrogates included (compared as they are).

    Example:
        >>> from types import SimpleNamespace
        >>> dna = SimpleNamespace(delimiter=" ", atom_regex=None)
        >>> ev = evaluate("scratch\\n********\\nTCT AAA\\n********", "TCT CGA", dna)
        >>> [c.status for c in ev.comparisons], ev.metrics["precision"], ev.response_unit_spans
        (['correct', 'incorrect'], 0.5, ((17, 20), (21, 24)))
    """
    check_granularity(granularity)
    scores = (match_score, mismatch_penalty, gap_penalty)
    _check_modes(alignment, scores)
    rule = resolve_task(task, variant)
    response = _as_text(response, "response")
    reference = _as_text(reference, "reference")

    answer = _prepare(response, keyword_filter, require_fence)
    resp_units, (starts, ends) = _response_units(answer, rule, granularity)
    ref_units, _ = decompose_clean(reference.replace("*", "").strip(), rule, granularity, with_spans=False)
    pairs, statuses = _align(resp_units, ref_units, rule, granularity, alignment, scores)
    ridx, gidx = pairs if pairs is not None else strict_pairs(len(resp_units), len(ref_units))
    comparisons = tuple(
        Comparison(
            index=k,
            response_unit=resp_units[ri] if ri >= 0 else None,
            reference_unit=ref_units[gi] if gi >= 0 else None,
            is_correct=status == "correct",
            status=status,
            response_index=ri if ri >= 0 else None,
            reference_index=gi if gi >= 0 else None,
        )
        for k, (ri, gi, status) in enumerate(zip(ridx, gidx, statuses))
    )
    internal = count_internal_missing(statuses, ridx) if alignment == "dynamic" else 0
    return Evaluation(
        granularity=granularity,
        alignment=alignment,
        fenced_response=answer.fenced,
        fence_start=answer.start,
        fence_end=answer.end,
        clean_response=answer.clean.clean if answer.clean is not None else "",
        response_units=tuple(resp_units),
        reference_units=tuple(ref_units),
        response_unit_spans=tuple(zip(starts, ends)),
        comparisons=comparisons,
        metrics=compute_metrics(statuses, len(resp_units), len(ref_units), internal, alignment == "dynamic"),
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
        for name in ("granularity", "unit_index", "status", "response_unit", "reference_unit", "is_correct",
                     "span_start", "span_end")
    },
}  # fmt: skip
"""Columns of the ``evaluate_many`` frame: ``sample_idx`` (position in the input), then the units table's
evaluation columns (:data:`saltbench.contracts.UNIT_COLUMNS`) with the same dtypes."""


def evaluate_many(
    responses: Iterable[str | None],
    references: Iterable[str],
    task: str | TaskLike | UnitRule,
    *,
    variant: str | None = None,
    granularities: Sequence[Granularity] | Granularity = GRANULARITIES,
    alignment: Alignment = "strict",
    keyword_filter: bool = True,
    require_fence: bool = False,
    match_score: float = 2,
    mismatch_penalty: float = 1,
    gap_penalty: float = 1,
) -> pl.DataFrame:
    """Evaluate many responses of one task: one row per (sample, granularity, comparison).

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
    the work is linear in the number of units (dynamic alignment: O(R·G) time per response in numpy rows,
    memory as in :mod:`saltbench.evaluation._alignment`: 2 bits per cell, checkpointed beyond 64 MiB).
    """
    grans: tuple[str, ...] = (granularities,) if isinstance(granularities, str) else tuple(granularities)
    for g in grans:
        check_granularity(g)
    scores = (match_score, mismatch_penalty, gap_penalty)
    _check_modes(alignment, scores)
    rule = resolve_task(task, variant)
    responses = list(responses)
    references = list(references)
    if len(responses) != len(references):
        raise ValueError(
            f"responses and references must have the same length, got {len(responses)} and {len(references)}"
        )

    counts: list[int] = []  # comparisons per (sample, granularity) block
    block_sample: list[int] = []
    block_gran: list[int] = []
    statuses: list[str] = []
    resp_col: list[str | None] = []
    ref_col: list[str | None] = []
    starts: list[int | None] = []
    ends: list[int | None] = []
    gran_code = {g: GRANULARITIES.index(g) for g in grans}

    for sample, (response, reference) in enumerate(zip(responses, references)):
        response_text = _as_text(response, "response")
        answer = _prepare(response_text, keyword_filter, require_fence)
        ref_clean = _as_text(reference, "reference").replace("*", "").strip()
        resp_surrogates = _SURROGATE.search(response_text) is not None
        ref_surrogates = _SURROGATE.search(ref_clean) is not None
        for g in grans:
            resp_units, (span_starts, span_ends) = _response_units(answer, rule, g)
            ref_units, _ = decompose_clean(ref_clean, rule, g, with_spans=False)
            pairs, block_status = _align(resp_units, ref_units, rule, g, alignment, scores)
            n = len(block_status)
            if n == 0:
                continue
            if resp_surrogates:  # statuses above use the original text; the frame stores valid UTF-8
                resp_units = _storable(resp_units)
            if ref_surrogates:
                ref_units = _storable(ref_units)
            counts.append(n)
            block_sample.append(sample)
            block_gran.append(gran_code[g])
            statuses.extend(block_status)
            n_resp, n_ref = len(resp_units), len(ref_units)
            if pairs is None:
                pad_resp = [None] * (n - n_resp)
                resp_col.extend(resp_units)
                resp_col.extend(pad_resp)
                ref_col.extend(ref_units)
                ref_col.extend([None] * (n - n_ref))
                starts.extend(span_starts)
                starts.extend(pad_resp)
                ends.extend(span_ends)
                ends.extend(pad_resp)
            else:
                ridx, gidx = pairs
                resp_col.extend([resp_units[i] if i >= 0 else None for i in ridx])
                ref_col.extend([ref_units[i] if i >= 0 else None for i in gidx])
                starts.extend([span_starts[i] if i >= 0 else None for i in ridx])
                ends.extend([span_ends[i] if i >= 0 else None for i in ridx])

    count_arr = np.asarray(counts, dtype=np.int64)
    total = int(count_arr.sum())
    block_offsets = np.cumsum(count_arr) - count_arr
    status_series = pl.Series("status", statuses, dtype=pl.Enum(STATUSES))
    frame = pl.DataFrame(
        {
            "sample_idx": np.repeat(np.asarray(block_sample, dtype=np.int64), count_arr),
            "granularity": pl.Series(np.repeat(np.asarray(block_gran, dtype=np.uint32), count_arr)),
            "unit_index": (np.arange(total, dtype=np.int64) - np.repeat(block_offsets, count_arr)).astype(
                np.int32
            ),
            "status": status_series,
            "response_unit": pl.Series(resp_col, dtype=pl.String),
            "reference_unit": pl.Series(ref_col, dtype=pl.String),
            "is_correct": status_series == "correct",
            "span_start": pl.Series(starts, dtype=pl.Int64),
            "span_end": pl.Series(ends, dtype=pl.Int64),
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
