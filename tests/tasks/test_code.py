"""Code task: reference functions, generators, prompts (docs/tasks.md §3, §8.3)."""

from __future__ import annotations

import ast
import functools
import itertools
from collections import Counter
from pathlib import Path

import polars as pl
import pyarrow.ipc as ipc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from saltbench.tasks.base import (
    DATASET_COLUMNS,
    FENCE_INSTRUCTION,
    INTERVAL_PATTERN,
    NUMBER_PATTERN,
    ROW_PATTERN,
)
from saltbench.tasks.code import (
    CODE_VARIANT_LEGACY,
    CODE_VARIANT_NAMES,
    CODE_VARIANT_SPECS,
    CODE_VARIANTS,
    WORDS,
    CodeTask,
    edit_distance,
    insert_interval,
    next_permutation,
    parse_code_input,
    resolve_code_variant,
    reverse_words,
    rotate_array,
    rotate_matrix,
    two_sum,
)

ROWS_PER_VARIANT = 60


@pytest.fixture(scope="module")
def mixed() -> pl.DataFrame:
    return CodeTask().generate(ROWS_PER_VARIANT * len(CODE_VARIANTS), 11)


def args_of(frame: pl.DataFrame, variant: str) -> list[tuple[object, ...]]:
    return [ast.literal_eval(s) for s in frame.filter(pl.col("variant") == variant)["input"]]


# -- registry --------------------------------------------------------------------------------------------
def test_variant_names() -> None:
    assert CODE_VARIANTS == (
        "two_sum",
        "edit_distance",
        "rotate_matrix",
        "insert_interval",
        "next_permutation",
        "reverse_words",
        "rotate_array",
    )
    assert CODE_VARIANT_LEGACY == {
        "TwoSumProblem": "two_sum",
        "EditDistanceProblem": "edit_distance",
        "RotateProblem": "rotate_matrix",
        "InsertProblem": "insert_interval",
        "NextPermutationProblem": "next_permutation",
        "ReverseWordsProblem": "reverse_words",
        "RotateArrayProblem": "rotate_array",
    }
    assert CODE_VARIANT_NAMES["rotate_matrix"] == "Rotate Matrix"
    assert CodeTask.legacy_names == tuple(CODE_VARIANT_LEGACY)
    assert resolve_code_variant("Two Sum") == resolve_code_variant("TwoSumProblem") == "two_sum"
    with pytest.raises(ValueError, match="two_sum"):
        resolve_code_variant("Three Sum")
    with pytest.raises(ValueError, match="Three Sum"):
        CodeTask("Three Sum")


@pytest.mark.parametrize(
    ("variant", "delimiter", "regex"),
    [
        ("two_sum", ",", None),
        ("edit_distance", None, NUMBER_PATTERN),
        ("rotate_matrix", None, ROW_PATTERN),
        ("insert_interval", None, INTERVAL_PATTERN),
        ("next_permutation", ",", None),
        ("reverse_words", " ", None),
        ("rotate_array", ",", None),
    ],
)
def test_atom_rules(variant: str, delimiter: str | None, regex: str | None) -> None:
    task = CodeTask(variant)
    assert (task.delimiter, task.atom_regex) == (delimiter, regex)
    assert task.variant == variant
    assert CodeTask(CODE_VARIANT_NAMES[variant]).variant == variant


def test_unbound_task_refuses_prompt_and_solve() -> None:
    task = CodeTask()
    assert task.few_shots == ()
    with pytest.raises(ValueError, match="variant"):
        task.solve("([1, 2], 3)")
    with pytest.raises(ValueError, match="variant"):
        task.prompt("([1, 2], 3)")


# -- solvers on the paper's examples ------------------------------------------------------------------------
@pytest.mark.parametrize("variant", CODE_VARIANTS)
def test_few_shots_are_solved(variant: str) -> None:
    task = CodeTask(variant)
    assert len(task.few_shots) == 2
    for shot in task.few_shots:
        assert task.solve(shot.input) == shot.output


