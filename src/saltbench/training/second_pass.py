"""Training rows that teach a tiny model the second pass's two questions (docs/tiny-models.md §2.4).

The second pass (docs/confidence.md §8) shows a model a task prompt, a proposed answer and one question
about it — verbalized confidence ("reply with one number from 0 to 100") or P(True) ("reply True or
False"). A model trained on SALT's answers only replies with a fence. With ``training.second_pass.share > 0``
each task's training rows gain ``round(share · rows)`` question rows, built from its own rows (same
inputs, so the evaluation inputs stay excluded) exactly as rule ``second_pass`` asks
(:func:`saltbench.evaluation.second_pass_instruction`):

* **the proposed answer** is the row's reference with ``c`` atoms replaced by the evaluator's wrong but
  well-formed atoms (:func:`saltbench.evaluation.corruptor_for`); ``c = 0`` or ``c ~ U{1..min(3, n)}``;
* **the unit asked about**: a granularity drawn uniformly from ``granularities`` (``atom`` only where the
  answer has at most ``atom_max`` atoms), a unit of it drawn uniformly; the answer is wrong at that unit with
  probability ``wrong_share`` (one of its atoms corrupted, plus up to two anywhere else), else it is right
  there (where the answer has other units, they may still be corrupted: the model must look at the unit
  it is asked about);
* **the reply** (the loss covers it and the end token only): ``True`` / ``False`` for P(True), ``100`` /
  ``0`` for verbalized confidence — the truth of the question, the only label the data holds.

A wrong atom changes its unit's comparison key (the corruptor guarantees it), so the reply is the exact
label of the unit: ``True`` iff every atom of the unit is the reference's.
"""

from __future__ import annotations

import random

import polars as pl

from saltbench.core.seeds import derive_seed
from saltbench.evaluation import (
    AtomCorruptor,
    UnitRule,
    corruptor_for,
    decompose_clean,
    resolve_task,
    second_pass_instruction,
)
from saltbench.training.recipe import SecondPassMix

REPLIES = {"p_true": ("True", "False"), "verbalized": ("100", "0")}
"""Kind -> (reply when the unit is correct, reply when it is wrong)."""

Spans = tuple[list[int], list[int]]
"""Unit spans ``(starts, ends)`` in a clean answer (:func:`saltbench.evaluation.decompose_clean`)."""

MAX_EXTRA_WRONG = 2
"""Atoms corrupted outside the unit asked about, at most (drawn uniformly from 0..this)."""


def _substitute(clean: str, spans: Spans, replacements: dict[int, str]) -> str:
    """``clean`` with the atom ``i`` (0-based, spans in ``clean``) replaced by ``replacements[i]``."""
    out: list[str] = []
    last = 0
    for i in sorted(replacements):
        out.extend((clean[last : spans[0][i]], replacements[i]))
        last = spans[1][i]
    out.append(clean[last:])
    return "".join(out)


def _members(atom_spans: Spans, unit_spans: Spans, unit: int) -> list[int]:
    """The atoms (0-based) inside unit ``unit`` of ``unit_spans``."""
    lo, hi = unit_spans[0][unit], unit_spans[1][unit]
    return [i for i, (s, e) in enumerate(zip(*atom_spans)) if s >= lo and e <= hi]


def question_row(
    mix: SecondPassMix,
    rule: UnitRule,
    corrupt: AtomCorruptor,
    prompt: str,
    reference: str,
    rng: random.Random,
) -> tuple[str, str, str, str] | None:
    """One question about a (possibly corrupted) reference of the task whose unit rule is ``rule``
    (:func:`saltbench.evaluation.resolve_task`) and corruption rule ``corrupt``
    (:func:`saltbench.evaluation.corruptor_for`): ``(kind, granularity, instruction, reply)``, or ``None``
    where the reference has no atom or no granularity can be asked (module docstring)."""
    clean = reference.replace("*", "").strip()
    atom_spans = decompose_clean(clean, rule, "atom")[1]
    n = len(atom_spans[0])
    if n == 0:
        return None
    allowed = [g for g in mix.granularities if g != "atom" or n <= mix.atom_max]
    if not allowed:
        return None
    granularity, kind = rng.choice(allowed), rng.choice(mix.kinds)
    unit_spans = atom_spans if granularity == "atom" else decompose_clean(clean, rule, granularity)[1]
    unit = rng.randrange(len(unit_spans[0]))
    inside = _members(atom_spans, unit_spans, unit)
    outside = [i for i in range(n) if i not in inside]
    wrong = rng.random() < mix.wrong_share and bool(inside)
    chosen = [rng.choice(inside)] if wrong else []
    chosen += rng.sample(outside, min(len(outside), rng.randint(0, MAX_EXTRA_WRONG)))
    answer = _substitute(
        clean, atom_spans, {i: corrupt(clean[atom_spans[0][i] : atom_spans[1][i]], rng) for i in chosen}
    )
    units = decompose_clean(answer, rule, granularity)[0]
    instruction = second_pass_instruction(
        kind, prompt, answer, granularity=granularity, unit=units[unit], index=unit + 1
    )
    return kind, granularity, instruction, REPLIES[kind][int(wrong)]


def build_question_pairs(pairs: pl.DataFrame, mix: SecondPassMix, seed: int) -> pl.DataFrame:
    """The question rows of ``pairs`` (the rows of :func:`~saltbench.training.pairs.build_training_pairs`):
    per (task, variant), ``round(mix.share · rows)`` rows drawn without replacement with
    ``random.Random(derive_seed("second_pass", seed, task, variant))``, each turned into a question by
    :func:`question_row`. Columns: those of ``pairs`` (``prompt`` the question, ``answer`` the reply) plus
    ``question`` (``"{kind}/{granularity}"``; the trainer gives the task rows a null one)."""
    frames: list[pl.DataFrame] = []
    for (task, variant), group in pairs.group_by("task", "variant", maintain_order=True):
        rng = random.Random(derive_seed("second_pass", seed, str(task), str(variant or "")))
        rule, corrupt = resolve_task(str(task), variant), corruptor_for(str(task), variant)  # once per task
        n = min(group.height, round(mix.share * group.height))
        picked = group[sorted(rng.sample(range(group.height), n))]
        built: list[dict[str, str | None]] = []
        for row in picked.iter_rows(named=True):
            made = question_row(mix, rule, corrupt, row["prompt"], row["reference"], rng)
            if made is not None:
                kind, granularity, instruction, reply = made
                built.append(
                    row | {"prompt": instruction, "answer": reply, "question": f"{kind}/{granularity}"}
                )
        if built:
            frames.append(pl.DataFrame(built, schema={**pairs.schema, "question": pl.String}))
    return pl.concat(frames) if frames else pairs.clear().with_columns(question=pl.lit(None, pl.String))


__all__ = ["MAX_EXTRA_WRONG", "REPLIES", "build_question_pairs", "question_row"]
