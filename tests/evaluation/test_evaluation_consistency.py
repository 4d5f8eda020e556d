"""Sampling consistency (docs/confidence.md §7): ``draw_consistency`` equals a plain loop over the evaluator's
own ``evaluate`` (each draw against the greedy answer as its reference), for strict and dynamic alignment
and every task family, and keeps its invariants (identical draws, one changed atom, permutations, draws
without an answer)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import polars as pl
import pytest
from helpers.evaluation_helpers import greedy_units
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.core.contracts import UNITS, is_confidence_column
from saltbench.evaluation import (
    CONSISTENCY_COLUMNS,
    EvaluateOptions,
    draw_consistency,
    evaluate,
    is_dk,
    normalize_unit,
    resolve_task,
)
from saltbench.inference.records import GenerationRecord, TokenScores, records_to_frame
from saltbench.stages.scoring import score_generations

FENCE = "********"
AGREE, ENTROPY, DISTINCT = CONSISTENCY_COLUMNS


def fenced(body: str) -> str:
    return f"Some working.\n{FENCE}\n{body}\n{FENCE}"


def units_table(
    greedy: list[str], references: list[str], task: str, variant: str | None, options: EvaluateOptions
) -> pl.DataFrame:
    """A units table of the greedy answers (the columns ``draw_consistency`` reads)."""
    return greedy_units(greedy, references, task, variant, options)


def draws_table(draws: list[list[str | None]]) -> pl.DataFrame:
    rows = [(f"s{i}", d, text) for i, texts in enumerate(draws) for d, text in enumerate(texts)]
    return pl.DataFrame(
        rows, schema={"sample_id": pl.String, "draw": pl.Int64, "text": pl.String}, orient="row"
    )


def reference_scores(
    greedy: str,
    draws: list[str | None],
    task: str,
    variant: str | None,
    granularity: str,
    opts: EvaluateOptions,
) -> list[tuple[float, float, float]]:
    """(agreement, entropy, distinct) of each greedy unit by a loop over ``evaluate``: the greedy answer's
    clean text is the reference each draw is evaluated against."""
    clean = evaluate(greedy, "", task, variant=variant, granularity="generation", options=opts).clean_response
    n_units = len(
        evaluate(clean, clean, task, variant=variant, granularity=granularity, options=opts).reference_units
    )
    values: list[list[tuple[str, ...]]] = [[] for _ in range(n_units)]
    rule = resolve_task(task, variant)
    for text in draws:
        ev = evaluate(text, clean, task, variant=variant, granularity=granularity, options=opts)
        k = 0
        for comparison in ev.comparisons:
            if comparison.reference_unit is None:
                continue
            unit = comparison.response_unit
            if unit is None:
                values[k].append(("missing",))
            elif comparison.status == "correct":
                values[k].append(("agree", normalize_unit(unit, rule)))
            elif is_dk(unit):
                values[k].append(("dk",))
            else:
                values[k].append(("value", normalize_unit(unit, rule)))
            k += 1
    out = []
    n = len(draws)
    for column in values:
        classes = Counter(v if v[0] != "agree" else ("value", v[1]) for v in column)
        entropy = -sum(c / n * math.log(c / n) for c in classes.values())
        out.append((sum(v[0] == "agree" for v in column) / n, entropy, float(len(classes))))
    return out


def check_against_loop(
    greedy: list[str],
    references: list[str],
    draws: list[list[str | None]],
    task: str,
    variant: str | None,
    opts: EvaluateOptions,
) -> pl.DataFrame:
    """Run ``draw_consistency`` and compare every greedy unit's scores with :func:`reference_scores`."""
    units = units_table(greedy, references, task, variant, opts)
    out = draw_consistency(units, draws_table(draws), options=opts)
    assert out.drop(CONSISTENCY_COLUMNS).equals(units)
    missing = out.filter(pl.col("response_unit").is_null())
    assert missing.select(pl.all_horizontal(pl.col(CONSISTENCY_COLUMNS).is_nan())).to_series().all()
    scored = out.filter(pl.col("response_unit").is_not_null())
    for (sample_id, granularity), part in scored.group_by("sample_id", "granularity", maintain_order=True):
        i = int(str(sample_id)[1:])
        expected = reference_scores(greedy[i], draws[i], task, variant, str(granularity), opts)
        got = part.sort("unit_index").select(CONSISTENCY_COLUMNS).rows()
        assert np.allclose(got, expected, atol=1e-12), (sample_id, granularity, got, expected)
    return out


