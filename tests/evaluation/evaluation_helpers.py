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


def naive_alignment(resp, ref, ms=2, mp=1, gp=1):
    """Textbook Needleman–Wunsch with explicit move records (ties: diagonal > up > left)."""
    G, R = len(ref), len(resp)
    S = [[0.0] * (R + 1) for _ in range(G + 1)]
    move = [[""] * (R + 1) for _ in range(G + 1)]
    for j in range(1, R + 1):
        S[0][j], move[0][j] = -gp * j, "left"
    for i in range(1, G + 1):
        S[i][0], move[i][0] = -gp * i, "up"
        for j in range(1, R + 1):
            hit = resp[j - 1] == ref[i - 1] and resp[j - 1] != "DK"
            options = [
                (S[i - 1][j - 1] + (ms if hit else -mp), "diag"),
                (S[i - 1][j] - gp, "up"),
                (S[i][j - 1] - gp, "left"),
            ]
            best = max(v for v, _ in options)
            S[i][j], move[i][j] = next((v, m) for v, m in options if v == best)
    pairs = []
    i, j = G, R
    while i or j:
        m = move[i][j]
        if m == "diag":
            i, j = i - 1, j - 1
            pairs.append((j, i))
        elif m == "up":
            i -= 1
            pairs.append((-1, i))
        else:
            j -= 1
            pairs.append((j, -1))
    return pairs[::-1], S
