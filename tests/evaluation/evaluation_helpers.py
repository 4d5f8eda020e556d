"""Task objects for the evaluation tests, and the atom rules docs/tasks.md §1.2/§3.2 expects of them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from saltbench.tasks import get_task

NUMBER = r"[+-]?\d+(?:\.\d+)?"
DK = r"<DK>|<DK|DK>|DK"
ROW = rf"\[\s*{NUMBER}(?:\s*,\s*{NUMBER})*\s*\]|{DK}"
INTERVAL = rf"\[\s*{NUMBER}\s*,\s*{NUMBER}\s*\]|{DK}"

EXPECTED_RULES: dict[tuple[str, str | None], tuple[str | None, str | None]] = {
    ("dna", None): (" ", None),
    ("logic", None): ("\n", None),
    ("matmul", None): (" ", None),  # a regex is declared too, but the delimiter wins
    ("kronecker", None): (" ", None),
    ("words", "colors"): (" ", None),
    ("words", "numbers"): (" ", None),
    ("code", "two_sum"): (",", None),
    ("code", "next_permutation"): (",", None),
    ("code", "rotate_array"): (",", None),
    ("code", "reverse_words"): (" ", None),
    ("code", "edit_distance"): (None, NUMBER),
    ("code", "rotate_matrix"): (None, ROW),
    ("code", "insert_interval"): (None, INTERVAL),
}
"""(slug, variant) -> (delimiter, atom regex that is actually used)."""


def task(slug: str, variant: str | None = None) -> Any:
    """The real task object (``saltbench.tasks.get_task``)."""
    return get_task(slug, variant)


def rule(delimiter: str | None, atom_regex: str | None = None) -> SimpleNamespace:
    """A bare task-like object with the given atom rule."""
    return SimpleNamespace(delimiter=delimiter, atom_regex=atom_regex)