# -- equal to the loop over the evaluator --------------------------------------------------------------
CODONS = ["TCT", "CGA", "AAA", "dk", "GGG"]


@st.composite
def dna_case(draw: st.DrawFn) -> tuple[list[str], list[str], list[list[str | None]]]:
    """Greedy answers, references and draws over a small alphabet (collisions, DK, several lines)."""
    n_samples = draw(st.integers(1, 3))
    n_draws = draw(st.integers(1, 5))
    words = st.lists(st.sampled_from(CODONS), min_size=0, max_size=6)

    def body(atoms: list[str], breaks: list[bool]) -> str:
        return "".join(a + ("\n" if b else " ") for a, b in zip(atoms, breaks)).strip()

    def text() -> str:
        atoms = draw(words)
        breaks = draw(st.lists(st.booleans(), min_size=len(atoms), max_size=len(atoms)))
        shape = draw(st.sampled_from(["fenced", "bare", "empty", "rejected"]))
        return {
            "fenced": fenced(body(atoms, breaks)),
            "bare": body(atoms, breaks),
            "empty": "",
            "rejected": f"{FENCE}\nthe answer is {body(atoms, breaks)}\n{FENCE}",
        }[shape]

    greedy = [fenced(body(draw(words), [False] * 6)) for _ in range(n_samples)]
    references = [" ".join(draw(words)) or "TCT" for _ in range(n_samples)]
    draws = [[text() for _ in range(n_draws)] for _ in range(n_samples)]
    return greedy, references, draws


@pytest.mark.parametrize("alignment", ["strict", "dynamic"])
@settings(max_examples=40)
@given(case=dna_case())
def test_dna_equals_the_evaluator_loop(
    alignment: str, case: tuple[list[str], list[str], list[list[str | None]]]
) -> None:
    greedy, references, draws = case
    check_against_loop(greedy, references, draws, "dna", None, EvaluateOptions(alignment=alignment))  # type: ignore[arg-type]


FAMILIES: list[tuple[str, str | None, str, list[str]]] = [
    # (task, variant, greedy body, draw bodies): one per atom rule
    ("dna", None, "TCT CGA AAA\nGGG", ["TCT CGA AAA\nGGG", "TCT AAA\nGGG", "CGA TCT AAA GGG", "DK CGA"]),
    (
        "logic",
        None,
        "p1: True\np2: False\np3: True",
        ["p1:True\np2: False\np3: True", "p2: False\np3: True", "p1: False"],
    ),
    ("matmul", None, "5 4\n6 7 8", ["5 4\n6 7 8", "5 4\n6 8", "5 4 6 7 8 9", "<DK> 4\n6 7 8"]),
    ("words", "colors", "red blue green", ["red blue green", "red green", "blue red green", "red blue"]),
    ("code", "two_sum", "[0, 1]", ["[0, 1]", "[0,1]", "[1, 0]", "[0, 2]"]),
    ("code", "rotate_matrix", "[[1, 2], [3, 4]]", ["[[1, 2], [3, 4]]", "[[1,2],[3, 4]]", "[[3, 4], [1, 2]]"]),
    ("code", "edit_distance", "3", ["3", "4", "the distance is 3"]),
]


