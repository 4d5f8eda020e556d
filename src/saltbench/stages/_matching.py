"""Matching an imported response to its dataset row and prompt style (docs/backends.md §9.5).

A response is matched, in this order:

1. by its sample id (its own, or its ``input``'s), when it has one; its prompt, if given, must then hold the
   row's instruction in some style (a chat template wraps it) or the row's *shared tail* (below);
2. by the SHA-256 digest of its prompt among the run's instructions (every row, every style): the
   instruction exactly as saltbench builds it;
3. by the shared tail its prompt holds, and/or by its task ``input``. The shared tail of a row is its
   few-shot block followed by its test block (:meth:`saltbench.tasks.Task.test_block`): the part of a
   prompt that saltbench's template and the authors' have word for word (docs/tasks.md §1.3: only the
   instruction sentences, our style line and the Code function source differ). It finds the row of a
   chat-wrapped instruction of ours and of the authors' own prompts, with nothing to rewrite. It is found
   without comparing every row: per (task, variant) the tail is ``pre + input + post``, so the prompt is
   cut after the last occurrence of ``pre`` and before an occurrence of ``post``, and the piece between is
   looked up among the inputs. The task ``input`` (a response's ``input``) is looked up among the rows'
   inputs, narrowed by a task name when one is given; given both, they must name the same row.

Rows with the same tail or input (identical rows: three Code pairs of the reproduction data) are all
candidates; the import assigns the responses to them in file order. On the 1,748 rows of the reproduction
data, every tail and every input belongs to one row except those three pairs, and no input to two tasks.
The style is the response's ``style``, else the style whose instruction the prompt holds, else (an authors'
prompt has no style line) the run's only style.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from saltbench.core.vocabulary import STYLES
from saltbench.inference.imports import ImportedResponse
from saltbench.stages.generation import answered_rows, build_prompts
from saltbench.tasks import TASKS, get_task
from saltbench.tasks.base import render_few_shots

SENTINEL = "\x00"
"""Stands for the input when a task's shared tail is cut into ``pre`` and ``post``."""

Row = tuple[str, int]
"""(task, row index)."""


def prompt_digest(prompt: str) -> str:
    """The SHA-256 of a prompt's UTF-8 text (what prompt matching compares).

    >>> prompt_digest("abc")[:16]
    'ba7816bf8f01cfea'
    """
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def difference(ours: str, theirs: str) -> str:
    """Where the file's prompt ``theirs`` first differs from the row's instruction ``ours``, with a little of
    each from there. A chat template puts text before the instruction, so the instruction is looked for where
    its longest beginning occurs in the prompt (a binary search over prefix lengths, each one ``str.find``);
    the difference is reported at its character in the file's prompt and in the instruction.

    >>> print(difference("Given DNA = ACG", "<|user|>\\nGiven DNA = ACT<|end|>"))
    first difference at character 23 of the file's prompt (character 14 of the instruction, which starts
    at 9): file 'T<|end|>', dataset 'G'
    """
    low, high = 0, len(ours)  # the longest prefix of ours found in theirs has length in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if ours[:middle] in theirs else (low, middle - 1)
    start = theirs.find(ours[:low]) if low else 0
    at = start + low
    place = f"character {at} of the file's prompt"
    if start:
        place += f" (character {low} of the instruction, which starts at {start})"
    return f"first difference at {place}: file {theirs[at : at + 40]!r}, dataset {ours[low : low + 40]!r}"


@dataclass(frozen=True)
class Tail:
    """The shared tail of one (task, variant): ``pre + input + post``, and its rows by input."""

    task: str
    pre: str
    post: str
    rows: Mapping[str, list[int]]  # input -> row indices

    def find(self, prompt: str) -> list[int]:
        """The rows whose tail the prompt holds (the last occurrence of ``pre`` first)."""
        at = prompt.rfind(self.pre)
        while at >= 0:
            start = at + len(self.pre)
            end = prompt.find(self.post, start)
            while end >= 0:
                found = self.rows.get(prompt[start:end])
                if found:
                    return found
                end = prompt.find(self.post, end + 1)
            at = prompt.rfind(self.pre, 0, at)
        return []


