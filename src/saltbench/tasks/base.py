"""Shared task machinery: the fence, the prompt skeleton, few-shot rendering and the dataset frame.

Every SALT task is a deterministic function ``input -> reference`` plus a prompt builder and the
rule that splits an answer into *atoms* (docs/tasks.md §1.2, docs/evaluation.md §3):

* ``delimiter`` (a non-empty string) wins when set: each answer line is split on it;
* otherwise ``atom_regex`` is used: every ``finditer`` match on a line is one atom.

Prompts follow the structure of docs/tasks.md §1.3–1.5, in our own words::

    <task instruction line(s)>
    <fence instruction>            (FENCE_INSTRUCTION, identical in every prompt)
    [<reasoning instruction>]      (only for style="cot")
    Here are {k} examples:         (few-shot block, omitted when k == 0)
    Example 1:
    <input>
    Answer:
    ********
    <output>
    ********
    ...
    <task-specific tail with the test input>
"""

from __future__ import annotations

import abc
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar, cast

import polars as pl

from saltbench.core.contracts import DATASET
from saltbench.core.vocabulary import PromptStyle

FENCE = "********"
"""The answer fence: eight asterisks on a line by themselves before and after the answer."""

FENCE_INSTRUCTION = (
    "You may write anything you like before your answer if it helps you, but right before the answer "
    f"print '{FENCE}' on a line of its own, and right after the answer print '{FENCE}' again on a line "
    f"of its own. AN ANSWER THAT IS NOT ENCLOSED BY '{FENCE}' LINES BEFORE AND AFTER IT IS AUTOMATICALLY "
    "COUNTED AS WRONG."
)
"""One paragraph, no newline; the fence string appears three times, single-quoted (docs/tasks.md §1.4)."""


STYLE_INSTRUCTIONS: dict[str, str] = {
    "direct": "Give only the answer: print the fenced answer immediately, without any explanation.",
    "cot": (
        "First think through the problem step by step and write down your reasoning; when you are done, "
        "print the final answer between the fence lines."
    ),
}
"""Extra instruction line per prompt style, placed right after the fence instruction."""

NUMBER_PATTERN = r"[+-]?\d+(?:\.\d+)?"
"""A signed integer or decimal (the NUMERIC atom pattern, docs/tasks.md §3.2)."""

DK_ALTERNATIVES = r"<DK>|<DK|DK>|DK"
"""Don't-know markers accepted as atoms by the regex-split tasks, tried in this order."""

ROW_PATTERN = rf"\[\s*{NUMBER_PATTERN}(?:\s*,\s*{NUMBER_PATTERN})*\s*\]|{DK_ALTERNATIVES}"
"""One bracketed, comma-separated list of >= 1 numbers (a matrix row), or a DK marker."""

INTERVAL_PATTERN = rf"\[\s*{NUMBER_PATTERN}\s*,\s*{NUMBER_PATTERN}\s*\]|{DK_ALTERNATIVES}"
"""One bracketed pair of numbers (an interval), or a DK marker."""

DATASET_SCHEMA = DATASET.columns
"""Columns every dataset frame starts with, with their dtypes (:data:`saltbench.core.contracts.DATASET`)."""

DATASET_COLUMNS: tuple[str, ...] = tuple(DATASET_SCHEMA)


@dataclass(frozen=True)
class FewShot:
    """One demonstration: the rendered example input and its answer text."""

    input: str
    output: str


def render_few_shots(examples: tuple[FewShot, ...], n_shots: int | None) -> str:
    """Render the few-shot block (docs/tasks.md §1.5): ``""`` for k = 0, else lines ending with one ``\\n``.

    ``n_shots=None`` uses every example; a negative value is an error (upstream silently sliced).
    """
    if n_shots is not None and n_shots < 0:
        raise ValueError(f"n_shots must be >= 0, got {n_shots}")
    chosen = examples if n_shots is None else examples[:n_shots]
    if not chosen:
        return ""
    lines = [f"Here are {len(chosen)} examples:"]
    for i, ex in enumerate(chosen, start=1):
        lines += [f"Example {i}:", ex.input, "Answer:", FENCE, ex.output, FENCE]
    return "\n".join(lines) + "\n"


def sample_ids(task: str, n: int, seed: int, variant: str | None = None) -> list[str]:
    """Stable, human-readable sample ids ``{task}[-{variant}]-s{seed}-{i:05d}``."""
    stem = task if variant is None else f"{task}-{variant}"
    return [f"{stem}-s{seed}-{i:05d}" for i in range(n)]


def dataset_frame(rows: list[dict[str, str | None]]) -> pl.DataFrame:
    """Build a dataset frame with the standard column order and dtypes (extra columns kept after)."""
    if not rows:
        return pl.DataFrame(schema=DATASET_SCHEMA)
    frame = pl.DataFrame(rows)
    for col, dtype in DATASET_SCHEMA.items():
        if col not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype=dtype).alias(col))
        else:
            frame = frame.with_columns(pl.col(col).cast(dtype))
    extra = [c for c in frame.columns if c not in DATASET_SCHEMA]
    return frame.select([*DATASET_COLUMNS, *extra])