@pytest.mark.parametrize(
    ("variant", "input", "expected"),
    [
        ("two_sum", "([2, 7, 11, 15], 22)", "[1, 3]"),
        ("two_sum", "([1, 2, 4, 8], 9)", "[0, 3]"),
        ("two_sum", "([1, 1, 5], 6)", "[1, 2]"),  # the later duplicate overwrites the earlier index
        ("two_sum", "([3, 3, 3], 6)", "[0, 1]"),
        ("two_sum", "([1, 2], 10)", "[]"),
        ("edit_distance", "('sunday', 'saturday')", "3"),
        ("edit_distance", "('intention', 'execution')", "5"),
        ("edit_distance", "('', 'abc')", "3"),
        ("rotate_matrix", "([[1, 2], [-3, -4]],)", "[[-3, 1], [-4, 2]]"),
        ("rotate_matrix", "([[1, 2, 3], [4, 5, 6], [7, 8, 9]],)", "[[7, 4, 1], [8, 5, 2], [9, 6, 3]]"),
        ("insert_interval", "([[1, 3], [6, 9]], [2, 5])", "[[1, 5], [6, 9]]"),
        ("insert_interval", "([[1, 2], [5, 6]], [2, 5])", "[[1, 6]]"),  # touching intervals merge
        ("insert_interval", "([[1, 3], [7, 9]], [5, 5])", "[[1, 3], [5, 5], [7, 9]]"),
        (
            "insert_interval",
            "([[0, 4], [5, 8], [9, 12], [13, 17], [18, 22]], [4.4, 4.7])",
            "[[0, 4], [4.4, 4.7], [5, 8], [9, 12], [13, 17], [18, 22]]",
        ),
        (
            "insert_interval",
            "([[1, 1.5], [1.7, 1.9], [2.1, 2.6], [2.7, 2.8], [2.9, 3.5], [3.7, 3.8], [3.9, 4], [4.1, 4.1],"
            " [4.2, 4.6], [4.7, 4.8], [4.9, 4.9]], [1.5, 4.5])",
            "[[1, 4.6], [4.7, 4.8], [4.9, 4.9]]",
        ),
        (
            "insert_interval",
            "([[1, 4], [15, 18], [29, 22], [113, 127], [128, 232]], [4.4, 4.7])",
            "[[1, 4], [4.4, 4.7], [15, 18], [29, 22], [113, 127], [128, 232]]",
        ),
        ("insert_interval", "([[1, 4], [115, 218]], [4, 4.7])", "[[1, 4.7], [115, 218]]"),
        ("next_permutation", "([1, 1, 5],)", "[1, 5, 1]"),
        ("next_permutation", "([5, 4, 3, 2, 1],)", "[1, 2, 3, 4, 5]"),
        ("next_permutation", "([1, 1, 1, 1, 1],)", "[1, 1, 1, 1, 1]"),
        ("next_permutation", "([-11, -8, -5, -2, 1, 4, 10, 13, 7],)", "[-11, -8, -5, -2, 1, 4, 13, 7, 10]"),
        ("reverse_words", "('    Sunday ',)", "yadnuS"),
        ("reverse_words", '("  It\'s my   weekend",)', "s'tI ym dnekeew"),
        ("rotate_array", "([6, 4, 2], 2)", "[4, 2, 6]"),
        ("rotate_array", "([1000, 1, 999, 20, 1], 1)", "[1, 1000, 1, 999, 20]"),
        ("rotate_array", "([1, 2, 1, 3, 1, 4, 1, 5], 80)", "[1, 2, 1, 3, 1, 4, 1, 5]"),
        ("rotate_array", "([1, 2, 3, 4, 5, 6, 7], 0)", "[1, 2, 3, 4, 5, 6, 7]"),
        ("rotate_array", "([], 3)", "[]"),
    ],
)
def test_documented_examples(variant: str, input: str, expected: str) -> None:
    assert CodeTask(variant).solve(input) == expected