def _tails(datasets: Mapping[str, pl.DataFrame], n_shots: int | None) -> list[Tail]:
    """One :class:`Tail` per (task, variant) of the datasets; a task whose test block does not hold its input
    once, as it is, has none (its rows are matched by sample id, instruction or input only)."""
    tails = []
    for task, frame in datasets.items():
        groups: dict[str | None, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for i, (variant, text) in enumerate(frame.select("variant", "input").iter_rows()):
            groups[variant][text].append(i)
        for variant, rows in groups.items():
            task_object = get_task(task, variant)
            tail = render_few_shots(task_object.few_shots, n_shots) + task_object.test_block(SENTINEL)
            parts = tail.split(SENTINEL)
            if len(parts) == 2:
                tails.append(Tail(task, parts[0], parts[1], dict(rows)))
    return tails


def task_slug(name: str) -> str | None:
    """The slug of a task named by its slug, its display name or an upstream class name (``DNAProblem``;
    a Code variant's, ``TwoSumProblem``); ``None`` for no task."""
    for slug, cls in TASKS.items():
        if name in (slug, cls.display_name, *cls.legacy_names):
            return slug
    return None


@dataclass(frozen=True)
class Match:
    """A response's row: the style (``None``: the response names none and its prompt is no instruction of
    ours), the task, and the candidate rows in dataset order (several: identical rows)."""

    style: str | None
    task: str
    rows: tuple[int, ...]


@dataclass
class DatasetRows:
    """The run's dataset rows, their instructions in every style, and the indexes a response is matched
    with (module docstring)."""

    datasets: Mapping[str, pl.DataFrame]
    answered: dict[str, int]  # task -> number of rows the run answers
    where: dict[str, Row]  # sample id -> (task, row index)
    instructions: Mapping[tuple[str, str], list[str]]  # (style, task) -> instruction per row
    digests: Mapping[str, list[tuple[str, str, int]]]  # instruction digest -> (style, task, row index)
    inputs: Mapping[str, list[Row]]  # task input -> rows
    tails: list[Tail]

    @classmethod
    def build(
        cls, datasets: Mapping[str, pl.DataFrame], n_shots: int | None, max_samples: int | None
    ) -> DatasetRows:
        where: dict[str, Row] = {}
        inputs: dict[str, list[Row]] = defaultdict(list)
        for task, frame in datasets.items():
            for i, (sample_id, text) in enumerate(frame.select("sample_id", "input").iter_rows()):
                if sample_id in where:
                    raise ValueError(
                        f"sample id {sample_id!r} is in the datasets of {where[sample_id][0]} and {task}"
                    )
                where[sample_id] = (task, i)
                inputs[text].append((task, i))
        instructions: dict[tuple[str, str], list[str]] = {
            (style, task): build_prompts(frame, style, n_shots)
            for style in STYLES
            for task, frame in datasets.items()
        }
        digests: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
        for (style, task), texts in instructions.items():
            for i, text in enumerate(texts):
                digests[prompt_digest(text)].append((style, task, i))
        answered = {task: answered_rows(frame, max_samples).height for task, frame in datasets.items()}
        return cls(datasets, answered, where, instructions, digests, inputs, _tails(datasets, n_shots))

    def by_tail(self, prompt: str) -> list[Row]:
        """The rows whose shared tail ``prompt`` holds."""
        return [(tail.task, i) for tail in self.tails for i in tail.find(prompt)]

    def instruction_style(self, prompt: str, task: str, i: int) -> str | None:
        """The style whose instruction of row ``i`` the prompt holds (``None``: none)."""
        return next((s for s in STYLES if self.instructions[(s, task)][i] in prompt), None)


def match(response: ImportedResponse, rows: DatasetRows, refuse: Any) -> Match:
    """The row of ``response`` (module docstring); ``refuse(reason)`` makes the error for one that matches
    none, or several that differ."""
    if response.style is not None and response.style not in STYLES:
        raise refuse(f"style {response.style!r} is not a prompt style ({', '.join(STYLES)})")
    if response.sample_id is not None:
        return _by_sample_id(response, rows, refuse)
    prompt = response.prompt
    exact = rows.digests.get(prompt_digest(prompt)) if prompt is not None else None
    if exact:
        exact_style, task = exact[0][:2]
        if response.style is not None and response.style != exact_style:
            raise refuse(f"style {response.style!r}, but the prompt is the {exact_style} prompt of its row")
        return Match(exact_style, task, tuple(i for _, _, i in exact))
    candidates = _candidates(response, rows, refuse)
    if not candidates:
        raise refuse("neither a sample id, a prompt nor an input: the response cannot be matched to a row")
    tasks = sorted({task for task, _ in candidates})
    if len(tasks) > 1:
        raise refuse(
            f"the prompt and input fit rows of several tasks ({', '.join(tasks)}): give the sample id, or "
            "the task in the input"
        )
    task, first = candidates[0]
    style = response.style
    found = rows.instruction_style(prompt, task, first) if prompt is not None else None
    if style is not None and found is not None and style != found:
        raise refuse(f"style {style!r}, but the prompt is the {found} prompt of its row")
    return Match(style or found, task, tuple(sorted(i for _, i in candidates)))


def _candidates(response: ImportedResponse, rows: DatasetRows, refuse: Any) -> list[Row]:
    """The rows of a response without sample id and without an exact instruction: by the shared tail its
    prompt holds and/or its task input (both given: the rows both name)."""
    by_input: list[Row] | None = None
    if response.task_input is not None:
        by_input = rows.inputs.get(response.task_input, [])
        if response.input_task is not None:
            slug = task_slug(response.input_task)
            if slug is None:
                raise refuse(f"the input's task {response.input_task!r} names no task (slug, name or class)")
            by_input = [row for row in by_input if row[0] == slug]
        if not by_input:
            raise refuse(f"the input {response.task_input[:60]!r} is no row's input in the run's datasets")
    if response.prompt is None:
        return by_input or []
    by_prompt = rows.by_tail(response.prompt)
    if not by_prompt:
        raise refuse(
            "the prompt matches no dataset row's prompt in any style: it is no instruction saltbench builds "
            "(compared by digest) and holds no row's few-shot block and test block (as the authors' prompts "
            "do; datasets.n_shots must be the prompts' number of examples)"
        )
    if by_input is None:
        return by_prompt
    both = [row for row in by_prompt if row in by_input]
    if not both:
        raise refuse("the prompt and the input name different dataset rows")
    return both


def _by_sample_id(response: ImportedResponse, rows: DatasetRows, refuse: Any) -> Match:
    """The row of a response with a sample id; its prompt, if given, must hold the row's instruction in some
    style or its shared tail; its input, if given, must be the row's."""
    sample_id = response.sample_id or ""
    if sample_id not in rows.where:
        tasks = ", ".join(rows.datasets)
        raise refuse(f"sample id {sample_id!r} is not in the run's datasets (tasks {tasks})")
    task, i = rows.where[sample_id]
    if response.task_input is not None and response.task_input != rows.datasets[task]["input"][i]:
        raise refuse(f"the input is not the input of sample {sample_id!r}")
    style = response.style
    prompt = response.prompt
    if prompt is None:
        return Match(style, task, (i,))
    found = rows.instruction_style(prompt, task, i)
    if found is None and (task, i) not in rows.by_tail(prompt):
        ours = rows.instructions[(style or STYLES[0], task)][i]
        which = f"the row's {style} prompt" if style else "the row's prompt in every style"
        raise refuse(
            f"the prompt differs from {which} ({difference(ours, prompt)}), and holds not its few-shot "
            "block and test block either"
        )
    if style is not None and found is not None and style != found:
        raise refuse(f"style {style!r}, but the prompt is the {found} prompt of its row")
    return Match(style or found, task, (i,))


def resolve_style(found: Match, styles: Sequence[str], refuse: Any) -> str:
    """The style of a match: its own, else the run's only style; refused when the run has several."""
    if found.style is not None:
        return found.style
    if len(styles) != 1:
        raise refuse(
            f"no style, and no instruction of saltbench's in the prompt (the authors' prompts have no style "
            f"line), and the run has prompt styles {list(styles)}: give 'style'"
        )
    return styles[0]


__all__ = ["DatasetRows", "Match", "difference", "match", "prompt_digest", "resolve_style", "task_slug"]
