"""Running interventions on a model and measuring the next atoms (one row per intervention).

Per sample: the prompt is rendered exactly as in the inference stage (task prompt → chat template) and
encoded **once** (:func:`saltbench.inference.encode_prompt_cache`); its key/value cache is copied into
every batch of answer prefixes. Identical prefixes (e.g. ``local`` and ``distant`` when ``c = k - 1``)
run once. For each prefix, in one batched pass (:func:`~saltbench.inference.hf.forced.force_and_continue`):

1. the prefix and the *target* (the separator and the reference atom ``a_k``) are teacher-forced, and
   the model continues greedily from the prefix (the target masked out) until the scored atoms
   ``k .. k+m'-1`` are complete (a further atom has begun or a fence was written; ``finish_reason``
   ``stop``), until EOS (``eos``), or for at most ``max_new_tokens`` (``length``);
2. the answer ``prefix + continuation`` (cut after the first fence the continuation writes) is evaluated
   with the evaluator (fence required, no keyword filter: the answer region is known), strict
   positional alignment against the reference; ``next_correct`` = status of atom ``k`` is ``correct``;
   ``next_m_accuracy`` = share of ``correct`` among atoms ``k .. k+m'-1``, ``m' = min(m, n-k+1)``;
3. the confidence of atom ``k``: every confidence function over the continuation tokens overlapping the
   evaluator's span of atom ``k`` (the straddling rule of the scoring stage), with the ``topk`` flavour
   (renormalised top-20, the paper's; columns ``topk.{name}``, ``next_confidence`` =
   ``topk.mean_probability``) and the ``full`` flavour (``full.{name}``), named as in the units table
   (:func:`saltbench.core.contracts.confidence_column`); NaN when the model wrote no atom ``k``;
4. ``tf_logprob_correct`` = ``Σ log p(t)`` over the target tokens overlapping ``a_k`` (full-vocabulary
   log-probabilities, teacher-forced right after the prefix); ``tf_logprob_with_gap`` = the sum over all
   target tokens (separator included).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from saltbench.confidence import PAPER_CONFIDENCE_NAMES, scored_columns
from saltbench.core.contracts import INTERVENTION_COLUMNS, confidence_column
from saltbench.core.vocabulary import FLAVOURS, Boundary
from saltbench.evaluation import Evaluation, UnitRule, decompose, evaluate, resolve_task
from saltbench.inference.backends import LoadedModel, LoadSettings, load_backend
from saltbench.interventions import (
    AnswerLayout,
    InterventionOptions,
    InterventionSpec,
    RenderedPrefix,
    corruptor_for,
    plan_sample,
    render_prefix,
)
from saltbench.stages.generation import build_prompts
from saltbench.stages.scoring import confidence_columns, token_unit_pairs

if TYPE_CHECKING:
    from saltbench.inference.base import ForcedContinuation, StopRule

log = logging.getLogger(__name__)

_FENCE_TOKEN = re.compile(r"\*{4,}")

CONFIDENCE_COLUMNS: tuple[str, ...] = tuple(
    confidence_column(f, n) for f, n in scored_columns(PAPER_CONFIDENCE_NAMES, FLAVOURS)
)
"""The confidence columns of an intervention row: the paper's nine in both flavours, of the next atom."""

INTERVENTION_FILE_COLUMNS: dict[str, pl.DataType] = {
    **INTERVENTION_COLUMNS,
    **{name: pl.Float64() for name in CONFIDENCE_COLUMNS},
}
"""Columns of ``data/interventions/{model}/{task}.parquet`` (one row per intervention), in order
(:data:`saltbench.core.contracts.INTERVENTIONS`)."""


@dataclass(frozen=True)
class SampleRun:
    """Settings shared by every intervention of one run (see :func:`run_sample`).

    ``early_stop=False`` always decodes ``max_new_tokens`` (or up to EOS).
    """

    next_atoms: int = 3
    max_new_tokens: int | None = None
    boundary: Boundary = "token"
    batch_size: int = 16
    top_k: int = 20
    reuse_cache: bool = True
    max_context: int | None = None
    early_stop: bool = True


def auto_budget(rendered: Sequence[RenderedPrefix]) -> int:
    """Automatic greedy budget: ``2 × max(reference tokens of the next m atoms) + 8``."""
    return 2 * max((r.budget_tokens for r in rendered), default=0) + 8


