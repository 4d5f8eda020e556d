"""Training data: SALT prompt/answer pairs from the task generators, encoding, batching, disjointness.

A training example is one dataset row rendered exactly as inference will see it::

    text   = render_prompt(tokenizer, task.prompt(input)) + task.render_answer(reference) + "</s>"
    labels = -100 on the rendered prompt, the token ids on the answer and the end token

so the loss covers both fence lines, the answer and ``</s>`` only (the prompt ends with ``<sep>``).

Seeds: the rows of task ``t`` come from ``generate(n_t, derive_seed("train", seed, t, variant), **params)``.
Evaluation datasets use the plain config seed, so their generator streams differ; since small input
spaces can still collide, :func:`build_training_pairs` callers drop every evaluation input and then
check with :func:`assert_disjoint`. The mixture itself (:class:`~saltbench.training.recipe.TaskMix`,
:func:`~saltbench.training.recipe.parse_tasks_config`) is part of the torch-free recipe module.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from transformers import PreTrainedTokenizerFast

from saltbench.core.seeds import derive_seed
from saltbench.core.vocabulary import Scratchpad
from saltbench.io import read_table
from saltbench.training.recipe import TaskMix, parse_tasks_config
from saltbench.training.tokenizer import render_prompts

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100
"""Label value excluded from the loss (the ``transformers`` convention)."""


def task_train_seed(seed: int, mix: TaskMix) -> int:
    """Generator seed of one task's training rows: ``derive_seed("train", seed, task, variant)``."""
    return derive_seed("train", seed, mix.task, mix.variant or "")


def build_training_pairs(
    tasks_cfg: Mapping[str, Any] | Sequence[TaskMix],
    n_per_task: int,
    seed: int,
    *,
    styles: Sequence[str] = ("direct",),
    scratchpad: Scratchpad = "never",
) -> pl.DataFrame:
    """Generate the training rows of every task with seeds disjoint from the evaluation seed.

    Returns a frame with the dataset columns (``sample_id, task, variant, input, reference``) plus
    ``style`` (drawn uniformly from ``styles`` per row, ``numpy.random.default_rng(derive_seed("styles",
    seed, task, variant))``), ``prompt`` (the full SALT prompt in that style) and ``answer``
    (``task.render_reasoned_answer`` where ``scratchpad`` asks for the worked solution — ``always``, or
    ``cot`` on a ``cot`` row — else ``task.render_answer``). The rows and styles do not depend on
    ``scratchpad``, so two families that differ only in it see the same prompts.
    Task ``t`` contributes ``round(weight_t * n_per_task)`` rows (tasks with weight 0 are skipped).
    """
    from saltbench.tasks import get_task  # deferred: the task registry imports every task module

    if isinstance(n_per_task, bool) or not isinstance(n_per_task, int) or n_per_task < 1:
        raise ValueError(f"n_per_task must be a positive integer, got {n_per_task!r}")
    frames: list[pl.DataFrame] = []
    for mix in parse_tasks_config(tasks_cfg):
        n = round(mix.weight * n_per_task)
        if n == 0:
            continue
        generator = get_task(mix.task, mix.variant)
        rows = generator.generate(n, task_train_seed(seed, mix), **dict(mix.params))
        style_rng = np.random.default_rng(derive_seed("styles", seed, mix.task, mix.variant or ""))
        row_styles = [styles[i] for i in style_rng.integers(len(styles), size=rows.height)]
        bound: dict[str | None, Any] = {}  # task objects bound to each variant
        prompts: list[str] = []
        answers: list[str] = []
        for inp, ref, variant, style in zip(rows["input"], rows["reference"], rows["variant"], row_styles):
            task = bound.get(variant)
            if task is None:
                task = bound[variant] = get_task(mix.task, variant)
            prompts.append(task.prompt(inp, style=style))
            reasoned = scratchpad == "always" or (scratchpad == "cot" and style == "cot")
            answers.append(task.render_reasoned_answer(inp, ref) if reasoned else task.render_answer(ref))
        frames.append(
            rows.select(["sample_id", "task", "variant", "input", "reference"]).with_columns(
                pl.Series("style", row_styles, dtype=pl.String),
                pl.Series("prompt", prompts, dtype=pl.String),
                pl.Series("answer", answers, dtype=pl.String),
            )
        )
    if not frames:
        raise ValueError(f"every task weight rounds to 0 rows with n_per_task={n_per_task}")
    return pl.concat(frames, how="vertical")


def task_alphabet_corpus() -> list[str]:
    """One full prompt per task and Code variant / Words subject: covers every task's prompt characters.

    Used as extra corpus for the tokenizer so that the vocabulary holds the characters of all six
    tasks (``⊗``, ``·``, the logic connectives ...) whatever the training mixture.
    """
    from saltbench.tasks import CODE_VARIANTS, TASKS, WORDS_SUBJECTS, get_task

    variants: dict[str, tuple[str | None, ...]] = {
        "code": tuple(CODE_VARIANTS),
        "words": tuple(WORDS_SUBJECTS),
    }
    texts: list[str] = []
    for slug in TASKS:
        for variant in variants.get(slug, (None,)):
            task = get_task(slug, variant)
            texts.append(task.prompt(task.few_shots[0].input if task.few_shots else ""))
    return texts


def load_eval_inputs(paths: Iterable[str | Path]) -> frozenset[str]:
    """The ``input`` column of every evaluation dataset file (parquet) in ``paths``."""
    inputs: set[str] = set()
    for path in paths:
        frame = read_table(path, "dataset", columns=["input"])
        inputs.update(v for v in frame["input"].to_list() if v is not None)
    return frozenset(inputs)


