"""Answer layouts, prefix rendering (string and token boundaries) and intervention planning."""

from __future__ import annotations

import functools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.core.seeds import derive_seed
from saltbench.evaluation import decompose
from saltbench.interventions import (
    AnswerLayout,
    corruptor_for,
    grid_counts,
    grid_positions,
    plan_sample,
    render_prefix,
)
from saltbench.tasks import get_task

CASES: tuple[tuple[str, str | None], ...] = (
    ("dna", None),
    ("matmul", None),
    ("kronecker", None),
    ("logic", None),
    ("words", "numbers"),
    ("words", "capital_letters"),
    ("words", "countries"),
    ("words", "colors"),
    ("code", "two_sum"),
    ("code", "rotate_matrix"),
    ("code", "insert_interval"),
    ("code", "next_permutation"),
    ("code", "reverse_words"),
    ("code", "rotate_array"),
)
PARAMS = {
    "dna": {"min_codons": 2, "max_codons": 12},
    "logic": {"num_variables": [6, 8]},
    "matmul": {"output_lengths": [4, 6, 12]},
    "kronecker": {"output_lengths": [8, 12]},
    "words": {"min_words": 40, "max_words": 120, "min_needles": 3},
}


def rule(task: str, variant: str | None):
    return get_task(task, variant) if variant else get_task(task)


@functools.cache
def samples(task: str, variant: str | None) -> tuple[tuple[str, str, str | None], ...]:
    frame = rule(task, variant).generate(6, 11, **PARAMS.get(task, {}))
    return tuple(frame.select("sample_id", "reference", "variant").iter_rows())


# -- fixed examples -------------------------------------------------------------------------------------
def test_layout_spans():
    lay = AnswerLayout.from_reference("5 4\n5 7", "matmul")
    assert lay.text == "********\n5 4\n5 7\n********"
    assert lay.atoms == ("5", "4", "5", "7")
    assert [lay.text[s:e] for s, e in zip(lay.starts, lay.ends)] == list(lay.atoms)
    code = AnswerLayout.from_reference("[4, 1, -2, 3]", "code", "rotate_array")
    assert code.atoms == ("4", "1", "-2", "3")  # bracket trimming: the spans exclude the brackets
    assert code.text[code.starts[0] - 1 : code.ends[0]] == "[4"
    logic = AnswerLayout.from_reference("p2: False\np3: True\n", "logic")
    assert logic.atoms == ("p2: False", "p3: True") and logic.text.endswith("p3: True\n********")


@pytest.mark.parametrize(
    ("reference", "task", "variant", "k", "prefix", "target"),
    [
        ("5 4\n5 7", "matmul", None, 3, "********\n5 4\n", "5"),  # the line break belongs to the prefix
        ("5 4\n5 7", "matmul", None, 2, "********\n5", " 4"),  # the in-line space does not
        ("5 4\n5 7", "matmul", None, 4, "********\n5 4\n5", " 7"),
        ("TCT CGA TTC", "dna", None, 2, "********\nTCT", " CGA"),
        ("p2: False\np3: True\n", "logic", None, 2, "********\np2: False\n", "p3: True"),
        ("[0, 1]", "code", "two_sum", 2, "********\n[0", ", 1"),
        ("[[3, 1], [4, 2]]", "code", "rotate_matrix", 2, "********\n[[3, 1]", ", [4, 2]"),
        ("olleh dlrow", "code", "reverse_words", 2, "********\nolleh", " dlrow"),
    ],
)
def test_atom_boundary_prefix(reference, task, variant, k, prefix, target):
    lay = AnswerLayout.from_reference(reference, task, variant)
    r = render_prefix(lay, k, boundary="atom")
    assert (r.text, r.target_text) == (prefix, target)
    assert r.target_text[r.atom_offset :] == lay.atoms[k - 1]
    assert r.token_ids == () and render_prefix(lay, k) == r  # no tokenizer: the atom rule


def test_substitute_keeps_layout():
    lay = AnswerLayout.from_reference("5 4\n5 7", "matmul")
    sub = lay.substitute({1: "-12", 3: "0"})
    assert sub.text == "********\n-12 4\n0 7\n********"
    assert sub.atoms == ("-12", "4", "0", "7")
    assert [sub.text[s:e] for s, e in zip(sub.starts, sub.ends)] == list(sub.atoms)
    assert render_prefix(sub, 4, boundary="atom").text == "********\n-12 4\n0"
    with pytest.raises(ValueError, match=r"\[1, 4\]"):
        lay.substitute({5: "1"})
    with pytest.raises(ValueError, match="position k"):
        render_prefix(lay, 1)