def _confidences(
    generations: Sequence[Any], spans: Sequence[tuple[int, int] | None], top_k: int
) -> dict[str, np.ndarray]:
    """Every confidence function (both flavours) of one span per generation (NaN where ``None``)."""
    n_rows = len(generations)
    base = np.cumsum([0] + [g.num_generated_tokens for g in generations])
    token_parts, row_parts = [], []
    for row, (generation, span) in enumerate(zip(generations, spans)):
        if span is None or generation.num_generated_tokens == 0:
            continue
        tokens, _ = token_unit_pairs(
            generation.token_offsets, len(generation.text), np.array([span[0]]), np.array([span[1]])
        )
        token_parts.append(tokens + base[row])
        row_parts.append(np.full(tokens.size, row, dtype=np.int64))
    token_index = np.concatenate(token_parts) if token_parts else np.zeros(0, np.int64)
    row_index = np.concatenate(row_parts) if row_parts else np.zeros(0, np.int64)
    if base[-1] == 0:
        nan = np.full(n_rows, np.nan)
        return {"n_tokens": np.zeros(n_rows, np.int64), **{name: nan for name in CONFIDENCE_COLUMNS}}
    token_table = {
        "token_ids": np.concatenate([g.token_ids for g in generations]).astype(np.int64),
        "chosen": np.concatenate([g.chosen_logprobs for g in generations]).astype(np.float64),
        "topk": np.concatenate([g.topk_logprobs for g in generations]),
        "topk_ids": np.concatenate([g.topk_ids for g in generations]),
        "entropy": np.concatenate([g.entropy for g in generations]).astype(np.float64),
    }
    return confidence_columns(token_table, token_index, row_index, n_rows, flavours=FLAVOURS, top_k=top_k)