def test_parse_code_input() -> None:
    assert parse_code_input("([1, 2],)") == ([1, 2],)
    assert parse_code_input("('Let's take LeetCode contest',)") == ("Let's take LeetCode contest",)
    assert parse_code_input("( 'it's ok' , )") == ("it's ok",)
    for not_a_tuple in ("[1, 2]", "('plain string')"):
        with pytest.raises(ValueError, match="tuple"):
            parse_code_input(not_a_tuple)
    with pytest.raises(ValueError, match="literal"):
        parse_code_input("([1, 2], x)")


def test_solve_wrong_arity_is_value_error() -> None:
    with pytest.raises(ValueError, match="two_sum"):
        CodeTask("two_sum").solve("([1, 2],)")


# -- solver properties -----------------------------------------------------------------------------------
int_lists = st.lists(st.integers(-30, 30), max_size=12)


@given(
    st.integers(1, 6).flatmap(
        lambda n: st.lists(st.lists(st.integers(-9, 9), min_size=n, max_size=n), min_size=n, max_size=n)
    )
)
def test_rotate_matrix_four_times_is_identity(matrix: list[list[int]]) -> None:
    once = rotate_matrix(matrix)
    n = len(matrix)
    assert all(once[j][n - 1 - i] == matrix[i][j] for i in range(n) for j in range(n))
    assert rotate_matrix(rotate_matrix(rotate_matrix(once))) == matrix


@given(st.lists(st.integers(-50, 50), min_size=1, max_size=25))
def test_next_permutation_of_last_permutation_is_sorted(values: list[int]) -> None:
    assert next_permutation(sorted(values, reverse=True)) == sorted(values)


@given(st.lists(st.integers(-9, 9), min_size=1, max_size=5, unique=True))
def test_next_permutation_walks_lexicographic_order(values: list[int]) -> None:
    order = [list(p) for p in itertools.permutations(sorted(values))]
    current = order[0]
    for expected in order[1:] + [order[0]]:
        current = next_permutation(current)
        assert current == expected


@given(int_lists, st.integers(0, 500))
def test_rotate_array_matches_index_formula(values: list[int], k: int) -> None:
    out = rotate_array(values, k)
    n = len(values)
    assert out == [values[(i - k) % n] for i in range(n)]
    if n:
        assert rotate_array(out, n - k % n) == values


@given(st.text(alphabet="ab' \t", max_size=30))
def test_reverse_words_twice_normalises_spacing(text: str) -> None:
    assert reverse_words(reverse_words(text)) == " ".join(text.split())


@functools.cache
def _levenshtein(a: str, b: str) -> int:
    if not a or not b:
        return len(a) + len(b)
    substitute = _levenshtein(a[1:], b[1:]) + (a[0] != b[0])
    return min(_levenshtein(a[1:], b) + 1, _levenshtein(a, b[1:]) + 1, substitute)


@given(st.text(alphabet="abc", max_size=7), st.text(alphabet="abc", max_size=7))
def test_edit_distance_matches_recursive_definition(a: str, b: str) -> None:
    assert edit_distance(a, b) == _levenshtein(a, b) == edit_distance(b, a)


@given(st.lists(st.integers(1, 20), min_size=2, max_size=8), st.integers(2, 40))
def test_two_sum_returns_a_valid_pair_or_nothing(nums: list[int], target: int) -> None:
    out = two_sum(nums, target)
    exists = any(nums[i] + nums[j] == target for i in range(len(nums)) for j in range(i + 1, len(nums)))
    assert bool(out) == exists
    if out:
        i, j = out
        assert i < j and nums[i] + nums[j] == target


def _merge_all(intervals: list[list[int]]) -> list[list[int]]:
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