@pytest.mark.parametrize("alignment", ["strict", "dynamic"])
@pytest.mark.parametrize(
    ("task", "variant", "greedy", "bodies"), FAMILIES, ids=[f"{t}-{v}" for t, v, _, _ in FAMILIES]
)
def test_every_task_family_equals_the_evaluator_loop(
    alignment: str, task: str, variant: str | None, greedy: str, bodies: list[str]
) -> None:
    opts = EvaluateOptions(alignment=alignment, fence_rule="line")  # type: ignore[arg-type]
    draws: list[str | None] = [fenced(b) for b in bodies] + ["", None]
    check_against_loop([fenced(greedy)], [greedy], [draws], task, variant, opts)


def test_strict_and_dynamic_differ_where_a_draw_skips_a_unit() -> None:
    """A draw that drops the first codon repeats the rest one place early: strict pairs every later codon
    with the wrong greedy codon, dynamic alignment finds them."""
    greedy, draws = [fenced("TCT CGA AAA")], [[fenced("CGA AAA")]]
    strict = check_against_loop(greedy, ["TCT CGA AAA"], draws, "dna", None, EvaluateOptions())
    dynamic = check_against_loop(
        greedy, ["TCT CGA AAA"], draws, "dna", None, EvaluateOptions(alignment="dynamic")
    )
    atoms = pl.col("granularity") == "atom"
    assert strict.filter(atoms)[AGREE].to_list() == [0.0, 0.0, 0.0]
    assert dynamic.filter(atoms)[AGREE].to_list() == [0.0, 1.0, 1.0]


# -- invariants ----------------------------------------------------------------------------------------
greedy_atoms = st.lists(st.sampled_from(["TCT", "CGA", "AAA", "GGG", "TTT"]), min_size=1, max_size=8)


def one_response(atoms: list[str], draw_texts: list[str | None], alignment: str = "strict") -> pl.DataFrame:
    opts = EvaluateOptions(alignment=alignment)  # type: ignore[arg-type]
    units = units_table([fenced(" ".join(atoms))], [" ".join(atoms)], "dna", None, opts)
    return draw_consistency(units, draws_table([draw_texts]), options=opts)


@given(atoms=greedy_atoms, n=st.integers(1, 6), alignment=st.sampled_from(["strict", "dynamic"]))
def test_identical_draws_agree_fully(atoms: list[str], n: int, alignment: str) -> None:
    out = one_response(atoms, [fenced(" ".join(atoms))] * n, alignment)
    assert out[AGREE].to_list() == [1.0] * out.height
    assert out[ENTROPY].to_list() == [0.0] * out.height
    assert out[DISTINCT].to_list() == [1.0] * out.height


@settings(max_examples=30)
@given(
    atoms=greedy_atoms, n=st.integers(1, 6), alignment=st.sampled_from(["strict", "dynamic"]), data=st.data()
)
def test_one_changed_atom_lowers_exactly_that_atom_by_one_over_n(
    atoms: list[str], n: int, alignment: str, data: st.DataObject
) -> None:
    """Under either alignment (a substitution costs less than two gaps, so dynamic alignment pairs it)."""
    j = data.draw(st.integers(0, len(atoms) - 1))
    changed = [*atoms[:j], "CCC", *atoms[j + 1 :]]
    same = one_response(atoms, [fenced(" ".join(atoms))] * n, alignment)
    one_off = one_response(
        atoms, [fenced(" ".join(changed))] + [fenced(" ".join(atoms))] * (n - 1), alignment
    )
    atom_rows = pl.col("granularity") == "atom"
    drop = np.array(same.filter(atom_rows)[AGREE]) - np.array(one_off.filter(atom_rows)[AGREE])
    expected = np.zeros(len(atoms))
    expected[j] = 1 / n
    assert np.allclose(drop, expected, atol=1e-15)
    changed_entropy = one_off.filter(atom_rows)[ENTROPY].to_numpy()
    assert changed_entropy[j] == pytest.approx(
        0.0 if n == 1 else -(1 / n) * np.log(1 / n) - (1 - 1 / n) * np.log(1 - 1 / n)
    )
    assert np.delete(changed_entropy, j).tolist() == [0.0] * (len(atoms) - 1)


