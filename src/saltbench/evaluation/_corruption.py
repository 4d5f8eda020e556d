"""Corrupting answer atoms: per-task rules for a wrong but well-formed atom.

Every rule maps a reference atom and a ``random.Random`` to a different atom *of the same type*, i.e. a
string the task's evaluator splits into exactly one atom of the same shape:

=====================  ==========================================================================
kind                   rule
=====================  ==========================================================================
``codon``              dna — another of the 63 other codons over ``A C G T``
``integer``            matmul, kronecker, next_permutation, rotate_array, edit_distance —
                       ``v + d`` with ``d`` uniform on ``±[1, s]``, ``s = max(3, round(0.2·|v|))``
                       (near the true value: the arithmetic slips a model makes)
``index``              two_sum — as ``integer`` but never negative (``v + |d|`` when ``v + d < 0``)
``truth_value``        logic — ``pK: True`` ↔ ``pK: False`` (variable and layout kept)
``digit_run``          words/numbers — another non-negative integer near the value (``index`` rule)
``capital_letter``     words/capital_letters — another of ``A..Z``
``vocabulary_word``    other words subjects — another single-word entry of the subject vocabulary
``number_list``        rotate_matrix rows ``[3, 1]``, insert_interval ``[1, 5]`` — one number of the
                       bracketed list moved by the ``integer`` rule (decimals: in units of their
                       last decimal place, same number of decimals), the rest kept verbatim
``word_typo``          reverse_words — two adjacent different characters swapped; a word without
                       such a pair becomes another (reversed) word of the Code vocabulary
``task_defined``       a plugin task — its own ``Task.corrupt_atom`` (docs/extending.md)
=====================  ==========================================================================

Every result is checked (:meth:`AtomCorruptor.__call__`): it differs from the atom after the evaluator's
normalisation, it is not a don't-know marker, has no ``*``, and decomposes to exactly itself. A rule
that fails the check is retried with the same generator (at most 64 draws, then ``ValueError``).

The rules are the evaluator's knowledge of what a wrong atom of each task looks like; they make the
corrupted prefixes of the interventions (docs/interventions.md) and the wrong answers the tiny models are
shown when they learn to judge answers (docs/tiny-models.md).
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from saltbench.evaluation._units import UnitRule, decompose, is_dk, resolve_task
from saltbench.tasks.base import NUMBER_PATTERN

CorruptionKind = Literal[
    "codon",
    "integer",
    "index",
    "truth_value",
    "digit_run",
    "capital_letter",
    "vocabulary_word",
    "number_list",
    "word_typo",
    "task_defined",
]
CORRUPTION_KINDS: tuple[CorruptionKind, ...] = get_args(CorruptionKind)

CODONS: tuple[str, ...] = tuple("".join(c) for c in itertools.product("ACGT", repeat=3))
_TRUTH = re.compile(r"\A(?P<head>.*?:\s*)(?P<value>True|False)(?P<tail>\s*)\Z", re.DOTALL)
_INT = re.compile(r"\A[+-]?\d+\Z")
_NUMBER = re.compile(NUMBER_PATTERN)
MAX_DRAWS = 64


def near_integer(value: int, rng: random.Random, *, nonnegative: bool = False) -> int:
    """``value + d``, ``d = ±u`` with ``u`` uniform on ``[1, max(3, round(0.2 |value|))]`` (never ``value``).

    With ``nonnegative``, a negative result ``value + d`` becomes ``value + |d|``.
    """
    spread = max(3, round(0.2 * abs(value)))
    step = rng.randint(1, spread)
    new = value + (step if rng.random() < 0.5 else -step)
    if nonnegative and new < 0:
        new = value + step
    return new


def _near_number_text(text: str, rng: random.Random) -> str:
    """A number string moved by :func:`near_integer` in units of its last decimal place."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    whole, _, frac = body.partition(".")
    scaled = sign * int(whole + frac)
    new = near_integer(scaled, rng)
    if not frac:
        return str(new)
    digits = str(abs(new)).rjust(len(frac) + 1, "0")
    return ("-" if new < 0 else "") + digits[: -len(frac)] + "." + digits[-len(frac) :]


def _codon(atom: str, rng: random.Random) -> str:
    return rng.choice([c for c in CODONS if c != atom])


def _integer(atom: str, rng: random.Random) -> str:
    if not _INT.match(atom):
        raise ValueError(f"atom {atom!r} is not an integer")
    return str(near_integer(int(atom), rng))


def _index(atom: str, rng: random.Random) -> str:
    if not _INT.match(atom):
        raise ValueError(f"atom {atom!r} is not an integer")
    return str(near_integer(int(atom), rng, nonnegative=True))


def _truth_value(atom: str, rng: random.Random) -> str:
    m = _TRUTH.match(atom)
    if m is None:
        raise ValueError(f"atom {atom!r} is not a 'pK: True|False' assignment")
    flipped = "False" if m["value"] == "True" else "True"
    return f"{m['head']}{flipped}{m['tail']}"


def _digit_run(atom: str, rng: random.Random) -> str:
    if not atom.isdigit():
        raise ValueError(f"atom {atom!r} is not a digit run")
    return str(near_integer(int(atom), rng, nonnegative=True))