@pytest.mark.parametrize(
    ("reference", "task", "variant", "k", "prefix", "target_tokens"),
    [
        # byte-level BPE attaches the space to the codon: the prefix stops at the atom
        ("TCT CGA TTC", "dna", None, 2, "********\nTCT", [" C", "GA"]),
        # SmolLM2 splits digits and spaces: the space is its own token and joins the prefix
        ("5 4\n5 7", "matmul", None, 2, "********\n5 ", ["4"]),
        ("5 4\n5 7", "matmul", None, 3, "********\n5 4\n", ["5"]),
        # '],' is one token: the comma joins the prefix, the next atom starts with ' ['
        (
            "[[3, 1], [4, 2]]",
            "code",
            "rotate_matrix",
            2,
            "********\n[[3, 1],",
            [" [", "4", ",", " ", "2", "]]"],
        ),
        ("p2: False\np3: True\n", "logic", None, 2, "********\np2: False\n", ["p", "3", ":", " True"]),
    ],
)
def test_token_boundary_prefix_smollm2(smollm2_tokenizer, reference, task, variant, k, prefix, target_tokens):
    tok = smollm2_tokenizer
    lay = AnswerLayout.from_reference(reference, task, variant)
    r = render_prefix(lay, k, tokenizer=tok, boundary="token")
    assert r.text == prefix and r.canonical_cut
    full = tok(lay.text, add_special_tokens=False)["input_ids"]
    assert list(r.token_ids) + list(r.target_ids) == full[: len(r.token_ids) + len(r.target_ids)]
    assert [tok.decode([t]) for t in r.target_ids] == target_tokens
    assert all(r.target_atom_mask)


def test_token_boundary_char_tokenizer(char_tokenizer):
    lay = AnswerLayout.from_reference("TCT CGA TTC", "dna")
    r = render_prefix(lay, 3, tokenizer=char_tokenizer)
    assert (r.text, r.target_text) == ("********\nTCT CGA ", "TTC")  # every character is a token
    assert len(r.target_ids) == 3 and r.target_atom_mask == (True, True, True)
    a = render_prefix(lay, 3, tokenizer=char_tokenizer, boundary="atom")
    assert (a.text, a.target_text) == ("********\nTCT CGA", " TTC")
    assert a.target_atom_mask == (False, True, True, True)  # the space token is not part of the atom
    assert a.canonical_cut  # a character tokenizer cuts anywhere


def test_budget_tokens(char_tokenizer):
    lay = AnswerLayout.from_reference("TCT CGA TTC GGG", "dna")
    assert render_prefix(lay, 2, tokenizer=char_tokenizer, next_atoms=2).budget_tokens == len("CGA TTC")
    assert render_prefix(lay, 4, tokenizer=char_tokenizer, next_atoms=3).budget_tokens == len("GGG")


# -- round trip through the evaluator, every task ---------------------------------------------------------
def _check_round_trip(task, variant, sample_id, reference, var, k_pick, seed, tokenizer):
    lay = AnswerLayout.from_reference(reference, task, var)
    if lay.n_atoms < 2:
        return
    specs = plan_sample(
        lay,
        corruptor_for(task, var),
        sample_id=sample_id,
        seed=seed,
        position_fractions=(0.3, 0.6, 1.0),
        corruption_counts=(0, 1, 3),
        corruption_fractions=(0.5,),
    )
    spec = specs[k_pick % len(specs)]
    sub = lay.substitute(spec.replacements)
    k = spec.position
    unit_rule = rule(task, var)
    for boundary in ("atom", "token"):
        r = render_prefix(sub, k, tokenizer=tokenizer, boundary=boundary)
        assert r.text.startswith("********\n")
        assert decompose(r.text, unit_rule) == list(sub.atoms[: k - 1]), (boundary, r.text)
        written = decompose(r.text + r.target_text, unit_rule)
        assert written == [*sub.atoms[: k - 1], lay.atoms[k - 1]]
        assert r.target_text[r.atom_offset :] == lay.atoms[k - 1]
        if tokenizer is not None:

            def text_of(ids):
                return tokenizer.decode(list(ids), clean_up_tokenization_spaces=False)

            assert text_of(r.token_ids) == r.text
            # the target tokens cover the rest of the gap and a_k (the last one may run past it: '],')
            assert text_of(r.target_ids).startswith(r.target_text)
            assert len(r.target_atom_mask) == len(r.target_ids) and r.target_atom_mask[-1]


