"""What the simulated model writes, apart from the model class (docs/simulation.md §3): its byte-level
tokenizer and special token ids, the :class:`Oracle` that finds the dataset row a prompt asks about, the
planted answer body and its shapes, each token's stored scores, and the :class:`Plan` of a response.
:mod:`~saltbench.inference.simulated.model` (the backend), :mod:`~saltbench.inference.simulated.draws` and
:mod:`~saltbench.inference.simulated.second_pass` build on it, so none of them imports another's.
"""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from saltbench.evaluation import decompose_clean, resolve_task
from saltbench.inference.records import TOP_K, TokenScores
from saltbench.inference.simulated.params import STRUCTURE_PROB, SimulationParams
from saltbench.inference.simulated.shapes import draw_shapes, reshape
from saltbench.tasks import get_task
from saltbench.tasks.base import STYLE_INSTRUCTIONS

if TYPE_CHECKING:
    pass


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


__all__ = [
    "EOS_ID",
    "FALSE_ID",
    "TRUE_ID",
    "Answer",
    "Oracle",
    "Plan",
    "build_tokenizer",
    "style_of",
    "token_scores",
    "wrong_atom",
]
