"""Matrix Multiplication and Kronecker Product tasks (docs/tasks.md §5, §6, §8.5, §8.6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.ipc as ipc
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from saltbench.tasks.base import DATASET_COLUMNS, FENCE_INSTRUCTION
from saltbench.tasks.matrix import (
    KroneckerParams,
    KroneckerTask,
    MatmulParams,
    MatmulTask,
    format_matrix,
    format_operands,
    kronecker_shapes,
    matmul_output_shapes,
    parse_operands,
)

TAIL = "Please answer the following as demonstrated before:\n{}\nSolution:\n"


def small_matrices(max_side: int = 4) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(
        np.int64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=max_side),
        elements=st.integers(-9, 9),
    )


def operand_shapes(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    a, b = parse_operands(text)
    return a.shape, b.shape


# -- seed-exact checks against the authors' generators ------------------------------------------------------
def test_matmul_seed0_length4() -> None:
    frame = MatmulTask().generate(2, 0, output_lengths=[4], min_inner_dim=2, max_inner_dim=2)
    row = frame.row(0, named=True)
    assert row["input"] == "A=\n7 3\n0 -4\nB=\n-4 -9\n-8 -9"
    assert row["reference"] == "-52 -90\n32 36"


def test_matmul_default_seed42_first_row() -> None:
    row = MatmulTask().generate(1, 42).row(0, named=True)
    assert row["input"] == "A=\n5 3\n-1 -1\nB=\n7 -8 4\n-6 -8 1"
    assert row["reference"] == "17 -64 23\n-1 16 -5"


def test_kronecker_cycle_seed42_first_row() -> None:
    frame = KroneckerTask().generate(3, 42, sample_lengths="cycle", output_lengths=range(6, 66, 2))
    row = frame.row(0, named=True)
    assert row["input"] == "A=\n-1\n-1\n7\nB=\n-8 4"
    assert row["reference"] == "8 -4\n8 -4\n-56 28"


# -- solvers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", [MatmulTask(), KroneckerTask()], ids=["matmul", "kronecker"])
def test_few_shots_are_solved(task: MatmulTask | KroneckerTask) -> None:
    assert len(task.few_shots) == 2
    for shot in task.few_shots:
        assert task.solve(shot.input) == shot.output


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A=\n1 2\n3 1\nB=\n1 2\n2 1", "5 4\n5 7"),
        ("A=\n-6 7\n3 6\nB=\n3 8 -5\n8 6 0", "38 -6 30\n57 60 -15"),
        ("A=\n-2 6\n7 -1\nB=\n-3 7 2 -7\n-1 4 3 4", "0 10 14 38\n-20 45 11 -53"),
    ],
)
def test_matmul_examples(text: str, expected: str) -> None:
    assert MatmulTask().solve(text) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("A=\n1 2\n3 4", "B="),
        ("A=\n1 2\n3\nB=\n1\n2", "ragged"),
        ("A=\n1 x\nB=\n1\n2", "non-integer"),
        ("A=\n1 2\nB=\n1 2", "inner dimensions"),
        ("A=\nB=\n1", "no rows"),
    ],
)
def test_matmul_solver_errors(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MatmulTask().solve(text)


def test_kronecker_solver_needs_separator() -> None:
    with pytest.raises(ValueError, match="B="):
        KroneckerTask().solve("A=\n1 2\n3 4")


@given(small_matrices(), small_matrices())
def test_kronecker_shape_and_blocks(a: np.ndarray, b: np.ndarray) -> None:
    text = KroneckerTask().solve(format_operands(a, b))
    rows = [[int(v) for v in line.split(" ")] for line in text.split("\n")]
    out = np.array(rows)
    assert out.shape == (a.shape[0] * b.shape[0], a.shape[1] * b.shape[1])
    i, j = a.shape[0] - 1, a.shape[1] - 1
    block = out[i * b.shape[0] : (i + 1) * b.shape[0], j * b.shape[1] : (j + 1) * b.shape[1]]
    assert np.array_equal(block, a[i, j] * b)


@given(small_matrices(), st.integers(1, 4), st.data())
def test_matmul_matches_numpy(a: np.ndarray, cols: int, data: st.DataObject) -> None:
    b = data.draw(hnp.arrays(np.int64, (a.shape[1], cols), elements=st.integers(-9, 9)))
    assert MatmulTask().solve(format_operands(a, b)) == format_matrix(a @ b)


@given(small_matrices(), small_matrices())
def test_format_parse_roundtrip(a: np.ndarray, b: np.ndarray) -> None:
    pa, pb = parse_operands(format_operands(a, b))
    assert np.array_equal(pa, a) and np.array_equal(pb, b)


# -- shapes ----------------------------------------------------------------------------------------------
def test_matmul_output_shapes() -> None:
    assert matmul_output_shapes(24) == [(2, 12), (3, 8), (4, 6)]
    assert matmul_output_shapes(24, allow_scalar_operations=True)[0] == (1, 24)
    assert matmul_output_shapes(7) == [] and matmul_output_shapes(2) == []


def test_kronecker_shapes_enumeration() -> None:
    assert kronecker_shapes(4) == [
        (1, 2, 1, 2),
        (1, 2, 2, 1),
        (2, 1, 1, 2),
        (2, 1, 2, 1),
    ]
    assert kronecker_shapes(7) == []
    with_scalars = kronecker_shapes(4, allow_scalar_operations=True)
    assert with_scalars[0] == (1, 1, 1, 4) and len(with_scalars) == 10
    for length in (6, 40, 120, 290):
        for ra, ca, rb, cb in kronecker_shapes(length):
            assert ra * rb * ca * cb == length
            assert (ra, ca) != (1, 1) and (rb, cb) != (1, 1)


# -- generators ------------------------------------------------------------------------------------------
def test_matmul_defaults_cycle_paper_lengths() -> None:
    frame = MatmulTask().generate(60, 5)
    inner_dims = set()
    for i, row in enumerate(frame.iter_rows(named=True)):
        (m, k), (k2, n) = operand_shapes(row["input"])
        assert k == k2 and m * n == 6 + 2 * (i % 30)
        assert 2 <= m <= n
        inner_dims.add(k)
        assert MatmulTask().solve(row["input"]) == row["reference"]
        values = [int(v) for line in row["input"].split("\n") if "=" not in line for v in line.split()]
        assert -9 <= min(values) and max(values) <= 9
    assert inner_dims == {2, 3}


def test_kronecker_defaults_sample_paper_lengths() -> None:
    frame = KroneckerTask().generate(80, 5)
    lengths = []
    for row in frame.iter_rows(named=True):
        (ra, ca), (rb, cb) = operand_shapes(row["input"])
        assert (ra, ca) != (1, 1) and (rb, cb) != (1, 1)
        lengths.append(ra * rb * ca * cb)
        assert KroneckerTask().solve(row["input"]) == row["reference"]
    assert set(lengths) <= set(range(40, 300, 10))
    assert len(set(lengths)) >= 15
    assert lengths[:26] != list(range(40, 300, 10))  # drawn, not cycled


def test_kronecker_prefer_2d_always() -> None:
    frame = KroneckerTask().generate(20, 1, prefer_2d_probability=1.0, output_lengths=[16, 36, 48])
    for text in frame["input"]:
        (ra, ca), (rb, cb) = operand_shapes(text)
        assert 1 not in (ra, ca, rb, cb)


def test_kronecker_prefer_2d_falls_back_when_impossible() -> None:
    # 50 = 2 * 5 * 5 has no shape with all four dimensions > 1, so vectors are used anyway.
    frame = KroneckerTask().generate(5, 1, prefer_2d_probability=1.0, output_lengths=[50])
    assert all(1 in sum(operand_shapes(t), ()) for t in frame["input"])


def test_value_range_and_inner_dims_respected() -> None:
    frame = MatmulTask().generate(10, 2, value_min=0, value_max=1, min_inner_dim=4, max_inner_dim=4)
    for text in frame["input"]:
        a, b = parse_operands(text)
        assert a.shape[1] == 4 and set(np.unique(np.concatenate([a.ravel(), b.ravel()]))) <= {0, 1}


def test_scalar_operations_allow_prime_lengths() -> None:
    frame = MatmulTask().generate(3, 0, output_lengths=[7], allow_scalar_operations=True)
    assert all(operand_shapes(t)[0][0] == 1 for t in frame["input"])
    with pytest.raises(ValueError, match="output_lengths"):
        MatmulTask().generate(3, 0, output_lengths=[7])


def test_random_sampling_mode_for_matmul() -> None:
    frame = MatmulTask().generate(30, 0, sample_lengths="random", output_lengths=[6, 64])
    sizes = {len(r.split()) for r in frame["reference"].str.replace_all("\n", " ")}
    assert sizes == {6, 64}


@pytest.mark.parametrize("task", [MatmulTask(), KroneckerTask()], ids=["matmul", "kronecker"])
def test_generate_is_deterministic(task: MatmulTask | KroneckerTask) -> None:
    a, b = task.generate(12, 9), task.generate(12, 9)
    assert a.equals(b)
    assert not a["input"].equals(task.generate(12, 10)["input"])
    assert tuple(a.columns[:5]) == DATASET_COLUMNS
    assert a["variant"].null_count() == 12
    assert a["sample_id"][11] == f"{task.slug}-s9-00011"


@pytest.mark.parametrize(
    ("cls", "params", "name"),
    [
        (MatmulTask, {"output_lengths": []}, "output_lengths"),
        (MatmulTask, {"output_lengths": [0, 6]}, "output_lengths"),
        (MatmulTask, {"output_lengths": "6"}, "output_lengths"),
        (MatmulTask, {"sample_lengths": "shuffle"}, "sample_lengths"),
        (MatmulTask, {"value_min": 3, "value_max": 2}, "value_max"),
        (MatmulTask, {"min_inner_dim": 0}, "min_inner_dim"),
        (MatmulTask, {"min_inner_dim": 3, "max_inner_dim": 2}, "max_inner_dim"),
        (MatmulTask, {"prefer_2d_probability": 0.5}, "prefer_2d_probability"),
        (KroneckerTask, {"prefer_2d_probability": 1.5}, "prefer_2d_probability"),
        (KroneckerTask, {"min_inner_dim": 2}, "min_inner_dim"),
        (KroneckerTask, {"allow_scalar_operations": "yes"}, "allow_scalar_operations"),
        (KroneckerTask, {"output_lengths": [7, 11]}, "output_lengths"),
    ],
)
def test_bad_params(cls: type[MatmulTask | KroneckerTask], params: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        cls().generate(2, 0, **params)


def test_params_defaults() -> None:
    assert MatmulParams().output_lengths == tuple(range(6, 66, 2))
    assert MatmulParams().sample_lengths == "cycle"
    assert KroneckerParams().output_lengths == tuple(range(40, 300, 10))
    assert KroneckerParams().sample_lengths == "random"
    assert (KroneckerParams().value_min, KroneckerParams().value_max) == (-9, 9)


# -- prompts ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", [MatmulTask(), KroneckerTask()], ids=["matmul", "kronecker"])
def test_prompt_structure(task: MatmulTask | KroneckerTask) -> None:
    text = task.prompt("A=\n1\nB=\n2")
    assert text.startswith(task.instruction() + "\n" + FENCE_INSTRUCTION + "\n")
    assert "Here are 2 examples:\nExample 1:\n" in text
    assert text.endswith("********\n" + TAIL.format("A=\n1\nB=\n2"))
    assert task.delimiter == " "


def test_kronecker_instruction_uses_otimes() -> None:
    assert "A ⊗ B" in KroneckerTask().instruction()
    assert "⊗" not in MatmulTask().instruction()


def test_metadata() -> None:
    assert (MatmulTask.slug, MatmulTask.display_name) == ("matmul", "Matrix Multiplication")
    assert MatmulTask.legacy_names == ("MatrixMultiplicationProblem",)
    assert (KroneckerTask.slug, KroneckerTask.display_name) == ("kronecker", "Kronecker Product")
    assert KroneckerTask.legacy_names == ("KroneckerProductProblem",)
    with pytest.raises(ValueError, match="variant"):
        MatmulTask("x")


# -- the authors' reproduction data ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("folder", "cls"),
    [("Matrix_multiplication_dataset", MatmulTask), ("Kronecker_product_dataset", KroneckerTask)],
)
def test_paper_references_reproduced(
    folder: str, cls: type[MatmulTask | KroneckerTask], paper_data: Path
) -> None:
    (path,) = (paper_data / folder).glob("data-*.arrow")
    with path.open("rb") as fh:
        frame = pl.from_arrow(ipc.open_stream(fh).read_all())
    assert isinstance(frame, pl.DataFrame) and frame.height == 300
    task = cls()
    for row in frame.iter_rows(named=True):
        assert task.solve(row["input"]) == row["reference"]