def drop_inputs(pairs: pl.DataFrame, exclude: Iterable[str]) -> pl.DataFrame:
    """``pairs`` without the rows whose ``input`` is in ``exclude`` (logged when any are dropped)."""
    excluded = pl.Series("exclude", list(set(exclude)), dtype=pl.String)
    if excluded.is_empty():
        return pairs
    kept = pairs.filter(~pl.col("input").is_in(excluded.implode()))
    if kept.height != pairs.height:
        logger.info("dropped %d training rows whose input is an evaluation input", pairs.height - kept.height)
    return kept


def assert_disjoint(train_inputs: Iterable[str], eval_inputs: Iterable[str]) -> None:
    """Raise ``ValueError`` if any evaluation input also occurs among the training inputs."""
    shared = set(train_inputs).intersection(eval_inputs)
    if shared:
        examples = sorted(shared)[:3]
        raise ValueError(
            f"{len(shared)} evaluation input(s) also occur in the training data, e.g. {examples!r}"
        )


@dataclass(frozen=True)
class EncodedPairs:
    """Token ids of rendered training examples, concatenated (CSR layout).

    Example ``i`` is ``ids[offsets[i]:offsets[i + 1]]``; its first ``prompt_lengths[i]`` tokens are
    the rendered prompt (no loss), the rest the answer and ``</s>`` (loss).
    """

    ids: np.ndarray
    offsets: np.ndarray
    prompt_lengths: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1


def encode_pairs(pairs: pl.DataFrame, tokenizer: PreTrainedTokenizerFast) -> EncodedPairs:
    """Render every prompt through the chat template, append ``answer + eos``, tokenise.

    Raises ``ValueError`` if any training text contains a character outside the vocabulary.
    """
    rendered = render_prompts(tokenizer, pairs["prompt"].to_list())
    answers = [a + tokenizer.eos_token for a in pairs["answer"].to_list()]
    prompt_ids = tokenizer(rendered, add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(answers, add_special_tokens=False)["input_ids"]
    prompt_lengths = np.fromiter((len(p) for p in prompt_ids), dtype=np.int64, count=len(prompt_ids))
    answer_lengths = np.fromiter((len(a) for a in answer_ids), dtype=np.int64, count=len(answer_ids))
    lengths = prompt_lengths + answer_lengths
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    pieces = itertools.chain.from_iterable(itertools.chain.from_iterable(zip(prompt_ids, answer_ids)))
    ids = np.fromiter(pieces, dtype=np.int64, count=int(offsets[-1]))
    unk = tokenizer.unk_token_id
    if unk is not None and bool((ids == unk).any()):
        row = int(np.searchsorted(offsets, int(np.argmax(ids == unk)), side="right") - 1)
        raise ValueError(f"training example {row} has a character outside the vocabulary: {rendered[row]!r}")
    return EncodedPairs(ids=ids, offsets=offsets, prompt_lengths=prompt_lengths)


def length_bucketed_batches(
    lengths: np.ndarray, token_budget: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """One epoch of batches: indices grouped by similar length, each padded batch within the budget.

    Examples are sorted by length (ties broken by a random permutation), cut greedily into batches
    with ``batch_size * max_length <= token_budget``, and the batch order is shuffled. Deterministic
    given the state of ``rng``.

    Raises:
        ValueError: a single example is longer than ``token_budget``.
    """
    if token_budget < 1:
        raise ValueError(f"token_budget must be >= 1, got {token_budget}")
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and int(lengths.max()) > token_budget:
        raise ValueError(f"an example has {int(lengths.max())} tokens, more than token_budget={token_budget}")
    order = rng.permutation(lengths.size)
    order = order[np.argsort(lengths[order], kind="stable")]
    batches: list[np.ndarray] = []
    start = 0
    sorted_lengths = lengths[order]
    while start < order.size:
        # sorted ascending: the batch's max length is its last element; find the largest end that fits
        window = token_budget // max(int(sorted_lengths[start]), 1)  # no batch holds more examples
        ends = np.arange(start + 1, min(order.size, start + window) + 1)
        fits = (ends - start) * sorted_lengths[ends - 1] <= token_budget
        end = int(ends[fits][-1]) if fits.any() else start + 1
        batches.append(order[start:end])
        start = end
    return [batches[i] for i in rng.permutation(len(batches))]


def collate(
    encoded: EncodedPairs, index: np.ndarray, pad_id: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right-padded ``(input_ids, attention_mask, labels)`` int64 arrays for the examples ``index``."""
    starts = encoded.offsets[index]
    lengths = encoded.offsets[index + 1] - starts
    width = int(lengths.max())
    cols = np.arange(width)
    valid = cols[None, :] < lengths[:, None]
    positions = np.where(valid, starts[:, None] + cols[None, :], 0)
    input_ids = np.where(valid, encoded.ids[positions], pad_id)
    answer = valid & (cols[None, :] >= encoded.prompt_lengths[index][:, None])
    labels = np.where(answer, input_ids, IGNORE_INDEX)
    return input_ids, valid.astype(np.int64), labels


__all__ = [
    "IGNORE_INDEX",
    "EncodedPairs",
    "TaskMix",
    "assert_disjoint",
    "build_training_pairs",
    "collate",
    "drop_inputs",
    "encode_pairs",
    "length_bucketed_batches",
    "load_eval_inputs",
    "parse_tasks_config",
    "task_alphabet_corpus",
    "task_train_seed",
]
