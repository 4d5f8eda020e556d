"""Unit decomposition, normalisation and DK detection (docs/evaluation.md §3–4, bracket examples in §3.4)."""

from __future__ import annotations

import pytest
from helpers.evaluation_helpers import EXPECTED_RULES, task

from saltbench.evaluation import decompose, evaluate, is_dk, normalize_unit

DNA = task("dna")
LOGIC = task("logic")


def test_dna_atoms_strip_and_drop_blank_lines():
    assert decompose("  TCT   CGA \n\n AAA  ", DNA, "atom") == ["TCT", "CGA", "AAA"]


def test_asterisks_are_removed_before_splitting():
    assert decompose("a*b TCT", DNA, "atom") == ["ab", "TCT"]


def test_comma_lists_over_lines_with_bracket_trimming():
    assert decompose("[0, 1]\n[2, 3]", task("code", "two_sum"), "atom") == ["0", "1]", "[2", "3"]


def test_numeric_regex_atoms():
    assert decompose("The distance is 3.0 or -2", task("code", "edit_distance"), "atom") == ["3.0", "-2"]


def test_row_regex_atoms_with_dk():
    assert decompose("[[1, 2], [DK], [3, 4]]", task("code", "rotate_matrix"), "atom") == [
        "[1, 2]",
        "DK",
        "[3, 4]",
    ]


def test_interval_regex_atoms():
    t = task("code", "insert_interval")
    assert decompose("[[1, 5], [6, 9]]", t, "atom") == ["[1, 5]", "[6, 9]"]
    assert decompose("[<DK>, [7, 12]]", t, "atom") == ["<DK>", "[7, 12]"]


def test_unterminated_list_loses_only_its_opening_bracket():
    assert decompose("[1, 2, 3", task("code", "rotate_array"), "atom") == ["1", "2", "3"]


@pytest.mark.parametrize(
    ("text", "atoms"),
    [("[0, 1]", ["0", "1"]), ("[5]", ["[5]"]), ("[[1, 2]]", ["[1", "2]"]), ("[", [""]), ("7]", ["7"])],
)
def test_bracket_trimming_of_first_and_last_atom(text, atoms):
    assert decompose(text, task("code", "two_sum"), "atom") == atoms


def test_line_and_generation_units():
    text = " 5 4 \n\n  6 7 8\n"
    assert decompose(text, task("matmul"), "line") == ["5 4", "6 7 8"]
    assert decompose(text, task("matmul"), "generation") == ["5 4 \n\n  6 7 8"]
    assert decompose("[0, 1]", task("code", "two_sum"), "line") == ["[0, 1]"]
    assert decompose("  **  \n ", DNA, "generation") == []


def test_logic_atoms_are_lines():
    text = "p1: True\n p2:  False \n\np10: True\n"
    assert (
        decompose(text, LOGIC, "atom")
        == decompose(text, LOGIC, "line")
        == ["p1: True", "p2:  False", "p10: True"]
    )


def test_multi_character_delimiter():
    from helpers.evaluation_helpers import rule

    assert decompose("a ;; b;;c ;;\n;; d", rule(";;"), "atom") == ["a", "b", "c", "d"]


def test_unknown_granularity_and_missing_rule_raise():
    from helpers.evaluation_helpers import rule

    with pytest.raises(ValueError, match="granularity"):
        decompose("TCT", DNA, "word")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delimiter"):
        decompose("TCT", rule(None, None), "atom")
    assert decompose("TCT", rule(None, None), "line") == ["TCT"]
    with pytest.raises(TypeError, match="task"):
        decompose("TCT", object(), "atom")  # type: ignore[arg-type]


def test_normalisation_removes_spaces_unless_delimiter_is_space():
    assert normalize_unit(" p1: *True* ", LOGIC) == "p1:True"
    assert normalize_unit(" p1: *True* ", DNA) == "p1: True"
    assert normalize_unit("[1,  2]", task("code", "rotate_matrix")) == "[1,2]"


def test_logic_spacing_is_ignored_but_case_is_not():
    f = "********\np1:True\n********"
    assert evaluate(f, "p1: True", LOGIC).comparisons[0].status == "correct"
    assert evaluate(f, "p1: True", DNA, granularity="line").comparisons[0].status == "incorrect"
    assert evaluate("p1: true", "p1: True", LOGIC).comparisons[0].status == "incorrect"
    assert evaluate("Red", "red", task("words", "colors")).comparisons[0].status == "incorrect"


def test_comparison_is_exact_string_equality():
    statuses = [c.status for c in evaluate("5.0 -0 5", "5 0 5", task("matmul")).comparisons]
    assert statuses == ["incorrect", "incorrect", "correct"]


@pytest.mark.parametrize("unit", ["DK", "dk", "<DK>", "<dk>", "<DK", "DK>", " Dk "])
def test_dk_markers(unit):
    assert is_dk(unit)


@pytest.mark.parametrize("unit", ["D K", "DKK", "<<DK>>", "", None, "K"])
def test_not_dk_markers(unit):
    assert not is_dk(unit)


@pytest.mark.parametrize(("key", "expected"), sorted(EXPECTED_RULES.items(), key=str))
def test_real_tasks_declare_the_paper_atom_rules(key, expected):
    t = task(*key)
    delimiter, atom_regex = expected
    assert t.delimiter == delimiter
    if not delimiter:
        assert t.atom_regex == atom_regex
