"""The ``simulated`` backend: a model whose answers come from the planted process, written as a real
backend writes them (docs/simulation.md §3).

**What it knows.** Like a model that reads the prompt, it finds the dataset row a prompt asks about (every
prompt ends with its task's test block, :meth:`saltbench.tasks.base.Task.test_block`) among the dataset
files in its model path (``data/datasets``, the registry's ``source.datasets``) — the :class:`Oracle`.

**Tokens.** A byte-level tokenizer without merges (a ``transformers`` fast tokenizer, 256 byte tokens plus
``<|endoftext|>`` = 256): every ASCII character is one token, so token texts and offsets follow from the
text. Each token's chosen probability ``p`` (for the tokens of an atom, the atom's:
:func:`~saltbench.inference.simulated.chain.atom_confidence`; elsewhere
:data:`~saltbench.inference.simulated.params.STRUCTURE_PROB`) is the
most likely of a top-20 whose other 19 entries share ``1 − p`` evenly; the stored entropy is that
distribution's (nats).

**Answers.** The reference with each wrong atom replaced by :func:`wrong_atom`, between fence lines; in the
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

import hashlib
import math
import random
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import polars as pl

from saltbench.evaluation import decompose_clean, resolve_task
from saltbench.inference.base import DrawSettings, ForcedContinuation, StopRule, cut_continuation
from saltbench.inference.records import TOP_K, GenerationRecord, TokenScores
from saltbench.inference.simulated.params import STRUCTURE_PROB, SimulationParams
from saltbench.inference.simulated.shapes import draw_shapes, reshape
from saltbench.inference.simulated.thinking import draw_trace_length, trace_text
from saltbench.tasks import get_task
from saltbench.tasks.base import FENCE, STYLE_INSTRUCTIONS

if TYPE_CHECKING:
    from saltbench.core.vocabulary import DrawSupport
    from saltbench.inference.registry import ModelSpec

EOS_ID = 256
"""The id of ``<|endoftext|>``, the simulated tokenizer's one special token."""
TRUE_ID, FALSE_ID = 257, 258
"""The ids of the tokens ``True`` and ``False`` (:func:`build_tokenizer`)."""
THINK_CLOSED = "<think>\n\n</think>\n\n"
"""What :func:`saltbench.inference.chat.answer_start` appends for a ``think`` model (stripped on lookup)."""
COT_WORKING = "Let me work through this step by step.\nI compute every part of the answer in order.\n"
"""The working a simulated model writes before its fenced answer in the ``cot`` style."""
_POOLS = {c: pool for pool in (string.digits, string.ascii_uppercase, string.ascii_lowercase) for c in pool}
"""The characters a wrong atom's character is drawn from: digits, capitals or small letters, as the one it
replaces (a base by another base in a DNA atom)."""
_ALNUM = frozenset(_POOLS)
SECOND_PASS_MARK = "\n\nProposed answer:\n"
"""What every second-pass prompt holds (:func:`saltbench.evaluation.second_pass_instruction`); a prompt
that holds it is read as one (:mod:`~saltbench.inference.simulated.second_pass`) and, if it is none,
answered as a task prompt."""
TAIL_CHARS = 64
"""Characters of a prompt's end used to index the dataset rows (candidates are then checked in full)."""