@settings(max_examples=30)
@given(case=dna_case(), alignment=st.sampled_from(["strict", "dynamic"]), seed=st.integers(0, 2**16))
def test_permuting_the_draws_changes_nothing(
    case: tuple[list[str], list[str], list[list[str | None]]], alignment: str, seed: int
) -> None:
    greedy, references, draws = case
    opts = EvaluateOptions(alignment=alignment)  # type: ignore[arg-type]
    units = units_table(greedy, references, "dna", None, opts)
    table = draws_table(draws)
    order = np.random.default_rng(seed).permutation(table.height)
    shuffled = table[order].with_columns(
        draw=pl.Series(np.random.default_rng(seed + 1).permutation(table.height))
    )
    first = draw_consistency(units, table, options=opts)
    second = draw_consistency(units, shuffled, options=opts)
    assert first.equals(second)


@given(atoms=greedy_atoms, answered=st.integers(0, 4), unanswered=st.integers(1, 4))
def test_draws_without_an_answer_count_as_missing(atoms: list[str], answered: int, unanswered: int) -> None:
    """Each draw without an answer (empty, keyword-rejected, an error row) lowers every agreement by 1/n and
    adds to one *missing* class."""
    n = answered + unanswered
    dead = ["", f"{FENCE}\nthe answer is TCT\n{FENCE}", None]
    texts = [fenced(" ".join(atoms))] * answered + [dead[i % 3] for i in range(unanswered)]
    out = one_response(atoms, texts)
    assert np.allclose(out[AGREE].to_numpy(), answered / n)
    p = np.array([answered / n, unanswered / n])
    p = p[p > 0]
    assert np.allclose(out[ENTROPY].to_numpy(), -(p * np.log(p)).sum())
    assert out[DISTINCT].to_list() == [float(p.size)] * out.height


def test_an_error_row_has_no_answer_whatever_its_text() -> None:
    opts = EvaluateOptions()
    units = units_table([fenced("TCT")], ["TCT"], "dna", None, opts)
    draws = draws_table([[fenced("TCT"), fenced("TCT")]]).with_columns(
        finish_reason=pl.Series(["eos", "error"]), error=pl.Series([None, None], dtype=pl.String)
    )
    assert draw_consistency(units, draws, options=opts)[AGREE].to_list() == [0.5] * 3


# -- a plugged matcher, the output contract and bad input ------------------------------------------------
class EverythingEqual:
    """A matcher that deems every pair of values the same (stands for a lenient judge)."""

    def equal(self, greedy: pl.DataFrame, drawn: pl.DataFrame, task: str) -> np.ndarray:
        return np.ones(drawn.height, dtype=bool)

    def classes(self, drawn: pl.DataFrame, groups: np.ndarray, task: str) -> np.ndarray:
        return np.zeros(drawn.height, dtype=np.int64)


def test_a_plugged_matcher_judges_the_aligned_pairs() -> None:
    opts = EvaluateOptions()
    units = units_table([fenced("TCT CGA")], ["TCT CGA"], "dna", None, opts)
    draws = draws_table([[fenced("AAA GGG"), fenced("AAA"), ""]])
    out = draw_consistency(units, draws, options=opts, matcher=EverythingEqual())
    atoms = out.filter(pl.col("granularity") == "atom")
    assert atoms[AGREE].to_list() == pytest.approx([2 / 3, 1 / 3])
    assert atoms[DISTINCT].to_list() == [2.0, 2.0]