def check_n_seed(n: object, seed: object) -> tuple[int, int]:
    """Validate the common ``generate`` arguments: ``n >= 0`` and an integer ``seed``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    return n, seed


P = TypeVar("P")


def make_params(cls: type[P], params: Mapping[str, object]) -> P:
    """Instantiate the params dataclass ``cls``; unknown keys raise a ``ValueError`` naming them."""
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown} for {cls.__name__}; known: {sorted(known)}")
    return cast(Callable[..., P], cls)(**params)


class Task(abc.ABC):
    """A SALT task. Subclasses set the class attributes and implement the abstract methods.

    Attributes:
        slug: task name used everywhere in the workflow (``dna``, ``code``, ...).
        display_name: the paper's task name (``DNA Translation``, ...).
        label: the short name of tables and figures (``DNA``, ``MatMul``, ...; default: ``display_name``).
        legacy_names: the upstream class names found in the reproduction data's ``task`` column.
        delimiter: atom delimiter; wins over ``atom_regex`` when truthy.
        atom_regex: pattern whose matches are atoms (used only when ``delimiter`` is falsy).
        few_shots: default demonstrations, in order.
        variant: Code variant or Words subject this instance is bound to (``None`` when not applicable).
        params_class: frozen dataclass of the generator parameters (``generate(**params)`` keywords);
            its fields are what the config's ``datasets.params.{task}`` may set.
        param_names: the accepted parameter names, for tasks that validate values themselves.
    """

    slug: ClassVar[str]
    display_name: ClassVar[str]
    label: ClassVar[str] = ""
    legacy_names: ClassVar[tuple[str, ...]] = ()
    delimiter: str | None = " "
    atom_regex: str | None = None
    few_shots: tuple[FewShot, ...] = ()
    params_class: ClassVar[Any] = None
    param_names: ClassVar[frozenset[str] | None] = None

    def __init__(self, variant: str | None = None) -> None:
        self.variant = variant

    # -- to implement ---------------------------------------------------------------------------
    @abc.abstractmethod
    def solve(self, input: str) -> str:
        """The deterministic reference answer for ``input``."""

    @abc.abstractmethod
    def generate(self, n: int, seed: int, **params: object) -> pl.DataFrame:
        """``n`` samples, identical for the same ``seed`` and params (columns: DATASET_COLUMNS)."""

    @abc.abstractmethod
    def instruction(self) -> str:
        """The task-specific instruction line(s) that open the prompt (no trailing newline)."""

    @abc.abstractmethod
    def test_block(self, input: str) -> str:
        """The prompt's tail presenting the test input (task-specific layout, docs/tasks.md §2–7)."""

    # -- optional -------------------------------------------------------------------------------

    def corrupt_atom(self, atom: str, rng: random.Random) -> str | None:
        """A wrong but well-formed replacement of the answer atom ``atom`` (for the interventions).

        ``None`` (the default): the task declares no corruption, and a configuration that runs interventions
        on it is refused. The six built-in tasks have their rules in :mod:`saltbench.interventions`; a
        plugin task overrides this method to join the interventions.
        """
        return None

    # -- shared ---------------------------------------------------------------------------------

    @classmethod
    def short_label(cls) -> str:
        """:attr:`label`, or :attr:`display_name` when no label is set."""
        return cls.label or cls.display_name

    def check_params(self, params: Mapping[str, object]) -> None:
        """Raise ``ValueError`` naming any unknown generator parameter.

        With ``params_class``, also any invalid one.
        """
        if self.params_class is not None:
            make_params(self.params_class, params)
        elif self.param_names is not None:
            unknown = sorted(set(params) - self.param_names)
            if unknown:
                raise ValueError(
                    f"unknown {self.slug} parameter(s) {unknown}; known: {sorted(self.param_names)}"
                )

    def prompt(self, input: str, style: PromptStyle = "direct", n_shots: int | None = None) -> str:
        """Full prompt text: instruction, fence instruction, style line, few-shot block, test block."""
        if style not in STYLE_INSTRUCTIONS:
            raise ValueError(f"style must be one of {sorted(STYLE_INSTRUCTIONS)}, got {style!r}")
        head = "\n".join([self.instruction(), FENCE_INSTRUCTION, STYLE_INSTRUCTIONS[style]]) + "\n"
        return head + render_few_shots(self.few_shots, n_shots) + self.test_block(input)

    def render_answer(self, reference: str) -> str:
        """The answer as a model should write it: fence line, answer, fence line."""
        body = reference if reference.endswith("\n") else reference + "\n"
        return f"{FENCE}\n{body}{FENCE}"

    def worked_solution(self, input: str) -> str | None:
        """A short worked solution of ``input``, written before the fenced answer (``None``: none defined).

        It is the scratchpad of a reasoned answer (:meth:`render_reasoned_answer`): the intermediate steps a
        reasoning model writes down (partial products for the matrix tasks, the scanned positions for Words;
        docs/tiny-models.md §2). It never contains a fence, so scoring, which reads only the fenced answer,
        is unchanged.
        """
        return None

    def render_reasoned_answer(self, input: str, reference: str) -> str:
        """``worked_solution(input)``, a newline, then :meth:`render_answer` (just the answer without one)."""
        worked = self.worked_solution(input)
        answer = self.render_answer(reference)
        return answer if not worked else f"{worked}\n{answer}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(variant={self.variant!r})"