def build_tokenizer() -> Any:
    """The byte-level tokenizer (module docstring): byte ``b`` is token ``b``, ``<|endoftext|>`` is 256;
    ``True`` (257) and ``False`` (258) are tokens no text encodes to (no merges make them), only the first
    token of a P(True) reply (:mod:`~saltbench.inference.simulated.second_pass`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    others = [b for b in range(256) if b not in printable]
    symbol = {b: chr(b) for b in printable} | {b: chr(256 + i) for i, b in enumerate(others)}
    vocab = {symbol[b]: b for b in range(256)} | {"<|endoftext|>": EOS_ID, "True": TRUE_ID, "False": FALSE_ID}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(["<|endoftext|>"])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>")


def wrong_atom(atom: str, rng: random.Random) -> str:
    """A wrong atom of the same form: a ``True``/``False`` flipped; otherwise one letter or digit replaced by
    another of its kind (a base by another base when the atom is DNA); an atom without either gets a ``0``.

    Examples:
        >>> rng = random.Random(0)
        >>> wrong_atom("p3: True", rng), wrong_atom("ACG", rng) != "ACG", wrong_atom("[]", rng)
        ('p3: False', True, '[]0')
    """
    for word, other in (("True", "False"), ("False", "True")):
        at = atom.rfind(word)
        if at >= 0:
            return atom[:at] + other + atom[at + len(word) :]
    places = [i for i, c in enumerate(atom) if c in _ALNUM]
    if not places:
        return atom + "0"
    i = places[rng.randrange(len(places))]
    c = atom[i]
    pool = "ACGT" if not atom.strip("ACGT ") else _POOLS[c]
    r = rng.randrange(len(pool) - 1)  # uniform over the pool without c
    other = pool[r] if r < pool.index(c) else pool[r + 1]
    return atom[:i] + other + atom[i + 1 :]


@dataclass(frozen=True)
class Answer:
    """One dataset row as the simulated model knows it: its reference (stripped), atoms and their spans."""

    task: str
    variant: str | None
    sample_id: str
    reference: str
    atoms: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]


class Oracle:
    """The dataset rows behind prompts (module docstring), indexed by the last characters of their test
    blocks."""

    def __init__(self, frames: Sequence[pl.DataFrame]) -> None:
        blocks: list[tuple[str, Answer]] = []
        for frame in frames:
            for row in frame.select("sample_id", "task", "variant", "input", "reference").iter_rows(
                named=True
            ):
                task = get_task(row["task"], row["variant"])
                reference = row["reference"].strip()
                atoms, (starts, ends) = decompose_clean(reference, resolve_task(task), "atom")
                answer = Answer(
                    row["task"],
                    row["variant"],
                    row["sample_id"],
                    reference,
                    tuple(atoms),
                    tuple(starts),
                    tuple(ends),
                )
                blocks.append((task.test_block(row["input"]), answer))
        if not blocks:
            raise ValueError("the simulated model found no dataset rows to answer")
        self.tail = min(TAIL_CHARS, *(len(b) for b, _ in blocks))
        self._index: dict[str, list[tuple[str, Answer]]] = {}
        self._stripped: dict[str, list[tuple[str, Answer]]] | None = None
        for block, answer in blocks:
            self._index.setdefault(block[-self.tail :], []).append((block, answer))

    @classmethod
    def from_folder(cls, folder: str | Path) -> Oracle:
        """Every ``*.parquet`` dataset file in ``folder``."""
        files = sorted(Path(folder).glob("*.parquet"))
        if not files:
            raise FileNotFoundError(
                f"the simulated model's datasets folder {str(folder)!r} has no *.parquet files"
            )
        return cls([pl.read_parquet(f) for f in files])

    def lookup(self, prompt: str) -> Answer | None:
        """The row whose test block ends ``prompt`` (after any closed, empty reasoning block), or ``None``."""
        text = prompt.removesuffix(THINK_CLOSED)
        for block, answer in self._index.get(text[-self.tail :], ()):
            if text.endswith(block):
                return answer
        return None

    def lookup_stripped(self, instruction: str) -> Answer | None:
        """The row whose test block, trailing white space removed, ends ``instruction`` (a task instruction
        quoted by a second-pass prompt, stripped at its end), or ``None``."""
        if self._stripped is None:
            self._stripped = {}
            for pairs in self._index.values():
                for block, answer in pairs:
                    self._stripped.setdefault(block.rstrip()[-TAIL_CHARS:], []).append(
                        (block.rstrip(), answer)
                    )
        text = instruction.rstrip()
        for tail in {text[-n:] for n in {len(k) for k in self._stripped}}:
            for block, answer in self._stripped.get(tail, ()):
                if text.endswith(block):
                    return answer
        return None


def style_of(prompt: str) -> str:
    """The prompt style whose instruction line the prompt holds (``direct`` when none does)."""
    return next((s for s, line in STYLE_INSTRUCTIONS.items() if s != "direct" and line in prompt), "direct")


def _rng(seed: int, *texts: str) -> np.random.Generator:
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def token_scores(
    text: str, probs: np.ndarray, eos: bool, tokenizer: Any
) -> tuple[TokenScores, tuple[str, ...]]:
    """The tokens of ``text`` (one per byte; then EOS when ``eos``) with their chosen probabilities ``probs``
    (one per byte, EOS excluded) as a top-20 whose other entries share the rest evenly; ``tokenizer`` (the
    model's) gives the texts of the tokens of a non-ASCII text."""
    raw = text.encode("utf-8")
    ids = np.frombuffer(raw, np.uint8).astype(np.int32)
    p = np.asarray(probs, dtype=np.float64)
    if eos:
        ids = np.append(ids, np.int32(EOS_ID))
        p = np.append(p, STRUCTURE_PROB)
    alt = (1.0 - p) / (TOP_K - 1)
    topk_ids = (ids[:, None] + np.arange(TOP_K, dtype=np.int32)[None, :]) % (EOS_ID + 1)
    topk = np.empty((len(ids), TOP_K), np.float64)
    topk[:, 0] = np.log(p)
    topk[:, 1:] = np.log(alt)[:, None]
    entropy = -(p * np.log(p) + (1.0 - p) * np.log(alt))
    scores = TokenScores(
        ids,
        np.log(p).astype(np.float32),
        topk_ids.astype(np.int32),
        topk.astype(np.float32),
        entropy.astype(np.float32),
    )
    if len(raw) == len(text):  # ASCII: a token per character
        texts: tuple[str, ...] = tuple(text)
    else:
        from saltbench.inference.detokenize import token_texts

        texts = tuple(token_texts(tokenizer, ids[: len(raw)]))
    return scores, (*texts, "") if eos else texts


class _Segments:
    """Text assembled piece by piece with a chosen-token probability per character (per byte in the end)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.probs: list[np.ndarray] = []

    def add(self, text: str, prob: float | np.ndarray = STRUCTURE_PROB) -> None:
        """``text`` with one probability for all its characters, or one each."""
        if text:
            self.texts.append(text)
            self.probs.append(np.broadcast_to(np.asarray(prob, np.float64), (len(text),)))

    def extend(self, other: _Segments) -> None:
        self.texts += other.texts
        self.probs += other.probs

    def build(self) -> tuple[str, np.ndarray]:
        """The text and one probability per UTF-8 byte of it."""
        text = "".join(self.texts)
        probs = np.concatenate(self.probs) if self.probs else np.zeros(0)
        if not text.isascii():  # a character's probability for each of its bytes
            probs = np.repeat(probs, [len(c.encode("utf-8")) for c in text])
        return text, probs


def answer_body(
    answer: Answer,
    correct: np.ndarray,
    probs: np.ndarray,
    rng: random.Random,
    first: int = 1,
    start: int | None = None,
    lines: np.ndarray | None = None,
    texts: Mapping[int, str] | None = None,
) -> _Segments:
    """Atoms ``first..n`` of the reference from character ``start`` (default: atom ``first``'s start), each
    wrong one replaced by :func:`wrong_atom` (in atom order) — or, given ``texts``, the atoms it names
    (``j`` counted from atom ``first``) by its texts — every character of atom ``k`` with its
    probability, the separators certain. Only replaced atoms cut the reference text; the characters'
    positions follow from the atoms' spans and the replacements' lengths. With ``lines`` (each atom's line,
    a line latent), the separators inside a line take its atoms' probability too."""
    starts = np.asarray(answer.starts[first - 1 :], np.int64)
    ends = np.asarray(answer.ends[first - 1 :], np.int64)
    at = int(starts[0]) if start is None else start
    lengths = ends - starts
    pieces, position = [], at
    if texts is None:
        wrong = np.flatnonzero(~np.asarray(correct, bool)).tolist()
        texts = {j: wrong_atom(answer.atoms[first - 1 + j], rng) for j in wrong}
    for j in sorted(texts):
        replacement = texts[j]
        pieces += [answer.reference[position : starts[j]], replacement]
        position = int(ends[j])
        lengths[j] = len(replacement)
    pieces.append(answer.reference[position:])
    text = "".join(pieces)
    grown = lengths - (ends - starts)  # how much each atom's replacement moved the text after it
    out_starts = starts - at + np.concatenate(([0], np.cumsum(grown)[:-1]))
    char_probs = np.full(len(text), STRUCTURE_PROB)
    first_char = np.repeat(out_starts - (np.cumsum(lengths) - lengths), lengths)
    char_probs[first_char + np.arange(int(lengths.sum()))] = np.repeat(np.asarray(probs, np.float64), lengths)
    if lines is not None:  # a line's characters from its first atom's start to its last atom's end
        own = np.asarray(lines)[first - 1 :]
        heads = np.flatnonzero(np.diff(own, prepend=-1))
        tails = np.append(heads[1:], own.size) - 1
        for head, tail in zip(heads.tolist(), tails.tolist(), strict=True):
            char_probs[out_starts[head] : out_starts[tail] + lengths[tail]] = probs[head]
    out = _Segments()
    out.add(text, char_probs)
    return out


def shaped(body: _Segments, answer: Answer, params: SimulationParams, prompt: str) -> _Segments:
    """``body`` with the answer shapes the parameters plant (:mod:`~saltbench.inference.simulated.shapes`),
    drawn from the seed and the prompt apart from every other draw; ``body`` itself when every rate is 0."""
    rates = params.shape_rates
    if not any(rates.values()):
        return body
    rng = _rng(params.seed, "shapes", prompt)
    shapes = draw_shapes(rates, rng)
    if not shapes:
        return body
    rule = resolve_task(get_task(answer.task, answer.variant))
    text, probs = reshape("".join(body.texts), np.concatenate(body.probs), rule, shapes, rng)
    out = _Segments()
    out.add(text, probs)
    return out


@dataclass(frozen=True)
class Plan:
    """The planted draws of one response: which atoms are correct, their chosen-token probabilities, its
    shape (``answered``, ``truncated``: cut at ``cut`` of its body, ``no_fence``), whether a reasoning
    trace comes first and its length (``None``: it never ends), the seed of its wrong atoms, and each
    atom's line when the confidence latent is drawn per line."""

    answer: Answer
    style: str
    correct: np.ndarray
    probs: np.ndarray
    shape: str
    cut: float
    trace: bool
    wrong_seed: int
    trace_length: int | None = None
    lines: np.ndarray | None = None


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


__all__ = [
    "EOS_ID",
    "FALSE_ID",
    "TRUE_ID",
    "Oracle",
    "Plan",
    "SimulatedModel",
    "build_tokenizer",
    "load",
    "style_of",
    "token_scores",
    "wrong_atom",
]
