"""Running interventions on a model and measuring the next atoms (one row per intervention).

Per sample: the prompt is rendered exactly as in the inference stage (task prompt → chat template) and
encoded **once** (:func:`saltbench.inference.encode_prompt_cache`); its key/value cache is copied into
every batch of answer prefixes. Identical prefixes (e.g. ``local`` and ``distant`` when ``c = k - 1``)
run once. For each prefix, in one batched pass (:func:`~saltbench.inference.forced.force_and_continue`):

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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from saltbench.confidence import PAPER_CONFIDENCE_NAMES, scored_columns
from saltbench.core.contracts import INTERVENTION_COLUMNS, confidence_column
from saltbench.core.vocabulary import FLAVOURS, Backend, Boundary
from saltbench.evaluation import UnitRule, decompose, evaluate, resolve_task
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
    from saltbench.inference.forced import ForcedContinuation, StopRule

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
    gens: Sequence[Any], spans: Sequence[tuple[int, int] | None], top_k: int
) -> dict[str, np.ndarray]:
    """Every confidence function (both flavours) of one span per generation (NaN where ``None``)."""
    n = len(gens)
    base = np.cumsum([0] + [g.num_generated_tokens for g in gens])
    tok_parts, unit_parts = [], []
    for u, (gen, span) in enumerate(zip(gens, spans)):
        if span is None or gen.num_generated_tokens == 0:
            continue
        tok, _ = token_unit_pairs(gen.token_offsets, len(gen.text), np.array([span[0]]), np.array([span[1]]))
        tok_parts.append(tok + base[u])
        unit_parts.append(np.full(tok.size, u, dtype=np.int64))
    tok_all = np.concatenate(tok_parts) if tok_parts else np.zeros(0, np.int64)
    unit_all = np.concatenate(unit_parts) if unit_parts else np.zeros(0, np.int64)
    if base[-1] == 0:
        nan = np.full(n, np.nan)
        return {"n_tokens": np.zeros(n, np.int64), **{name: nan for name in CONFIDENCE_COLUMNS}}
    tokens = {
        "token_ids": np.concatenate([g.token_ids for g in gens]).astype(np.int64),
        "chosen": np.concatenate([g.chosen_logprobs for g in gens]).astype(np.float64),
        "topk": np.concatenate([g.topk_logprobs for g in gens]),
        "topk_ids": np.concatenate([g.topk_ids for g in gens]),
        "entropy": np.concatenate([g.entropy for g in gens]).astype(np.float64),
    }
    return confidence_columns(tokens, tok_all, unit_all, n, flavours=FLAVOURS, top_k=top_k)


def _stop_rule(tokenizer: Any, rule: UnitRule, prefixes: Sequence[str], wanted: Sequence[int]) -> StopRule:
    """Row ``r`` is done once ``prefix_r + continuation`` has ``wanted[r]`` atoms (atom ``k+m'-1`` is then
    followed by the start of another one, so it is complete) or the continuation wrote a fence."""

    def stop(row: int, ids: Sequence[int]) -> bool:
        text = tokenizer.decode(list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return bool(_FENCE_TOKEN.search(text)) or len(decompose(prefixes[row] + text, rule)) >= wanted[row]

    return stop


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
    tokenizer = model.tokenizer
    layouts = [layout.substitute(s.replacements) for s in specs]
    rendered = [
        render_prefix(lay, s.position, tokenizer=tokenizer, boundary=run.boundary, next_atoms=run.next_atoms)
        for lay, s in zip(layouts, specs)
    ]
    budget = run.max_new_tokens or auto_budget(rendered)
    if run.max_context is not None:
        room = run.max_context - len(prompt_ids) - budget
        keep = [i for i, r in enumerate(rendered) if len(r.token_ids) + len(r.target_ids) <= room]
        if len(keep) < len(specs):
            log.warning(
                "%d of %d interventions exceed max_context %d (prompt %d + budget %d tokens); dropped",
                len(specs) - len(keep),
                len(specs),
                run.max_context,
                len(prompt_ids),
                budget,
            )
            specs, layouts, rendered = (
                [specs[i] for i in keep],
                [layouts[i] for i in keep],
                [rendered[i] for i in keep],
            )
    if not specs:
        return []

    # one run per distinct (prefix, target), shortest first (little padding inside a batch)
    keys = [(r.token_ids, r.target_ids) for r in rendered]
    first = {key: i for i, key in reversed(list(enumerate(keys)))}
    unique = sorted(first, key=lambda key: (len(key[0]) + len(key[1]), key))
    cache = model.prompt_cache(prompt_ids) if run.reuse_cache else None
    unit_rule = resolve_task(task, variant)
    n = layout.n_atoms
    conts: list[ForcedContinuation] = []
    group_size = len(unique) if model.continuous_batching else run.batch_size
    for lo in range(0, len(unique), group_size):
        group = unique[lo : lo + group_size]
        stop = None
        if run.early_stop:
            spec_of = [specs[first[key]] for key in group]
            stop = _stop_rule(
                tokenizer,
                unit_rule,
                [rendered[first[key]].text for key in group],
                [s.position + min(run.next_atoms, n - s.position + 1) for s in spec_of],
            )
        conts.extend(
            model.force_and_continue(prompt_ids, group, max_new_tokens=budget, cache=cache, stop=stop)
        )

    # evaluate prefix + continuation (cut after the first fence the continuation writes)
    evals, texts, spans = [], [], []
    for u, key in enumerate(unique):
        i = first[key]
        r, k, text = rendered[i], specs[i].position, conts[u].generation.text
        fence = _FENCE_TOKEN.search(text)
        cont = text[: fence.end()] if fence else text
        ev = evaluate(
            r.text + cont, reference, task, variant=variant, keyword_filter=False, require_fence=True
        )
        span = None
        if len(ev.response_unit_spans) >= k:  # atom k, in continuation coordinates
            s, e = ev.response_unit_spans[k - 1]
            s, e = max(s - len(r.text), 0), e - len(r.text)
            span = (s, e) if e > s else None
        evals.append(ev)
        texts.append(cont)
        spans.append(span)
    conf = _confidences([c.generation for c in conts], spans, run.top_k)

    index = {key: u for u, key in enumerate(unique)}
    out = []
    for spec, lay, key, r in zip(specs, layouts, keys, rendered):
        u, k = index[key], spec.position
        ev = evals[u]
        statuses = [c.status for c in ev.comparisons]
        m_eff = min(run.next_atoms, n - k + 1)
        window = statuses[k - 1 : k - 1 + m_eff]
        mask = np.asarray(r.target_atom_mask, dtype=bool)
        lp = conts[u].target_logprobs
        out.append(
            {
                "n_atoms": n,
                "position": k,
                "position_fraction": k / n,
                "n_corrupted": spec.n_corrupted,
                "corrupted_fraction": spec.n_corrupted / (k - 1),
                "placement": spec.placement,
                "corrupted_positions": list(spec.corrupted_positions),
                "corrupted_atoms": list(spec.corrupted_atoms),
                "next_m": m_eff,
                "next_correct": bool(window) and window[0] == "correct",
                "next_m_accuracy": sum(s == "correct" for s in window) / m_eff,
                "next_status": statuses[k - 1] if len(statuses) >= k else "missing",
                "next_atom": ev.response_units[k - 1] if len(ev.response_units) >= k else None,
                "reference_atom": layout.atoms[k - 1],
                "prefix_intact": tuple(ev.response_units[: k - 1]) == lay.atoms[: k - 1],
                "next_confidence": float(conf[confidence_column("topk", "mean_probability")][u]),
                "next_n_tokens": int(conf["n_tokens"][u]),
                **{name: float(conf[name][u]) for name in CONFIDENCE_COLUMNS},
                "tf_logprob_correct": float(lp[mask].sum())
                if mask.size == lp.size and mask.any()
                else math.nan,
                "tf_logprob_with_gap": float(lp.sum()) if lp.size else math.nan,
                "tf_n_tokens": int(mask.sum()),
                "prefix_tokens": len(r.token_ids),
                "canonical_cut": r.canonical_cut,
                "prefix": r.text,
                "continuation": texts[u],
                "finish_reason": conts[u].finish_reason,
            }
        )
    return out


def empty_interventions() -> pl.DataFrame:
    """An empty interventions table with :data:`INTERVENTION_FILE_COLUMNS`."""
    return pl.DataFrame(schema=INTERVENTION_FILE_COLUMNS)


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
    from saltbench.inference.chat import answer_start

    if prompts is None:
        rendered = model.render(build_prompts(rows, options.style, n_shots))
        prompts = [answer_start(prompt, model.spec.reasoning_format) for prompt in rendered]
    if len(prompts) != rows.height:
        raise ValueError(f"prompts must have one entry per row ({rows.height}), got {len(prompts)}")
    run = SampleRun(
        next_atoms=options.next_atoms,
        max_new_tokens=options.max_new_tokens,
        boundary=options.boundary,
        batch_size=options.batch_size,
        top_k=model.top_k,
        reuse_cache=reuse_cache,
        max_context=model.spec.max_context,
    )
    if not model.full_entropy:
        log.warning(
            "%s backend: the full-vocabulary entropy is not returned, so full.mean_entropy and "
            "full.max_entropy are NaN",
            model.backend,
        )
    records: list[dict[str, Any]] = []
    for prompt, (sample_id, task, variant, reference) in zip(
        prompts, rows.select("sample_id", "task", "variant", "reference").iter_rows()
    ):
        started = time.perf_counter()
        layout = AnswerLayout.from_reference(reference, task, variant)
        specs = plan_sample(
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
        meta = {"model": model_name, "task": task, "sample_id": sample_id, "variant": variant}
        records.extend({**meta, **row} for row in measured)
        accuracy = sum(r["next_correct"] for r in measured) / max(len(measured), 1)
        log.info(
            "%s: %d atoms, %d interventions in %.1f s (next-atom accuracy %.2f)",
            sample_id,
            layout.n_atoms,
            len(measured),
            time.perf_counter() - started,
            accuracy,
        )
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
    backend: Backend | None = None,
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
        batch_size=options.batch_size, top_k=top_k, num_threads=num_threads, prefix_caching=True,
        cache_dir=request_cache, server=server,
    )  # fmt: skip
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