DRAWS = {
    "case": st.sampled_from(CASES),
    "pick": st.integers(0, 5),
    "k_pick": st.integers(0, 10**6),
    "seed": st.integers(0, 2**31),
}


@settings(max_examples=150, deadline=None)
@given(**DRAWS)
def test_prefix_round_trips_through_evaluator(case, pick, k_pick, seed, char_tokenizer):
    task, variant = case
    sample_id, reference, var = samples(task, variant)[pick]
    _check_round_trip(task, variant, sample_id, reference, var, k_pick, seed, None)
    _check_round_trip(task, variant, sample_id, reference, var, k_pick, seed, char_tokenizer)


@settings(max_examples=80, deadline=None)
@given(**DRAWS)
def test_prefix_round_trips_smollm2_tokens(case, pick, k_pick, seed, smollm2_tokenizer):
    task, variant = case
    sample_id, reference, var = samples(task, variant)[pick]
    _check_round_trip(task, variant, sample_id, reference, var, k_pick, seed, smollm2_tokenizer)


# -- planning ------------------------------------------------------------------------------------------------
def test_grid_positions_and_counts():
    assert grid_positions(10, [3, 20], [0.1, 0.5, 1.0]) == (2, 3, 5, 10)
    assert grid_positions(10, [], [0.25, 0.75]) == (3, 8)  # 2.5 -> 3 and 7.5 -> 8 (half up)
    assert grid_positions(1, [2], [0.5]) == ()
    assert grid_counts(5, [0, 1, 2, 4, 8], [0.5]) == (0, 1, 2, 4)
    assert grid_counts(2, [0, 2], [0.1]) == (0, 1)  # fractions give at least one corrupted atom


def test_plan_sample_grid_and_seeding():
    lay = AnswerLayout.from_reference("TCT CGA TTC CGG AAA CCC GGG TTT ACG TGC", "dna")
    specs = plan_sample(lay, corruptor_for("dna"), sample_id="s", seed=3)
    per_k = {k: sum(s.position == k for s in specs) for k in (2, 3, 5, 8, 10)}
    assert per_k == {2: 4, 3: 7, 5: 10, 8: 10, 10: 10} and len(specs) == 41
    assert [(s.position, s.n_corrupted, s.placement) for s in specs[:4]] == [
        (2, 0, "clean"),
        (2, 1, "random"),
        (2, 1, "local"),
        (2, 1, "distant"),
    ]
    # the wrong value of an atom does not depend on the intervention that corrupts it
    wrong: dict[int, str] = {}
    for s in specs:
        for i, atom in zip(s.corrupted_positions, s.corrupted_atoms):
            assert wrong.setdefault(i, atom) == atom and atom != lay.atoms[i - 1]
    assert plan_sample(lay, corruptor_for("dna"), sample_id="s", seed=3) == specs
    assert plan_sample(lay, corruptor_for("dna"), sample_id="s", seed=4) != specs
    local = next(s for s in specs if s.position == 8 and s.n_corrupted == 4 and s.placement == "local")
    distant = next(s for s in specs if s.position == 8 and s.n_corrupted == 4 and s.placement == "distant")
    assert local.corrupted_positions == (4, 5, 6, 7) and distant.corrupted_positions == (1, 2, 3, 4)


def test_plan_sample_single_atom_is_empty():
    lay = AnswerLayout.from_reference("3", "code", "edit_distance")
    assert lay.n_atoms == 1
    assert plan_sample(lay, corruptor_for("code", "edit_distance"), sample_id="s", seed=0) == []


def test_random_placement_seeded_independently_of_values():
    lay = AnswerLayout.from_reference(" ".join("ACG" for _ in range(12)), "dna")
    specs = plan_sample(
        lay,
        corruptor_for("dna"),
        sample_id="x",
        seed=1,
        position_fractions=(1.0,),
        corruption_counts=(3,),
        placements=("random",),
    )
    (spec,) = specs
    expected = tuple(sorted(random.Random(derive_seed(1, "x", "random", 12, 3)).sample(range(1, 12), 3)))
    assert spec.corrupted_positions == expected