def _capital_letter(atom: str, rng: random.Random) -> str:
    return rng.choice([c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c != atom])


def _number_list(atom: str, rng: random.Random) -> str:
    numbers = list(_NUMBER.finditer(atom))
    if not numbers:
        raise ValueError(f"atom {atom!r} holds no number")
    m = rng.choice(numbers)
    return atom[: m.start()] + _near_number_text(m.group(), rng) + atom[m.end() :]


def _word_typo(atom: str, rng: random.Random) -> str:
    pairs = [i for i in range(len(atom) - 1) if atom[i] != atom[i + 1]]
    if pairs:
        i = rng.choice(pairs)
        return atom[:i] + atom[i + 1] + atom[i] + atom[i + 2 :]
    from saltbench.tasks.code import WORDS

    return rng.choice([w[::-1] for w in WORDS if w[::-1] != atom])


_RULES: dict[str, Callable[[str, random.Random], str]] = {
    "codon": _codon,
    "integer": _integer,
    "index": _index,
    "truth_value": _truth_value,
    "digit_run": _digit_run,
    "capital_letter": _capital_letter,
    "number_list": _number_list,
    "word_typo": _word_typo,
}

_CODE_KINDS: dict[str, CorruptionKind] = {
    "two_sum": "index",
    "edit_distance": "integer",
    "rotate_matrix": "number_list",
    "insert_interval": "number_list",
    "next_permutation": "integer",
    "reverse_words": "word_typo",
    "rotate_array": "integer",
}


@dataclass(frozen=True)
class AtomCorruptor:
    """The corruption rule of one task (and Code variant / Words subject); call it on an atom.

    Attributes:
        kind: the rule (module docstring).
        rule: the task's unit rule (delimiter / atom regex) used to check results.
        vocabulary: candidate words of the ``vocabulary_word`` rule (empty otherwise).
        custom: the task's own rule for ``task_defined`` (``Task.corrupt_atom``).
    """

    kind: CorruptionKind
    rule: UnitRule
    vocabulary: tuple[str, ...] = ()
    custom: Callable[[str, random.Random], str | None] | None = None

    def _draw(self, atom: str, rng: random.Random) -> str:
        if self.kind == "task_defined" and self.custom is not None:
            new = self.custom(atom, rng)
            if not isinstance(new, str):
                raise ValueError(f"the task's corrupt_atom gave {new!r} for atom {atom!r}, not a string")
            return new
        if self.kind == "vocabulary_word":
            choices = [w for w in self.vocabulary if w != atom]
            if not choices:
                raise ValueError(f"the vocabulary has no word other than {atom!r}")
            return rng.choice(choices)
        return _RULES[self.kind](atom, rng)

    def __call__(self, atom: str, rng: random.Random) -> str:
        """A wrong, well-formed replacement of ``atom`` (see the module docstring).

        Raises:
            ValueError: ``atom`` does not have the shape the rule expects, or no valid draw was found.
        """
        key = self.rule.key(atom)
        for _ in range(MAX_DRAWS):
            new = self._draw(atom, rng)
            if (
                self.rule.key(new) != key
                and not is_dk(new)
                and "*" not in new
                and decompose(new, self.rule) == [new]
            ):
                return new
        raise ValueError(f"no well-formed {self.kind} corruption of atom {atom!r} after {MAX_DRAWS} draws")


def corruptor_for(task: str, variant: str | None = None) -> AtomCorruptor:
    """The corruption rule of a task slug (``variant``: the Code variant or the Words subject).

    Raises:
        ValueError: unknown task, or Code/Words without a variant.
    """
    from saltbench.tasks import get_task

    task_obj = get_task(task, variant)
    rule = resolve_task(task_obj)
    if task == "dna":
        return AtomCorruptor("codon", rule)
    if task in ("matmul", "kronecker"):
        return AtomCorruptor("integer", rule)
    if task == "logic":
        return AtomCorruptor("truth_value", rule)
    if task == "code":
        if variant is None:
            raise ValueError("corruptor_for('code') needs the Code variant, got variant=None")
        return AtomCorruptor(_CODE_KINDS[task_obj.variant], rule)  # type: ignore[index]
    if task == "words":
        if variant is None:
            raise ValueError("corruptor_for('words') needs the subject as variant, got variant=None")
        if variant == "numbers":
            return AtomCorruptor("digit_run", rule)
        if variant == "capital_letters":
            return AtomCorruptor("capital_letter", rule)
        from saltbench.tasks.words import VOCABULARIES

        single = tuple(w for w in VOCABULARIES[variant] if re.fullmatch(r"[a-z]+", w))
        return AtomCorruptor("vocabulary_word", rule, single)
    from saltbench.tasks import declares_corruption

    if declares_corruption(type(task_obj)):
        return AtomCorruptor("task_defined", rule, custom=task_obj.corrupt_atom)
    raise ValueError(f"no corruption rule for task {task!r} (its Task.corrupt_atom is not defined)")


__all__ = [
    "CODONS",
    "CORRUPTION_KINDS",
    "AtomCorruptor",
    "CorruptionKind",
    "corruptor_for",
    "near_integer",
]