@given(
    st.lists(st.integers(0, 60), min_size=2, max_size=16, unique=True),
    st.integers(-5, 65),
    st.integers(0, 20),
)
def test_insert_interval_equals_sort_and_merge(points: list[int], start: int, width: int) -> None:
    ends = sorted(points)[: len(points) // 2 * 2]
    # Distinct sorted points paired up: disjoint, non-touching existing intervals.
    intervals = [[ends[i], ends[i + 1]] for i in range(0, len(ends), 2)]
    new = [start, start + width]
    assert insert_interval([list(iv) for iv in intervals], new) == _merge_all([*intervals, new])


# -- generators ------------------------------------------------------------------------------------------
def test_mixed_frame_cycles_variants(mixed: pl.DataFrame) -> None:
    assert tuple(mixed.columns[:5]) == DATASET_COLUMNS
    assert mixed["variant"].head(14).to_list() == list(CODE_VARIANTS) * 2
    assert Counter(mixed["variant"]) == {v: ROWS_PER_VARIANT for v in CODE_VARIANTS}
    assert mixed["sample_id"].n_unique() == mixed.height
    assert mixed["sample_id"][7] == "code-two_sum-s11-00001"
    assert set(mixed["task"]) == {"code"}


def test_references_and_inputs_roundtrip(mixed: pl.DataFrame) -> None:
    for row in mixed.iter_rows(named=True):
        args = ast.literal_eval(row["input"])
        assert isinstance(args, tuple) and repr(args) == row["input"]
        assert CodeTask(row["variant"]).solve(row["input"]) == row["reference"]
        assert "\n" not in row["reference"]


def test_single_variant_rows_match_mixed_rows(mixed: pl.DataFrame) -> None:
    single = CodeTask("insert_interval").generate(ROWS_PER_VARIANT, 11)
    assert single.equals(mixed.filter(pl.col("variant") == "insert_interval"))


def test_variants_param() -> None:
    frame = CodeTask().generate(5, 0, variants=["rotate_array", "Two Sum"])
    assert frame["variant"].to_list() == ["rotate_array", "two_sum"] * 2 + ["rotate_array"]
    assert CodeTask("two_sum").generate(2, 0, variants=["two_sum"]).height == 2
    for bad in (["two_sum", "two_sum"], [], "two_sum", ["nope"]):
        with pytest.raises(ValueError):
            CodeTask().generate(2, 0, variants=bad)
    with pytest.raises(ValueError, match="conflicts"):
        CodeTask("two_sum").generate(2, 0, variants=["rotate_array"])
    with pytest.raises(ValueError, match="unknown parameter"):
        CodeTask().generate(2, 0, size=3)


def test_generate_is_deterministic() -> None:
    a, b = CodeTask().generate(21, 4), CodeTask().generate(21, 4)
    assert a.equals(b)
    assert not a["input"].equals(CodeTask().generate(21, 5)["input"])


def test_two_sum_sizes(mixed: pl.DataFrame) -> None:
    for nums, target in args_of(mixed, "two_sum"):  # type: ignore[misc]
        assert len(nums) == 4
        pairs = [(i, j) for i in range(4) for j in range(i + 1, 4) if nums[i] + nums[j] == target]
        assert len(pairs) == 1


def test_edit_distance_sizes(mixed: pl.DataFrame) -> None:
    assert all(3 <= len(w) <= 11 for w in WORDS) and len(set(WORDS)) == len(WORDS)
    for a, b in args_of(mixed, "edit_distance"):  # type: ignore[misc]
        assert 3 <= len(a) <= 11 and 3 <= len(b) <= 11
        assert 1 <= edit_distance(a, b) <= 8


def test_rotate_matrix_sizes(mixed: pl.DataFrame) -> None:
    sizes = {len(m) for (m,) in args_of(mixed, "rotate_matrix")}  # type: ignore[misc]
    assert sizes <= set(range(1, 12)) and len(sizes) >= 8


def test_insert_interval_sizes(mixed: pl.DataFrame) -> None:
    frame = mixed.filter(pl.col("variant") == "insert_interval")
    counts, decimals = set(), 0
    for args, reference in zip(args_of(mixed, "insert_interval"), frame["reference"]):
        intervals, new = args  # type: ignore[misc]
        counts.add(len(intervals))
        assert 2 <= len(ast.literal_eval(reference)) <= 12
        decimals += any(isinstance(v, float) for v in [*new, *itertools.chain(*intervals)])
    assert counts <= set(range(2, 13)) and len(counts) >= 8
    assert decimals >= 3


def test_next_permutation_sizes(mixed: pl.DataFrame) -> None:
    lists = [v for (v,) in args_of(mixed, "next_permutation")]  # type: ignore[misc]
    assert all(3 <= len(v) <= 25 for v in lists)
    assert sum(min(v) < 0 for v in lists) >= len(lists) // 2
    assert any(v == sorted(v, reverse=True) for v in lists)  # some wrap to sorted


def test_rotate_array_sizes(mixed: pl.DataFrame) -> None:
    args = args_of(mixed, "rotate_array")
    assert all(3 <= len(v) <= 167 and 0 <= k <= 10 * len(v) for v, k in args)  # type: ignore[misc]
    assert any(k >= len(v) for v, k in args)  # type: ignore[misc]
    assert max(len(v) for v, _ in args) >= 60  # type: ignore[misc]


def test_reverse_words_sizes(mixed: pl.DataFrame) -> None:
    texts = [t for (t,) in args_of(mixed, "reverse_words")]  # type: ignore[misc]
    assert all(1 <= len(t.split()) <= 29 for t in texts)
    assert any(t.startswith(" ") for t in texts)
    assert any("  " in t.strip() for t in texts)
    assert any("'" in t for t in texts)


# -- prompts ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", CODE_VARIANTS)
def test_prompt_structure(variant: str) -> None:
    task = CodeTask(variant)
    spec = CODE_VARIANT_SPECS[variant]
    text = task.prompt("([1, 2], 3)")
    assert text.startswith(task.instruction() + "\n" + FENCE_INSTRUCTION + "\n")
    source_at = text.index("Function Code:\n" + spec.source + "\nHere are 2 examples:\nExample 1:\n")
    assert source_at > text.index(FENCE_INSTRUCTION)
    tail = (
        "Now, solve for the test Input.\nInput = ([1, 2], 3)\n"
        f"output = {spec.function_name}(*Input)\n"
        "print('********')\nprint(output)\nprint('********')\nResponse:"
    )
    assert text.endswith("********\n" + tail)
    assert spec.source.startswith(f"def {variant}(")


@pytest.mark.parametrize("variant", CODE_VARIANTS)
def test_prompt_source_defines_the_reference(variant: str, mixed: pl.DataFrame) -> None:
    spec = CODE_VARIANT_SPECS[variant]
    namespace: dict[str, object] = {}
    exec(spec.source, namespace)  # the code a model sees must compute our references
    function = namespace[spec.function_name]
    assert callable(function)
    for row in mixed.filter(pl.col("variant") == variant).head(10).iter_rows(named=True):
        assert str(function(*ast.literal_eval(row["input"]))) == row["reference"]


# -- the authors' reproduction data ----------------------------------------------------------------------
def test_paper_references_reproduced(paper_data: Path) -> None:
    (path,) = (paper_data / "Code_dataset").glob("data-*.arrow")
    with path.open("rb") as fh:
        frame = pl.from_arrow(ipc.open_stream(fh).read_all())
    assert isinstance(frame, pl.DataFrame) and frame.height == 148
    for row in frame.iter_rows(named=True):
        assert CodeTask(row["task"]).solve(row["input"]) == row["reference"]
