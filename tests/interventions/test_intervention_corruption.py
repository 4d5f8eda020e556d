"""Corruption rules (wrong but well-formed atoms, every task) and placements."""

from __future__ import annotations

import functools
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.evaluation import decompose, is_dk, normalize_unit
from saltbench.interventions import (
    CODONS,
    AnswerLayout,
    choose_positions,
    corruptor_for,
    near_integer,
)
from saltbench.tasks import get_task
from saltbench.tasks.code import WORDS
from saltbench.tasks.words import VOCABULARIES

NUM = r"-?\d+(?:\.\d+)?"
SHAPES: dict[tuple[str, str | None], str] = {
    ("dna", None): r"[ACGT]{3}",
    ("matmul", None): r"-?\d+",
    ("kronecker", None): r"-?\d+",
    ("logic", None): r"p\d+: (?:True|False)",
    ("words", "numbers"): r"\d+",
    ("words", "capital_letters"): r"[A-Z]",
    **{("words", s): r"[a-z]+" for s in ("countries", "months", "professions", "weekdays", "colors")},
    ("code", "two_sum"): r"\d+",
    ("code", "edit_distance"): r"-?\d+",
    ("code", "next_permutation"): r"-?\d+",
    ("code", "rotate_array"): r"-?\d+",
    ("code", "rotate_matrix"): rf"\[{NUM}(?:, {NUM})*\]",
    ("code", "insert_interval"): rf"\[{NUM}, {NUM}\]",
    ("code", "reverse_words"): r"\S+",
}
"""The shape of a well-formed atom per (task, variant), written independently of the rules."""

PARAMS = {
    "dna": {"min_codons": 2, "max_codons": 12},
    "logic": {"num_variables": [6, 8]},
    "matmul": {"output_lengths": [4, 6, 8]},
    "kronecker": {"output_lengths": [8, 12]},
    "words": {"min_words": 40, "max_words": 120, "min_needles": 3},
}


@functools.cache
def atoms_of(task: str, variant: str | None) -> tuple[str, ...]:
    """Reference atoms of a small, fixed pool of generated samples (generated once per case)."""
    gen = get_task(task, variant) if task in ("code", "words") else get_task(task)
    frame = gen.generate(8, 7, **PARAMS.get(task, {}))
    atoms: list[str] = []
    for reference, var in frame.select("reference", "variant").iter_rows():
        atoms.extend(AnswerLayout.from_reference(reference, task, var).atoms)
    return tuple(atoms)


@settings(max_examples=300, deadline=None)
@given(case=st.sampled_from(sorted(SHAPES, key=str)), pick=st.integers(0, 10**6), seed=st.integers(0, 2**32))
def test_corrupted_atoms_are_well_formed_and_wrong(case, pick, seed):
    task, variant = case
    atoms = atoms_of(task, variant)
    atom = atoms[pick % len(atoms)]
    corruptor = corruptor_for(task, variant)
    new = corruptor(atom, random.Random(seed))
    assert re.fullmatch(SHAPES[case], new), (atom, new)
    assert decompose(new, task if variant is None else get_task(task, variant)) == [new]
    rule = get_task(task, variant) if variant else task
    assert normalize_unit(new, rule) != normalize_unit(atom, rule)
    assert not is_dk(new) and "*" not in new


def test_rule_specifics():
    rng = random.Random(0)
    assert corruptor_for("logic")("p12: True", rng) == "p12: False"
    assert corruptor_for("logic")("p3: False", rng) == "p3: True"
    for _ in range(50):
        codon = corruptor_for("dna")("TCT", rng)
        assert codon in CODONS and codon != "TCT"
        month = corruptor_for("words", "months")("may", rng)
        assert month in VOCABULARIES["months"] and month != "may"
        assert int(corruptor_for("code", "two_sum")("0", rng)) > 0  # indices never go negative
        row = corruptor_for("code", "rotate_matrix")("[3, -1, 40]", rng)
        assert sum(a != b for a, b in zip(row[1:-1].split(", "), ["3", "-1", "40"])) == 1
        interval = corruptor_for("code", "insert_interval")("[4.6, 4.7]", rng)
        assert re.fullmatch(r"\[\d+\.\d, \d+\.\d\]|\[-?\d+\.\d, -?\d+\.\d\]", interval), interval
        typo = corruptor_for("code", "reverse_words")("olleh", rng)
        assert sorted(typo) == sorted("olleh") and typo != "olleh"
    assert corruptor_for("code", "reverse_words")("aa", rng) in {w[::-1] for w in WORDS}


@pytest.mark.parametrize("value", [0, 1, -1, 7, -65, 193, 1000])
def test_near_integer_spread(value):
    rng = random.Random(value)
    spread = max(3, round(0.2 * abs(value)))
    draws = {near_integer(value, rng) for _ in range(400)}
    assert value not in draws
    expected = {value + d for d in range(-spread, spread + 1) if d}  # offsets ±[1, spread]
    assert draws <= expected
    if spread <= 40:
        assert draws == expected  # and every one of them occurs
    assert min(near_integer(value, rng, nonnegative=True) for _ in range(200)) >= min(0, value)


def test_corruptor_needs_variant_and_shape():
    with pytest.raises(ValueError, match="variant"):
        corruptor_for("code")
    with pytest.raises(ValueError, match="subject"):
        corruptor_for("words")
    with pytest.raises(ValueError, match="not an integer"):
        corruptor_for("matmul")("x7", random.Random(0))
    with pytest.raises(ValueError, match="True|False"):
        corruptor_for("logic")("p1 = yes", random.Random(0))


@pytest.mark.parametrize(
    ("k", "c", "placement", "expected"),
    [
        (6, 2, "local", (4, 5)),
        (6, 2, "distant", (1, 2)),
        (6, 5, "local", (1, 2, 3, 4, 5)),
        (6, 5, "distant", (1, 2, 3, 4, 5)),
        (2, 1, "local", (1,)),
        (9, 0, "local", ()),
        (9, 0, "distant", ()),
    ],
)
def test_placements_pick_the_right_positions(k, c, placement, expected):
    assert choose_positions(k, c, placement) == expected


@settings(max_examples=200, deadline=None)
@given(k=st.integers(2, 300), data=st.data(), seed=st.integers(0, 2**32))
def test_random_placement(k, data, seed):
    c = data.draw(st.integers(0, k - 1))
    chosen = choose_positions(k, c, "random", random.Random(seed))
    assert len(chosen) == c == len(set(chosen))
    assert list(chosen) == sorted(chosen) and all(1 <= i <= k - 1 for i in chosen)
    assert chosen == choose_positions(k, c, "random", random.Random(seed))  # seeded, deterministic
    local, distant = choose_positions(k, c, "local"), choose_positions(k, c, "distant")
    assert all(k - i <= c for i in local) and all(i <= c for i in distant)  # nearest / farthest from k


def test_placement_errors():
    with pytest.raises(ValueError, match="k must be"):
        choose_positions(1, 0, "local")
    with pytest.raises(ValueError, match="c must lie"):
        choose_positions(4, 4, "local")
    with pytest.raises(ValueError, match="placement"):
        choose_positions(4, 1, "nearby")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rng"):
        choose_positions(4, 1, "random")