def test_a_matcher_with_the_wrong_number_of_verdicts_is_refused() -> None:
    class Short(EverythingEqual):
        def equal(self, greedy: pl.DataFrame, drawn: pl.DataFrame, task: str) -> np.ndarray:
            return np.ones(max(drawn.height - 1, 0), dtype=bool)

    units = units_table([fenced("TCT")], ["TCT"], "dna", None, EvaluateOptions())
    with pytest.raises(ValueError, match="matcher Short returned"):
        draw_consistency(units, draws_table([[fenced("TCT")]]), matcher=Short())


def test_a_scored_units_table_with_the_columns_keeps_the_units_contract() -> None:
    """The scoring stage's units of one response (docs/confidence.md §6), the consistency columns added: the
    table is still a valid units table, the new columns confidence columns beside the token functions'."""
    texts = ["****", "****", "\n", "TCT", " CGA", "\n", "****", "****"]
    record = GenerationRecord.from_scores(
        TokenScores(
            np.arange(8, dtype=np.int32),
            np.full(8, -0.1, np.float32),
            np.zeros((8, 1), np.int32),
            np.full((8, 1), -0.1, np.float32),
            np.full(8, 0.5, np.float32),
        ),
        texts,
        finish_reason="eos",
        num_prompt_tokens=3,
    )
    generations = records_to_frame([record], {"sample_id": ["s0"]})
    dataset = pl.DataFrame(
        {"sample_id": ["s0"], "variant": [None], "reference": ["TCT CGA AAA"]},
        schema_overrides={"variant": pl.String},
    )
    scored = score_generations(generations, dataset, "dna", fence_rule="line")
    front = [pl.lit("m").alias("model"), pl.lit("direct").alias("style"), pl.lit("dna").alias("task")]
    units = scored.select(*front, *scored.columns)
    draws = draws_table([[fenced("TCT CGA"), fenced("TCT AAA")]])
    out = draw_consistency(units, draws, options=EvaluateOptions.from_scoring({}))
    UNITS.validate(out, "units with the consistency columns")
    assert all(is_confidence_column(c) for c in CONSISTENCY_COLUMNS)
    assert out.filter(pl.col("granularity") == "atom")[AGREE].to_list()[:2] == [1.0, 0.5]
    assert out.filter(pl.col("status") == "missing")[AGREE].is_nan().all()


def test_an_empty_units_table_with_no_draws_gets_empty_columns() -> None:
    units = units_table([fenced("TCT")], ["TCT"], "dna", None, EvaluateOptions()).clear()
    out = draw_consistency(units, draws_table([]))
    assert out.height == 0 and out.columns == [*units.columns, *CONSISTENCY_COLUMNS]
    with pytest.raises(ValueError, match="one task"):
        draw_consistency(units, draws_table([[fenced("TCT")]]))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda u, d: (u.drop("response_unit"), d), "missing column"),
        (lambda u, d: (u, d.drop("text")), "missing column"),
        (lambda u, d: (pl.concat([u, u.with_columns(task=pl.lit("logic"))]), d), "one task"),
        (lambda u, d: (u, pl.concat([d, d.head(1)])), r"\('s0', 0\) is not unique"),
        (
            lambda u, d: (u, pl.concat([d, d.head(1).with_columns(sample_id=pl.lit("s9"))])),
            "without greedy units.*s9",
        ),
        (lambda u, d: (u, d.filter(pl.col("sample_id") != "s1")), "without draws.*s1"),
        (lambda u, d: (u, d.with_columns(draw=pl.lit(None, dtype=pl.Int64))), "null sample_id or draw"),
    ],
)
def test_bad_input_is_refused_by_name(change, message: str) -> None:  # type: ignore[no-untyped-def]
    units = units_table([fenced("TCT"), fenced("CGA")], ["TCT", "CGA"], "dna", None, EvaluateOptions())
    draws = draws_table([[fenced("TCT")], [fenced("CGA")]])
    bad_units, bad_draws = change(units, draws)
    with pytest.raises(ValueError, match=message):
        draw_consistency(bad_units, bad_draws)
