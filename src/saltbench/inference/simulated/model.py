"""The ``simulated`` backend: a model whose answers come from the planted process, written as a real
backend writes them (docs/simulation.md §3).

**What it knows.** Like a model that reads the prompt, it finds the dataset row a prompt asks about (every
prompt ends with its task's test block, :meth:`saltbench.tasks.base.Task.test_block`) among the dataset
files in its model path (``data/datasets``, the registry's ``source.datasets``) — the
:class:`~saltbench.inference.simulated.answers.Oracle`.

**Tokens.** A byte-level tokenizer without merges (a ``transformers`` fast tokenizer, 256 byte tokens plus
``<|endoftext|>`` = 256): every ASCII character is one token, so token texts and offsets follow from the
text. Each token's chosen probability ``p`` (for the tokens of an atom, the atom's:
:func:`~saltbench.inference.simulated.chain.atom_confidence`; elsewhere
:data:`~saltbench.inference.simulated.params.STRUCTURE_PROB`) is the
most likely of a top-20 whose other 19 entries share ``1 − p`` evenly; the stored entropy is that
distribution's (nats).

**Answers** (:mod:`~saltbench.inference.simulated.answers`). The reference with each wrong atom replaced by
:func:`~saltbench.inference.simulated.answers.wrong_atom`, between fence lines; in the
``cot`` style after two lines of working; for a share of responses after a ``<think>`` trace that quotes the
fence (of a planted length, or never ending: :mod:`~saltbench.inference.simulated.thinking`), cut inside the
answer (``finish_reason = length``) or without fences (parameters module); for a share of responses with
an atom repeated, left out, or two lines swapped (:mod:`~saltbench.inference.simulated.shapes`). A budget
shorter than the response cuts it too.

**Interventions** (:meth:`SimulatedModel.force_and_continue`): the forced prefix is read back into atoms,
compared with the reference, and the chain continues from it with those atoms' wrongness as its history, so
corrupted prefixes act through the planted ``propagation_*`` terms. The teacher-forced log-probability of
the reference atom ``k`` is ``log P(correct_k)``, split evenly over its tokens.

**Draws** (:meth:`SimulatedModel.sample`): :mod:`~saltbench.inference.simulated.draws`. **Second-pass
prompts** (those of :func:`saltbench.evaluation.second_pass_instruction`): a planted verbalized confidence
or P(True), :mod:`~saltbench.inference.simulated.second_pass` (docs/simulation.md §9–10).

Every response is a function of the parameters' seed and its prompt (and forced prefix) only, so batches,
shards and resumed jobs give identical files.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from saltbench.evaluation import decompose_clean, resolve_task
from saltbench.inference.base import DrawSettings, ForcedContinuation, StopRule, cut_continuation
from saltbench.inference.records import TOP_K, GenerationRecord
from saltbench.inference.simulated.answers import (
    COT_WORKING,
    EOS_ID,
    SECOND_PASS_MARK,
    Answer,
    Oracle,
    Plan,
    _rng,
    _Segments,
    answer_body,
    build_tokenizer,
    shaped,
    style_of,
    token_scores,
)
from saltbench.inference.simulated.params import STRUCTURE_PROB, SimulationParams
from saltbench.inference.simulated.thinking import draw_trace_length, trace_text
from saltbench.tasks import get_task
from saltbench.tasks.base import FENCE

if TYPE_CHECKING:
    from saltbench.core.vocabulary import DrawSupport
    from saltbench.inference.registry import ModelSpec


@dataclass
class SimulatedModel:
    """The planted process behind the backend protocol (:class:`saltbench.inference.base.LoadedModel`)."""

    backend: ClassVar[str] = "simulated"
    continuous_batching: ClassVar[bool] = True
    full_entropy: ClassVar[bool] = True
    draws: ClassVar[DrawSupport] = "seeded"
    spec: ModelSpec
    tokenizer: Any
    oracle: Oracle
    params: SimulationParams
    batch_size: int = 8
    top_k: int = TOP_K

    def render(self, instructions: Sequence[str]) -> list[str]:
        """The instructions as they are (the simulated model has no chat template)."""
        return list(instructions)

    def _answer(self, prompt: str) -> Answer:
        answer = self.oracle.lookup(prompt)
        if answer is None:
            raise ValueError(f"model {self.spec.name!r}: no dataset row ends this prompt: …{prompt[-80:]!r}")
        return answer

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]:
        """One record per prompt (module docstring), cut at its budget (capped by the registry)."""
        if len(budgets) != len(prompts):
            raise ValueError(f"{len(budgets)} budgets for {len(prompts)} prompts")
        return [
            self._generate_one(p, self.spec.generation_budget(b))
            for p, b in zip(prompts, budgets, strict=True)
        ]

    def sample(
        self,
        prompts: Sequence[str],
        budgets: Sequence[int],
        seeds: Sequence[int],
        settings: DrawSettings,
        *,
        progress: bool = True,
    ) -> list[list[GenerationRecord]]:
        """``settings.n`` draws per prompt (:func:`saltbench.inference.simulated.draws.sample`)."""
        from saltbench.inference.simulated.draws import sample

        return sample(self, prompts, budgets, seeds, settings)

    def plan(self, prompt: str) -> Plan:
        """What the planted process decided for ``prompt`` (the draws :meth:`generate` writes out)."""
        from saltbench.inference.simulated import chain  # numba: on first use

        params, answer, style = self.params, self._answer(prompt), style_of(prompt)
        rng = _rng(params.seed, prompt)
        n = len(answer.atoms)
        shape_draw, cut_draw, trace_draw = rng.random(3)
        correct, _ = chain.atom_chain(params, answer.task, style, n, rng.random((1, n)))
        normals = rng.standard_normal(n)  # n draws either way: the draws after them do not move
        lines = None
        if params.line_separation is None:
            probs = chain.atom_confidence(params, style, correct[0], normals)
        else:
            lines = chain.atom_lines(answer.reference, np.asarray(answer.starts))
            probs = chain.line_confidence(params, style, correct[0], lines, normals)
        if shape_draw < params.no_fence_rate:
            shape = "no_fence"
        elif shape_draw < params.no_fence_rate + params.truncation_rate:
            shape = "truncated"
        else:
            shape = "answered"
        trace = self.spec.reasoning_format == "think" and trace_draw < params.reasoning_rate
        wrong_seed = int(rng.integers(2**63))
        length = draw_trace_length(params, rng)  # the last draws: the others do not depend on them
        return Plan(
            answer, style, correct[0], probs, shape, float(cut_draw), trace, wrong_seed, length, lines
        )

    def _generate_one(self, prompt: str, budget: int) -> GenerationRecord:
        if SECOND_PASS_MARK in prompt:
            from saltbench.inference.simulated.second_pass import read_question, reply

            question = read_question(prompt)
            if question is not None:
                record = reply(self, question, budget, prompt)
                return record
        return self.respond(self.plan(prompt), prompt, budget)

    def respond(
        self, plan: Plan, prompt: str, budget: int, texts: Mapping[int, str] | None = None
    ) -> GenerationRecord:
        """The record of the response ``plan`` writes to ``prompt`` within ``budget`` tokens; ``texts``
        (atom index from 0 -> its text) replaces the atoms the plan draws wrong by other texts
        (:func:`answer_body`; a draw's atoms, :mod:`~saltbench.inference.simulated.draws`)."""
        text = _Segments()
        if plan.trace:
            if plan.trace_length is None:  # it thinks until the budget runs out
                thinking = trace_text(budget, closed=False)
                return self._record(thinking, np.full(budget, STRUCTURE_PROB), False, prompt)
            text.add(trace_text(plan.trace_length) + "\n\n")
        if plan.style == "cot":
            text.add(COT_WORKING)
        if plan.shape != "no_fence":
            text.add(FENCE + "\n")
        before = len(text.build()[1])
        wrong = random.Random(plan.wrong_seed)
        body = answer_body(
            plan.answer, plan.correct, plan.probs, wrong, start=0, lines=plan.lines, texts=texts
        )
        body = shaped(body, plan.answer, self.params, prompt)
        text.extend(body)
        if plan.shape != "no_fence":
            text.add("\n" + FENCE)
        full, byte_probs = text.build()
        eos = True
        cut = len(byte_probs)
        if plan.shape == "truncated":  # cut inside the answer's body
            cut, eos = before + int(plan.cut * len(body.build()[1])), False
        if cut + eos > budget:
            cut, eos = budget, False
        if cut < len(byte_probs):
            full = full.encode("utf-8")[:cut].decode("utf-8", "ignore")
            byte_probs = byte_probs[: len(full.encode("utf-8"))]
        return self._record(full, byte_probs, eos, prompt)

    def _record(self, text: str, byte_probs: np.ndarray, eos: bool, prompt: str) -> GenerationRecord:
        """The record of a response ``text`` (``eos``: it ended by itself; else the budget cut it)."""
        scores, texts = token_scores(text, byte_probs, eos, self.tokenizer)
        return GenerationRecord.from_scores(
            scores,
            texts,
            finish_reason="eos" if eos else "length",
            num_prompt_tokens=len(prompt.encode("utf-8")),
        )

    def prompt_cache(self, prompt_ids: Sequence[int]) -> None:
        """Nothing to cache."""
        return None

    def force_and_continue(
        self,
        prompt_ids: Sequence[int],
        rows: Sequence[tuple[Sequence[int], Sequence[int]]],
        *,
        max_new_tokens: int,
        cache: Any = None,
        stop: StopRule | None = None,
    ) -> list[ForcedContinuation]:
        """Teacher-forced target log-probabilities and the continuation of each forced prefix (module
        docstring), cut like a real engine's (:func:`saltbench.inference.base.cut_continuation`)."""
        decode = self.tokenizer.decode
        prompt = decode(list(prompt_ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)
        answer, style = self._answer(prompt), style_of(prompt)
        out = []
        for row, (prefix_ids, target_ids) in enumerate(rows):
            prefix = decode(list(prefix_ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)
            text, probs, target = self._continue(prompt, prefix, answer, style, len(target_ids))
            keep = text.encode("utf-8")[:max_new_tokens].decode("utf-8", "ignore")
            eos = len(keep) == len(text)
            scores, texts = token_scores(keep, probs[: len(keep.encode("utf-8"))], eos, self.tokenizer)
            length, finish = cut_continuation(scores, [EOS_ID], row, stop)
            if not eos and finish == "eos":
                finish = "length"
            record = GenerationRecord.from_scores(
                scores.slice(0, length),
                texts[:length],
                finish_reason="eos" if finish == "eos" else "length",
                num_prompt_tokens=len(prompt_ids) + len(prefix_ids),
            )
            out.append(ForcedContinuation(target, record, finish))
        return out

    def _continue(
        self, prompt: str, prefix: str, answer: Answer, style: str, n_target: int
    ) -> tuple[str, np.ndarray, np.ndarray]:
        """The continuation text after ``prefix`` with its byte probabilities, and the teacher-forced
        log-probabilities of the ``n_target`` target tokens."""
        from saltbench.inference.simulated.chain import atom_chain, atom_confidence  # numba: on first use

        fence = prefix.rfind(FENCE + "\n")
        body = prefix[fence + len(FENCE) + 1 :] if fence >= 0 else ""
        rule = resolve_task(get_task(answer.task, answer.variant))
        forced, (_, ends) = decompose_clean(body.rstrip(), rule, "atom") if body.strip() else ([], ([], []))
        k = len(forced) + 1
        n = len(answer.atoms)
        if k > n:
            return (
                "\n" + FENCE,
                np.full(len(FENCE) + 1, STRUCTURE_PROB),
                np.full(n_target, math.log(STRUCTURE_PROB)),
            )
        wrong = np.array([[a != r for a, r in zip(forced, answer.atoms, strict=False)]], bool)
        rng = _rng(self.params.seed, prompt, prefix)
        correct, p_correct = atom_chain(self.params, answer.task, style, n, rng.random((1, n - k + 1)), wrong)
        probs = atom_confidence(self.params, style, correct[0], rng.standard_normal(n - k + 1))
        tail = body[ends[-1] :] if forced else body  # what the prefix wrote after its last atom
        start = (answer.ends[k - 2] if k > 1 else 0) + len(tail)
        segments = answer_body(
            answer, correct[0], probs, random.Random(int(rng.integers(2**63))), first=k, start=start
        )
        segments.add("\n" + FENCE)
        text, byte_probs = segments.build()
        # target: the separator still to write, then the reference atom k (its tokens share log P(correct_k))
        atom_bytes = len(answer.atoms[k - 1].encode("utf-8"))
        target = np.full(n_target, math.log(STRUCTURE_PROB))
        if 0 < atom_bytes <= n_target:
            target[n_target - atom_bytes :] = math.log(p_correct[0, 0]) / atom_bytes
        return text, byte_probs, target.astype(np.float32)


def load(path: str | Path, spec: ModelSpec, *, batch_size: int = 8, top_k: int = TOP_K) -> SimulatedModel:
    """The ``simulated`` backend's loader (entry point ``saltbench.backends:simulated``): the simulated model
    of ``spec`` answering the datasets in ``path`` (module docstring); no options (its parameters are its
    source's)."""
    if spec.source.kind != "simulated":
        raise ValueError(f"model {spec.name!r}: backend simulated needs a source of kind 'simulated'")
    if top_k != TOP_K:
        raise ValueError(f"the simulated backend writes top-{TOP_K} log-probabilities, not top-{top_k}")
    return SimulatedModel(
        spec, build_tokenizer(), Oracle.from_folder(path), spec.source.parameters, batch_size, top_k
    )


__all__ = ["SimulatedModel", "load"]