def _stop_rule(tokenizer: Any, rule: UnitRule, prefixes: Sequence[str], wanted: Sequence[int]) -> StopRule:
    """Row ``r`` is done once ``prefix_r + continuation`` has ``wanted[r]`` atoms (atom ``k+m'-1`` is then
    followed by the start of another one, so it is complete) or the continuation wrote a fence."""

    def stop(row: int, ids: Sequence[int]) -> bool:
        text = tokenizer.decode(list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return bool(_FENCE_TOKEN.search(text)) or len(decompose(prefixes[row] + text, rule)) >= wanted[row]

    return stop


def _scored_atoms(next_atoms: int, n_atoms: int, position: int) -> int:
    """``m' = min(m, n - k + 1)``: the atoms scored after the prefix of an intervention at ``position``."""
    return min(next_atoms, n_atoms - position + 1)


def _fitting(
    rendered: Sequence[RenderedPrefix], *, prompt_tokens: int, budget: int, max_context: int | None
) -> list[int]:
    """Indices of the prefixes whose prompt + prefix + target + budget fit ``max_context`` (all when
    ``None``); the others are dropped with a warning."""
    if max_context is None:
        return list(range(len(rendered)))
    room = max_context - prompt_tokens - budget
    keep = [
        index
        for index, prefix in enumerate(rendered)
        if len(prefix.token_ids) + len(prefix.target_ids) <= room
    ]
    if len(keep) < len(rendered):
        log.warning(
            "%d of %d interventions exceed max_context %d (prompt %d + budget %d tokens); dropped",
            len(rendered) - len(keep),
            len(rendered),
            max_context,
            prompt_tokens,
            budget,
        )
    return keep


_PrefixKey = tuple[tuple[int, ...], tuple[int, ...]]
"""A distinct run: the prefix tokens and the target tokens."""


def _continue_prefixes(
    model: LoadedModel,
    prompt_ids: Sequence[int],
    runs: Sequence[_PrefixKey],
    representatives: Sequence[tuple[InterventionSpec, RenderedPrefix]],
    *,
    unit_rule: UnitRule,
    n_atoms: int,
    budget: int,
    run: SampleRun,
) -> list[ForcedContinuation]:
    """One forced pass per distinct run, in batches (all at once on a continuously batching backend).

    ``representatives[j]`` is the first intervention of ``runs[j]``; with ``run.early_stop`` a row stops
    once its scored atoms are complete (:func:`_stop_rule`)."""
    cache = model.prompt_cache(prompt_ids) if run.reuse_cache else None
    group_size = len(runs) if model.continuous_batching else run.batch_size
    continuations: list[ForcedContinuation] = []
    for start in range(0, len(runs), group_size):
        group = runs[start : start + group_size]
        members = representatives[start : start + group_size]
        stop = None
        if run.early_stop:
            stop = _stop_rule(
                model.tokenizer,
                unit_rule,
                [prefix.text for _, prefix in members],
                [
                    spec.position + _scored_atoms(run.next_atoms, n_atoms, spec.position)
                    for spec, _ in members
                ],
            )
        continuations.extend(
            model.force_and_continue(prompt_ids, group, max_new_tokens=budget, cache=cache, stop=stop)
        )
    return continuations


@dataclass(frozen=True)
class _Answer:
    """The evaluated answer of one run: prefix + continuation (cut after the first fence it writes)."""

    evaluation: Evaluation
    continuation: str
    next_span: tuple[int, int] | None
    """Atom ``k`` in continuation coordinates; ``None`` when the model wrote no atom ``k``."""


def _evaluate_answer(
    prefix: RenderedPrefix, position: int, generated: str, *, reference: str, task: str, variant: str | None
) -> _Answer:
    """Evaluate ``prefix + generated`` (fence required, no keyword filter) and locate atom ``position``."""
    fence = _FENCE_TOKEN.search(generated)
    continuation = generated[: fence.end()] if fence else generated
    evaluation = evaluate(
        prefix.text + continuation, reference, task, variant=variant, keyword_filter=False, require_fence=True
    )
    span = None
    if len(evaluation.response_unit_spans) >= position:
        start, end = evaluation.response_unit_spans[position - 1]
        start, end = max(start - len(prefix.text), 0), end - len(prefix.text)
        span = (start, end) if end > start else None
    return _Answer(evaluation, continuation, span)


@dataclass(frozen=True)
class _InterventionRow:
    """One measured intervention: the columns of :data:`INTERVENTION_FILE_COLUMNS` except ``model, task,
    sample_id, variant``, in file order (``confidences`` expands into :data:`CONFIDENCE_COLUMNS`)."""

    n_atoms: int
    position: int
    position_fraction: float
    n_corrupted: int
    corrupted_fraction: float
    placement: str
    corrupted_positions: list[int]
    corrupted_atoms: list[str]
    next_m: int
    next_correct: bool
    next_m_accuracy: float
    next_status: str
    next_atom: str | None
    reference_atom: str
    prefix_intact: bool
    next_confidence: float
    next_n_tokens: int
    confidences: dict[str, float]
    tf_logprob_correct: float
    tf_logprob_with_gap: float
    tf_n_tokens: int
    prefix_tokens: int
    canonical_cut: bool
    prefix: str
    continuation: str
    finish_reason: str

    def as_dict(self) -> dict[str, Any]:
        """The row as :func:`run_sample` returns it."""
        row: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name == "confidences":
                row.update(value)
            else:
                row[field.name] = value
        return row


def _intervention_row(
    spec: InterventionSpec,
    corrupted: AnswerLayout,
    prefix: RenderedPrefix,
    *,
    reference: AnswerLayout,
    answer: _Answer,
    continuation: ForcedContinuation,
    confidences: dict[str, float],
    next_tokens: int,
    next_atoms: int,
) -> _InterventionRow:
    """The row of one intervention from the answer and the forced pass of its run."""
    n_atoms, position = reference.n_atoms, spec.position
    statuses = [comparison.status for comparison in answer.evaluation.comparisons]
    units = answer.evaluation.response_units
    scored = _scored_atoms(next_atoms, n_atoms, position)
    window = statuses[position - 1 : position - 1 + scored]
    mask = np.asarray(prefix.target_atom_mask, dtype=bool)
    target_logprobs = continuation.target_logprobs
    return _InterventionRow(
        n_atoms=n_atoms,
        position=position,
        position_fraction=position / n_atoms,
        n_corrupted=spec.n_corrupted,
        corrupted_fraction=spec.n_corrupted / (position - 1),
        placement=spec.placement,
        corrupted_positions=list(spec.corrupted_positions),
        corrupted_atoms=list(spec.corrupted_atoms),
        next_m=scored,
        next_correct=bool(window) and window[0] == "correct",
        next_m_accuracy=sum(status == "correct" for status in window) / scored,
        next_status=statuses[position - 1] if len(statuses) >= position else "missing",
        next_atom=units[position - 1] if len(units) >= position else None,
        reference_atom=reference.atoms[position - 1],
        prefix_intact=tuple(units[: position - 1]) == corrupted.atoms[: position - 1],
        next_confidence=confidences[confidence_column("topk", "mean_probability")],
        next_n_tokens=next_tokens,
        confidences=confidences,
        tf_logprob_correct=float(target_logprobs[mask].sum())
        if mask.size == target_logprobs.size and mask.any()
        else math.nan,
        tf_logprob_with_gap=float(target_logprobs.sum()) if target_logprobs.size else math.nan,
        tf_n_tokens=int(mask.sum()),
        prefix_tokens=len(prefix.token_ids),
        canonical_cut=prefix.canonical_cut,
        prefix=prefix.text,
        continuation=answer.continuation,
        finish_reason=continuation.finish_reason,
    )


def _render(
    layout: AnswerLayout, specs: Sequence[InterventionSpec], tokenizer: Any, run: SampleRun
) -> tuple[list[AnswerLayout], list[RenderedPrefix]]:
    """Per intervention: the corrupted answer layout and its rendered prefix and target."""
    layouts = [layout.substitute(spec.replacements) for spec in specs]
    rendered = [
        render_prefix(
            corrupted, spec.position, tokenizer=tokenizer, boundary=run.boundary, next_atoms=run.next_atoms
        )
        for corrupted, spec in zip(layouts, specs)
    ]
    return layouts, rendered


def _measure(
    model: LoadedModel,
    prompt_ids: Sequence[int],
    runs: Sequence[_PrefixKey],
    representatives: Sequence[tuple[InterventionSpec, RenderedPrefix]],
    *,
    task: str,
    variant: str | None,
    reference: str,
    n_atoms: int,
    budget: int,
    run: SampleRun,
) -> tuple[list[ForcedContinuation], list[_Answer], dict[str, np.ndarray]]:
    """Per distinct run: the forced pass, the evaluated answer, and the confidences of atom ``k``."""
    continuations = _continue_prefixes(
        model,
        prompt_ids,
        runs,
        representatives,
        unit_rule=resolve_task(task, variant),
        n_atoms=n_atoms,
        budget=budget,
        run=run,
    )
    answers = [
        _evaluate_answer(
            prefix, spec.position, forced.generation.text, reference=reference, task=task, variant=variant
        )
        for (spec, prefix), forced in zip(representatives, continuations)
    ]
    confidences = _confidences(
        [forced.generation for forced in continuations], [answer.next_span for answer in answers], run.top_k
    )
    return continuations, answers, confidences


def run_sample(
    model: LoadedModel,
    prompt_ids: Sequence[int],
    layout: AnswerLayout,
    specs: Sequence[InterventionSpec],
    *,
    task: str,
    variant: str | None,
    reference: str,
    run: SampleRun = SampleRun(),
) -> list[dict[str, Any]]:
    """Measure the interventions ``specs`` of one sample (module docstring): one dict per spec, in order.

    ``prompt_ids`` is the rendered, tokenised prompt the answer prefix is appended to. Interventions that
    would exceed ``run.max_context`` (prompt + prefix + target + budget) are dropped with a warning.
    The dicts hold every column of :data:`INTERVENTION_FILE_COLUMNS` except ``model, task, sample_id,
    variant``.
    """
    layouts, rendered = _render(layout, specs, model.tokenizer, run)
    budget = run.max_new_tokens or auto_budget(rendered)
    keep = _fitting(rendered, prompt_tokens=len(prompt_ids), budget=budget, max_context=run.max_context)
    if not keep:
        return []
    specs, layouts, rendered = (
        [specs[i] for i in keep],
        [layouts[i] for i in keep],
        [rendered[i] for i in keep],
    )

    # one run per distinct (prefix, target), shortest first (little padding inside a batch)
    keys: list[_PrefixKey] = [(prefix.token_ids, prefix.target_ids) for prefix in rendered]
    first = {key: index for index, key in reversed(list(enumerate(keys)))}
    runs = sorted(first, key=lambda key: (len(key[0]) + len(key[1]), key))
    representatives = [(specs[first[key]], rendered[first[key]]) for key in runs]
    continuations, answers, confidences = _measure(
        model,
        prompt_ids,
        runs,
        representatives,
        task=task,
        variant=variant,
        reference=reference,
        n_atoms=layout.n_atoms,
        budget=budget,
        run=run,
    )

    run_of = {key: index for index, key in enumerate(runs)}
    return [
        _intervention_row(
            spec,
            corrupted,
            prefix,
            reference=layout,
            answer=answers[run_of[key]],
            continuation=continuations[run_of[key]],
            confidences={name: float(confidences[name][run_of[key]]) for name in CONFIDENCE_COLUMNS},
            next_tokens=int(confidences["n_tokens"][run_of[key]]),
            next_atoms=run.next_atoms,
        ).as_dict()
        for spec, corrupted, key, prefix in zip(specs, layouts, keys, rendered)
    ]


def empty_interventions() -> pl.DataFrame:
    """An empty interventions table with :data:`INTERVENTION_FILE_COLUMNS`."""
    return pl.DataFrame(schema=INTERVENTION_FILE_COLUMNS)


def _answer_prompts(
    model: LoadedModel, rows: pl.DataFrame, options: InterventionOptions, n_shots: int | None
) -> list[str]:
    """The task prompts rendered as the model sees them, each ending where the answer starts
    (after a closed, empty reasoning block for a reasoning model)."""
    from saltbench.inference.chat import answer_start

    rendered = model.render(build_prompts(rows, options.style, n_shots))
    return [answer_start(prompt, model.spec.reasoning_format) for prompt in rendered]


def _sample_run(model: LoadedModel, options: InterventionOptions, *, reuse_cache: bool) -> SampleRun:
    """The settings of every sample's run; warns when the backend returns no full-vocabulary entropy."""
    if not model.full_entropy:
        log.warning(
            "%s backend: the full-vocabulary entropy is not returned, so full.mean_entropy and "
            "full.max_entropy are NaN",
            model.backend,
        )
    return SampleRun(
        next_atoms=options.next_atoms,
        max_new_tokens=options.max_new_tokens,
        boundary=options.boundary,
        batch_size=options.batch_size,
        top_k=model.top_k,
        reuse_cache=reuse_cache,
        max_context=model.spec.max_context,
    )


def _plan(
    layout: AnswerLayout, options: InterventionOptions, *, sample_id: str, task: str, variant: str | None
) -> list[InterventionSpec]:
    """The interventions of one sample on the grid of ``options``."""
    return plan_sample(
        layout,
        corruptor_for(task, variant),
        sample_id=sample_id,
        seed=options.seed,
        positions=options.positions,
        position_fractions=options.position_fractions,
        corruption_counts=options.corruption_counts,
        corruption_fractions=options.corruption_fractions,
        placements=options.placements,
    )


def _log_sample(sample_id: str, n_atoms: int, measured: Sequence[dict[str, Any]], *, seconds: float) -> None:
    """One log line per sample: its interventions, their time and their next-atom accuracy."""
    accuracy = sum(row["next_correct"] for row in measured) / max(len(measured), 1)
    log.info(
        "%s: %d atoms, %d interventions in %.1f s (next-atom accuracy %.2f)",
        sample_id,
        n_atoms,
        len(measured),
        seconds,
        accuracy,
    )


def run_interventions(
    model: LoadedModel,
    rows: pl.DataFrame,
    options: InterventionOptions,
    *,
    model_name: str,
    prompts: Sequence[str] | None = None,
    n_shots: int | None = None,
    reuse_cache: bool = True,
) -> pl.DataFrame:
    """The interventions table of some dataset rows (one shard) for one model.

    Args:
        model: a model loaded through its backend (:func:`saltbench.inference.backends.load_backend`; a
            vLLM engine started with ``prefix_caching=True``); its ``top_k`` is the number of
            log-probabilities per token (the ``topk`` confidence flavour).
        rows: dataset rows (``sample_id, task, variant, input, reference``).
        options: the grid (``InterventionOptions.from_config``).
        model_name: the registry name written to the ``model`` column.
        prompts: rendered prompts per row; default: the task prompt in ``options.style`` with
            ``n_shots`` examples, rendered as the model sees it (:meth:`LoadedModel.render`: the registry
            entry's system prompt, chat template and template arguments), exactly as the inference stage
            does, then — for a reasoning model — a closed, empty reasoning block in the model's format, so
            that the forced answer prefix stands where its answer would
            (:func:`saltbench.inference.chat.answer_start`).
        reuse_cache: encode each prompt once and share its cache (``False``: re-encode per batch row —
            the benchmark baseline; same results).

    Returns:
        One row per intervention, columns :data:`INTERVENTION_FILE_COLUMNS`; rows with fewer than 2 reference
        atoms contribute nothing.
    """
    from saltbench.inference import encode_prompt

    if prompts is None:
        prompts = _answer_prompts(model, rows, options, n_shots)
    if len(prompts) != rows.height:
        raise ValueError(f"prompts must have one entry per row ({rows.height}), got {len(prompts)}")
    run = _sample_run(model, options, reuse_cache=reuse_cache)
    records: list[dict[str, Any]] = []
    for prompt, (sample_id, task, variant, reference) in zip(
        prompts, rows.select("sample_id", "task", "variant", "reference").iter_rows()
    ):
        started = time.perf_counter()
        layout = AnswerLayout.from_reference(reference, task, variant)
        specs = _plan(layout, options, sample_id=sample_id, task=task, variant=variant)
        if not specs:
            log.info("%s: %d reference atom(s), no intervention", sample_id, layout.n_atoms)
            continue
        measured = run_sample(
            model,
            encode_prompt(model.tokenizer, prompt),
            layout,
            specs,
            task=task,
            variant=variant,
            reference=reference,
            run=run,
        )
        sample = {"model": model_name, "task": task, "sample_id": sample_id, "variant": variant}
        records.extend({**sample, **row} for row in measured)
        _log_sample(sample_id, layout.n_atoms, measured, seconds=time.perf_counter() - started)
    if not records:
        return empty_interventions()
    return pl.DataFrame(records, schema=INTERVENTION_FILE_COLUMNS)


def intervention_shard(
    rows: pl.DataFrame,
    options: InterventionOptions,
    *,
    model_name: str,
    model_path: str | Path,
    spec: Any,
    n_shots: int | None,
    top_k: int = 20,
    backend: str | None = None,
    num_threads: int | None = None,
    request_cache: str | Path | None = None,
    server: str | Path | None = None,
) -> pl.DataFrame:
    """The workflow stage: load the model a registry entry describes and run :func:`run_interventions`.

    ``backend``: any of the registry's (default: the entry's); ``num_threads``: CPU threads of a vLLM
    engine on a CPU build; ``request_cache``: where a served model's completed requests are kept (a rerun
    after a kill sends only the rest); ``server``: the endpoint file of a ``vllm_server`` model's server.
    """
    atoms = [
        AnswerLayout.from_reference(reference, task, variant).n_atoms
        for task, variant, reference in rows.select("task", "variant", "reference").iter_rows()
    ]
    if not any(n >= 2 for n in atoms):  # nothing to intervene on: do not load the model
        log.info("%d samples, none with 2 or more reference atoms: no interventions", rows.height)
        return empty_interventions()
    settings = LoadSettings(
        batch_size=options.batch_size,
        top_k=top_k,
        num_threads=num_threads,
        prefix_caching=True,
        cache_dir=request_cache,
        server=server,
    )
    model = load_backend(model_path, spec, backend=backend, settings=settings)
    return run_interventions(model, rows, options, model_name=model_name, n_shots=n_shots)


def select_shard(dataset: pl.DataFrame, options: InterventionOptions, shard: int) -> pl.DataFrame:
    """Rows of shard ``shard``: block number ``shard`` of ``shard_size`` rows among the first
    ``samples_per_task`` rows of the dataset."""
    if shard < 0:
        raise ValueError(f"shard must be >= 0, got {shard}")
    head = dataset.head(options.samples_per_task)
    return head.slice(shard * options.shard_size, options.shard_size)


def merge_intervention_shards(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate shard tables; a sample present in two shards is an error (a shard written twice)."""
    frames = [f for f in frames if f.height]
    if not frames:
        return empty_interventions()
    seen: dict[str, int] = {}
    for i, frame in enumerate(frames):
        for sid in frame["sample_id"].unique().to_list():
            if sid in seen:
                raise ValueError(f"sample {sid!r} appears in shards {seen[sid]} and {i}")
            seen[sid] = i
    return pl.concat([f.cast(INTERVENTION_FILE_COLUMNS) for f in frames], how="vertical")  # type: ignore[arg-type]


__all__ = [
    "INTERVENTION_FILE_COLUMNS",
    "SampleRun",
    "auto_budget",
    "empty_interventions",
    "intervention_shard",
    "merge_intervention_shards",
    "run_interventions",
    "run_sample",
    "select_shard",
]
