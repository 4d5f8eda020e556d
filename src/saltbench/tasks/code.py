"""Code (docs/tasks.md §3): predict what a small, deterministic Python function prints for a call.

Seven variants, each a reference function whose *source text* (our own, below) is shown in the prompt.
Variant slug (upstream class) — semantics — atom rule:

* ``two_sum`` (TwoSumProblem) — one pass with a value -> index map: the first ``i`` whose partner
  ``target - nums[i]`` was already seen returns ``[seen[partner], i]``; later duplicates overwrite
  earlier indices; ``[]`` when no pair exists — delimiter ``","``.
* ``edit_distance`` (EditDistanceProblem) — Levenshtein distance with unit costs — NUMBER regex.
* ``rotate_matrix`` (RotateProblem) — 90° clockwise rotation (transpose of the row-reversed matrix)
  — ROW regex (one atom per matrix row).
* ``insert_interval`` (InsertProblem) — LeetCode 57: keep the intervals ending before the new start,
  merge those starting at or before the new end (touching intervals merge) by min/max, keep the rest;
  ints and floats stay as given (``[[1, 4.6], ...]``) — INTERVAL regex.
* ``next_permutation`` (NextPermutationProblem) — next lexicographic arrangement (pivot = last ``i``
  with ``a[i] < a[i+1]``, swap with the rightmost larger, reverse the suffix); the last permutation
  wraps to sorted — delimiter ``","``.
* ``reverse_words`` (ReverseWordsProblem) — reverse each whitespace-separated word, join with single
  spaces (leading, trailing and repeated spaces vanish) — delimiter ``" "``.
* ``rotate_array`` (RotateArrayProblem) — rotate right by ``k % n``; ``[]`` stays ``[]`` —
  delimiter ``","``.

The task input is the Python-literal tuple of positional arguments (``repr`` of a tuple, so 1-tuples
carry a trailing comma, e.g. ``([[1, 2], [3, 4]],)``); the reference is ``str(function(*args))`` — for
``reverse_words`` the returned string itself.

The inputs are generated procedurally (the authors' paper inputs were hand-written, docs/tasks.md §8.3),
with sizes covering the paper ranges: 4-element Two Sum lists with one guaranteed pair; Edit Distance
word pairs of length 3–11 at distance 1–8; ``n x n`` matrices, ``n`` in 1..11; 2–12 existing intervals
(some with one-decimal endpoints) and 2–12 output intervals; permutations of length 3–25 with negative
values; arrays of length 3–167 with ``k`` in ``0..10n``; sentences of 1–29 words with leading, trailing
and repeated spaces and apostrophes.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import random
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from saltbench.core.seeds import derive_seed
from saltbench.tasks.base import (
    FENCE_INSTRUCTION,
    INTERVAL_PATTERN,
    NUMBER_PATTERN,
    ROW_PATTERN,
    STYLE_INSTRUCTIONS,
    FewShot,
    PromptStyle,
    Task,
    check_n_seed,
    dataset_frame,
    make_params,
    render_few_shots,
    sample_ids,
)

# ---------------------------------------------------------------------------------------------------------
# Reference functions. Their source text is embedded verbatim in the prompts: keep them short, typed and
# free of comments and docstrings (semantics are documented in the module docstring above).
# ---------------------------------------------------------------------------------------------------------


def two_sum(nums: list[int], target: int) -> list[int]:
    seen: dict[int, int] = {}
    for index, value in enumerate(nums):
        partner = target - value
        if partner in seen:
            return [seen[partner], index]
        seen[value] = index
    return []


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            substitution = previous[j - 1] + (char_a != char_b)
            current.append(min(previous[j] + 1, current[j - 1] + 1, substitution))
        previous = current
    return previous[-1]


def rotate_matrix(matrix: list[list[int]]) -> list[list[int]]:
    return [list(column) for column in zip(*reversed(matrix))]


def insert_interval(intervals: list[list[float]], new_interval: list[float]) -> list[list[float]]:
    start, end = new_interval
    result: list[list[float]] = []
    i = 0
    while i < len(intervals) and intervals[i][1] < start:
        result.append(intervals[i])
        i += 1
    while i < len(intervals) and intervals[i][0] <= end:
        start = min(start, intervals[i][0])
        end = max(end, intervals[i][1])
        i += 1
    result.append([start, end])
    result.extend(intervals[i:])
    return result


def next_permutation(values: list[int]) -> list[int]:
    result = list(values)
    pivot = len(result) - 2
    while pivot >= 0 and result[pivot] >= result[pivot + 1]:
        pivot -= 1
    if pivot >= 0:
        successor = len(result) - 1
        while result[successor] <= result[pivot]:
            successor -= 1
        result[pivot], result[successor] = result[successor], result[pivot]
    result[pivot + 1 :] = reversed(result[pivot + 1 :])
    return result


def reverse_words(text: str) -> str:
    return " ".join(word[::-1] for word in text.split())


def rotate_array(values: list[int], k: int) -> list[int]:
    if not values:
        return []
    cut = len(values) - k % len(values)
    return values[cut:] + values[:cut]


# ---------------------------------------------------------------------------------------------------------
# Vocabulary for the word-based generators (our own list; every entry has 3–11 letters).
# ---------------------------------------------------------------------------------------------------------
WORDS: tuple[str, ...] = tuple(
    """
    sunday saturday monday friday horse house mouse kitten sitting mitten active action money monkey honey
    invention creation intention execution lion crocodile police school small male world war word
    artificial superficial night mighty light bright brown back book look daughter father mother brother
    sister water smaller hospital hostility garden gardener paper airplane plane planet plant market marker
    bottle battle cattle little middle river rover silver sliver winter summer spring string strong stone
    store storm table cable stable window widow shadow meadow forest finest honest island inland letter
    better butter bitter matter pattern lantern eastern western station nation notion motion emotion
    promotion teacher preacher picture mixture culture vulture captain certain curtain mountain fountain
    kitchen chicken thicken pocket rocket socket jacket blanket basket biscuit circuit dinner winner
    thinner planner banner manner engine origin orange arrange danger dancer answer anchor doctor factor
    tractor visitor elephant element elegant telephone microphone keyboard cupboard library liberty
    quality quantity science silence village violence journey morning evening weather feather leather
    computer commuter language luggage problem program progress process
    """.split()
)

_SHORT_WORDS: tuple[str, ...] = tuple(
    "a I an the is it to of in on at by we me my you he she they was are be do go no so up if or and for "
    "not but can all one two cat dog sat mat fox sun day old new big".split()
)
_CONTRACTIONS: tuple[str, ...] = (
    "it's",
    "don't",
    "I'm",
    "can't",
    "won't",
    "I'd",
    "let's",
    "we're",
    "they've",
    "isn't",
    "you'll",
)


# ---------------------------------------------------------------------------------------------------------
# Procedural argument generators (one call = one task input; all randomness from ``rng``).
# ---------------------------------------------------------------------------------------------------------
def _args_two_sum(rng: random.Random) -> tuple[object, ...]:
    """Four distinct values with exactly one pair summing to the target."""
    while True:
        nums = rng.sample(range(1, 61), 4)
        if rng.random() < 0.6:
            nums.sort()
        i, j = sorted(rng.sample(range(4), 2))
        target = nums[i] + nums[j]
        pairs = [(p, q) for p in range(4) for q in range(p + 1, 4) if nums[p] + nums[q] == target]
        if len(pairs) == 1:
            return (nums, target)


def _args_edit_distance(rng: random.Random) -> tuple[object, ...]:
    """Two distinct vocabulary words at edit distance 1..8."""
    while True:
        a, b = rng.sample(WORDS, 2)
        if edit_distance(a, b) <= 8:
            return (a, b)


def _args_rotate_matrix(rng: random.Random) -> tuple[object, ...]:
    """An ``n x n`` matrix, ``n`` in 1..11: consecutive integers or random values in -20..40."""
    n = rng.randint(1, 11)
    if rng.random() < 0.3:
        first = rng.randint(-10, 5)
        return ([[first + r * n + c for c in range(n)] for r in range(n)],)
    return ([[rng.randint(-20, 40) for _ in range(n)] for _ in range(n)],)


def _number(tenths: int, decimal: bool) -> float | int:
    """``tenths / 10`` (an int when whole) in decimal mode, else ``tenths`` itself."""
    if not decimal:
        return tenths
    return tenths // 10 if tenths % 10 == 0 else tenths / 10


def _args_insert_interval(rng: random.Random) -> tuple[object, ...]:
    """2–12 sorted, disjoint intervals and a new one; output 2–12 intervals.

    One row in eight has one-decimal endpoints everywhere, another one in eight only in the new
    interval (as in the paper's ``[4.4, 4.7]`` rows); whole tenths print as ints (``[3.9, 4]``).
    """
    while True:
        count = rng.randint(2, 12)
        mode = rng.random()
        decimal_all, decimal_new = mode < 0.125, 0.125 <= mode < 0.25
        span = rng.randint(3 * count, 12 * count)
        ends = sorted(rng.sample(range(span + 1), 2 * count))
        if rng.random() < 0.3:  # an occasional single-point interval such as [42, 42]
            k = rng.randrange(count)
            ends[2 * k + 1] = ends[2 * k]
        intervals = [[_number(e, decimal_all) for e in ends[2 * k : 2 * k + 2]] for k in range(count)]
        scale = 10 if decimal_new else 1
        lo, hi = sorted(rng.sample(range(-2 * scale, (span + 3) * scale), 2))
        if rng.random() < 0.1:
            hi = lo
        new = [_number(lo, decimal_all or decimal_new), _number(hi, decimal_all or decimal_new)]
        if 2 <= len(insert_interval(intervals, new)) <= 12:
            return (intervals, new)


def _args_next_permutation(rng: random.Random) -> tuple[object, ...]:
    """Length 3–25, values in -20..59 (negatives included, duplicates possible), varied orderings."""
    length = rng.randint(3, 25)
    if rng.random() < 0.5:
        values = rng.sample(range(-20, 60), length)
    else:
        values = [rng.randint(-20, 59) for _ in range(length)]
    mode = rng.random()
    if mode < 0.15:
        values.sort(reverse=True)
    elif mode < 0.45:
        values.sort()
        for _ in range(rng.randint(1, 2)):
            p, q = sorted(rng.sample(range(max(0, length - 5), length), 2))
            values[p], values[q] = values[q], values[p]
    if min(values) >= 0 and rng.random() < 0.5:
        values[rng.randrange(length)] = -rng.randint(1, 20)
    return (values,)


def _args_rotate_array(rng: random.Random) -> tuple[object, ...]:
    """Length 3–167 (log-uniform), ``k`` in ``0..n-1`` (70 %) or ``n..10n``; runs or random values."""
    length = min(167, max(3, round(math.exp(rng.uniform(math.log(3), math.log(168))))))
    if rng.random() < 0.5:
        first = rng.randint(-10, 20)
        values = list(range(first, first + length))
    else:
        values = [rng.randint(-50, 999) for _ in range(length)]
    k = rng.randint(0, length - 1) if rng.random() < 0.7 else rng.randint(length, 10 * length)
    return (values, k)


def _args_reverse_words(rng: random.Random) -> tuple[object, ...]:
    """1–29 words (vocabulary, short words, contractions), irregular spacing around and between them."""
    count = rng.randint(1, 29)
    words: list[str] = []
    for _ in range(count):
        pick = rng.random()
        pool = _CONTRACTIONS if pick < 0.08 else _SHORT_WORDS if pick < 0.5 else WORDS
        word = rng.choice(pool)
        if rng.random() < 0.05:
            word += ","
        words.append(word)
    if rng.random() < 0.6:
        words[0] = words[0][:1].upper() + words[0][1:]
    gaps = [" " * (1 if rng.random() < 0.85 else rng.randint(2, 4)) for _ in range(count - 1)]
    lead = " " * (rng.randint(1, 4) if rng.random() < 0.5 else 0)
    tail = " " * (rng.randint(1, 3) if rng.random() < 0.3 else 0)
    body = words[0] + "".join(gap + word for gap, word in zip(gaps, words[1:]))
    return (lead + body + tail,)


# ---------------------------------------------------------------------------------------------------------
# Variant registry
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CodeVariant:
    """Everything that distinguishes one Code variant."""

    slug: str
    display_name: str
    legacy_name: str
    function: Callable[..., object]
    make_args: Callable[[random.Random], tuple[object, ...]]
    few_shots: tuple[FewShot, ...]
    delimiter: str | None = None
    atom_regex: str | None = None

    @property
    def function_name(self) -> str:
        return self.function.__name__

    @property
    def source(self) -> str:
        """The reference function's source text as shown in the prompt (dedented, stripped)."""
        return _function_source(self.function)


@functools.cache
def _function_source(function: Callable[..., object]) -> str:
    return textwrap.dedent(inspect.getsource(function)).strip()


_VARIANT_LIST: tuple[CodeVariant, ...] = (
    CodeVariant(
        "two_sum",
        "Two Sum",
        "TwoSumProblem",
        two_sum,
        _args_two_sum,
        (FewShot("([2, 7, 11, 15], 9)", "[0, 1]"), FewShot("([3, 2, 4], 6)", "[1, 2]")),
        delimiter=",",
    ),
    CodeVariant(
        "edit_distance",
        "Edit Distance",
        "EditDistanceProblem",
        edit_distance,
        _args_edit_distance,
        (FewShot("('kitten', 'sitting')", "3"), FewShot("('horse', 'ros')", "3")),
        atom_regex=NUMBER_PATTERN,
    ),
    CodeVariant(
        "rotate_matrix",
        "Rotate Matrix",
        "RotateProblem",
        rotate_matrix,
        _args_rotate_matrix,
        (FewShot("([[1, 2], [3, 4]],)", "[[3, 1], [4, 2]]"), FewShot("([[1]],)", "[[1]]")),
        atom_regex=ROW_PATTERN,
    ),
    CodeVariant(
        "insert_interval",
        "Insert Interval",
        "InsertProblem",
        insert_interval,
        _args_insert_interval,
        (
            FewShot("([[1, 3], [6, 9]], [2, 5])", "[[1, 5], [6, 9]]"),
            FewShot("([[1, 2], [3, 5], [6, 7]], [4, 8])", "[[1, 2], [3, 8]]"),
        ),
        atom_regex=INTERVAL_PATTERN,
    ),
    CodeVariant(
        "next_permutation",
        "Next Permutation",
        "NextPermutationProblem",
        next_permutation,
        _args_next_permutation,
        (FewShot("([1, 2, 3],)", "[1, 3, 2]"), FewShot("([3, 2, 1],)", "[1, 2, 3]")),
        delimiter=",",
    ),
    CodeVariant(
        "reverse_words",
        "Reverse Words",
        "ReverseWordsProblem",
        reverse_words,
        _args_reverse_words,
        (
            FewShot("('hello world',)", "olleh dlrow"),
            FewShot("('Let's take LeetCode contest',)", "s'teL ekat edoCteeL tsetnoc"),
        ),
        delimiter=" ",
    ),
    CodeVariant(
        "rotate_array",
        "Rotate Array",
        "RotateArrayProblem",
        rotate_array,
        _args_rotate_array,
        (FewShot("([1, 2, 3, 4], 1)", "[4, 1, 2, 3]"), FewShot("([1, 2, 3, 4], 2)", "[3, 4, 1, 2]")),
        delimiter=",",
    ),
)

CODE_VARIANT_SPECS: dict[str, CodeVariant] = {v.slug: v for v in _VARIANT_LIST}
"""Variant slug -> :class:`CodeVariant`, in the paper's order."""

CODE_VARIANTS: tuple[str, ...] = tuple(CODE_VARIANT_SPECS)
"""The seven variant slugs, in the paper's order."""

CODE_VARIANT_NAMES: dict[str, str] = {v.slug: v.display_name for v in _VARIANT_LIST}
"""Variant slug -> the paper's display name (``two_sum`` -> ``Two Sum``)."""

CODE_VARIANT_LEGACY: dict[str, str] = {v.legacy_name: v.slug for v in _VARIANT_LIST}
"""Upstream class name (the reproduction data's ``task`` value) -> variant slug."""


def resolve_code_variant(name: str) -> str:
    """The variant slug for a slug, a display name (``Two Sum``) or a legacy class name (``TwoSumProblem``).

    Raises:
        ValueError: unknown name (the message lists the slugs).
    """
    if name in CODE_VARIANT_SPECS:
        return name
    if name in CODE_VARIANT_LEGACY:
        return CODE_VARIANT_LEGACY[name]
    for slug, display in CODE_VARIANT_NAMES.items():
        if name == display:
            return slug
    raise ValueError(f"unknown code variant {name!r}; known variants: {', '.join(CODE_VARIANTS)}")


_SINGLE_STRING_CALL = re.compile(r"\A\s*\(\s*(['\"])(?P<text>.*)\1\s*,?\s*\)\s*\Z", re.DOTALL)


def parse_code_input(input: str) -> tuple[object, ...]:
    """The positional arguments encoded by a Code input (a Python-literal tuple).

    Falls back to a tolerant reading of a one-string call ``('...',)`` whose string is not a valid
    literal — the upstream few-shot ``('Let's take LeetCode contest',)`` (docs/compatibility.md §1.14): the
    text between the outermost matching quotes is taken as is.

    Raises:
        ValueError: the input is neither a literal tuple nor a one-string call.
    """
    try:
        value = ast.literal_eval(input)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        match = _SINGLE_STRING_CALL.match(input)
        if match is None:
            raise ValueError(f"code input is not a Python-literal argument tuple: {input[:80]!r}") from None
        return (match.group("text"),)
    if not isinstance(value, tuple):
        kind = type(value).__name__
        raise ValueError(f"code input must be a tuple of arguments, got {kind}: {input[:80]!r}")
    return value


@dataclass(frozen=True)
class CodeParams:
    """Generator parameters: ``variants`` (slugs or names) cycled in the given order; ``None`` = all."""

    variants: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.variants is None:
            return
        if isinstance(self.variants, str) or not isinstance(self.variants, Sequence):
            raise ValueError(f"variants must be a sequence of variant names, got {self.variants!r}")
        slugs = tuple(resolve_code_variant(v) for v in self.variants)
        if not slugs:
            raise ValueError("variants must not be empty")
        if len(set(slugs)) != len(slugs):
            raise ValueError(f"variants must not repeat, got {list(self.variants)}")
        object.__setattr__(self, "variants", slugs)


class CodeTask(Task):
    """Code: predict the printed output of a reference function for a given call.

    ``CodeTask()`` can only generate (mixed variants); prompts and solving need a variant, e.g.
    ``CodeTask("two_sum")``. The atom rule (``delimiter`` / ``atom_regex``) and the few-shots are set per
    instance from the variant.
    """

    slug = "code"
    display_name = "Code"
    label = "Code"
    legacy_names = tuple(v.legacy_name for v in _VARIANT_LIST)
    params_class = CodeParams

    def __init__(self, variant: str | None = None) -> None:
        super().__init__(None if variant is None else resolve_code_variant(variant))
        spec = CODE_VARIANT_SPECS.get(self.variant) if self.variant is not None else None
        self.delimiter = spec.delimiter if spec is not None else None
        self.atom_regex = spec.atom_regex if spec is not None else None
        self.few_shots = spec.few_shots if spec is not None else ()

    @property
    def spec(self) -> CodeVariant:
        """The bound variant; ``ValueError`` when the task was built without one."""
        if self.variant is None:
            raise ValueError(
                "the code task needs a variant for prompts and solving; pass one of "
                + ", ".join(CODE_VARIANTS)
            )
        return CODE_VARIANT_SPECS[self.variant]

    def solve(self, input: str) -> str:
        """``str(function(*args))`` for the bound variant's reference function."""
        spec = self.spec
        args = parse_code_input(input)
        try:
            return str(spec.function(*args))
        except (TypeError, IndexError, KeyError, AttributeError) as err:
            raise ValueError(f"{spec.function_name} cannot run on input {input[:80]!r}: {err}") from err

    def generate(self, n: int, seed: int, **params: object) -> pl.DataFrame:
        """``n`` rows cycling through the variants (params: :class:`CodeParams`).

        Row ``i`` belongs to ``variants[i % len(variants)]``; each variant draws its inputs from its own
        ``random.Random(derive_seed("code", variant, seed))``, so the rows of one variant are the same in a
        mixed frame as in ``CodeTask(variant).generate`` (same order, same ``sample_id``).
        """
        n, seed = check_n_seed(n, seed)
        p = make_params(CodeParams, params)
        variants = tuple(p.variants) if p.variants is not None else None
        if self.variant is not None:
            if variants not in (None, (self.variant,)):
                raise ValueError(
                    f"variants={list(variants or ())} conflicts with the bound variant {self.variant!r}"
                )
            variants = (self.variant,)
        elif variants is None:
            variants = CODE_VARIANTS
        per_variant = {v: len(range(k, n, len(variants))) for k, v in enumerate(variants)}
        ids = {v: sample_ids(self.slug, count, seed, v) for v, count in per_variant.items()}
        rngs = {v: random.Random(derive_seed(self.slug, v, seed)) for v in variants}
        rows: list[dict[str, str | None]] = []
        for i in range(n):
            slug = variants[i % len(variants)]
            spec = CODE_VARIANT_SPECS[slug]
            args = spec.make_args(rngs[slug])
            rows.append(
                {
                    "sample_id": ids[slug][i // len(variants)],
                    "task": self.slug,
                    "variant": slug,
                    "input": repr(args),
                    "reference": str(spec.function(*args)),
                }
            )
        return dataset_frame(rows)

    def instruction(self) -> str:
        return (
            "Below is a Python function and a call to it. Work out exactly what the call prints and write "
            "that output, following the structure of the examples."
        )

    def prompt(self, input: str, style: PromptStyle = "direct", n_shots: int | None = None) -> str:
        """Instruction, fence instruction, style line, ``Function Code:`` + source, few-shots, test block."""
        spec = self.spec
        if style not in STYLE_INSTRUCTIONS:
            raise ValueError(f"style must be one of {sorted(STYLE_INSTRUCTIONS)}, got {style!r}")
        head = "\n".join(
            [self.instruction(), FENCE_INSTRUCTION, STYLE_INSTRUCTIONS[style], "Function Code:", spec.source]
        )
        return head + "\n" + render_few_shots(self.few_shots, n_shots) + self.test_block(input)

    def test_block(self, input: str) -> str:
        name = self.spec.function_name
        return "\n".join(
            [
                "Now, solve for the test Input.",
                f"Input = {input}",
                f"output = {name}(*Input)",
                "print('********')",
                "print(output)",
                "print('********')",
                "Response:",
            ]
        )


__all__ = [
    "CODE_VARIANTS",
    "CODE_VARIANT_LEGACY",
    "CODE_VARIANT_NAMES",
    "CODE_VARIANT_SPECS",
    "WORDS",
    "CodeParams",
    "CodeTask",
    "CodeVariant",
    "edit_distance",
    "insert_interval",
    "next_permutation",
    "parse_code_input",
    "resolve_code_variant",
    "reverse_words",
    "rotate_array",
    "rotate_matrix",
    "two_sum",
]
