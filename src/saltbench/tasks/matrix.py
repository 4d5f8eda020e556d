"""Matrix Multiplication and Kronecker Product (docs/tasks.md §5–6).

Both tasks share one text format. The input is ``A=`` on a line, the rows of ``A`` (integers separated
by single spaces), ``B=`` on a line and the rows of ``B``; lines joined by ``\\n``, no trailing newline::

    A=
    1 2
    3 1
    B=
    1 2
    2 1

The reference is the result matrix in the same row format (``5 4\\n5 7`` for ``A·B`` above). Atoms
are matrix entries (delimiter ``" "``), lines are matrix rows.

Generation (``numpy.random.default_rng(seed)``, one generator for all rows) picks an *output length*
``L`` (number of result entries) per row, then operand shapes whose result has ``L`` entries:

* ``matmul``: output shape ``(m, n)`` from the divisor pairs ``(i, L // i)``, ``i = 1..floor(sqrt L)``
  (hence ``m <= n``), both ``> 1`` unless scalar operations are allowed; ``inner`` uniform on
  ``[min_inner_dim, max_inner_dim]``; ``A`` is ``m x inner``, ``B`` is ``inner x n``.
* ``kronecker``: every ``(ra, ca, rb, cb)`` with ``(ra*rb) * (ca*cb) = L`` (enumeration order in
  :func:`kronecker_shapes`), without ``1 x 1`` operands unless scalar operations are allowed; with
  probability ``prefer_2d_probability`` the choice is restricted to shapes with no dimension equal to 1.

Entries are uniform integers on ``[value_min, value_max]``. With ``sample_lengths="cycle"`` the lengths
are used in order, cyclically (the authors' generator; lengths without a valid shape are skipped, which
consumes no randomness); with ``"random"`` one length is drawn uniformly per row. Defaults reproduce the
ranges of the paper data (docs/tasks.md §8.5–8.6): ``matmul`` lengths 6..64 (even) cycled, ``kronecker``
lengths 40..290 (step 10) drawn at random. With ``sample_lengths="cycle"``, lengths ``range(6, 66, 2)``
and the default values, both generators are seed-exact with the authors' package.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
import polars as pl

from saltbench.tasks.base import (
    DK_ALTERNATIVES,
    NUMBER_PATTERN,
    FewShot,
    Task,
    check_n_seed,
    dataset_frame,
    make_params,
    sample_ids,
)

LengthSampling = Literal["cycle", "random"]
LENGTH_SAMPLING_MODES: tuple[LengthSampling, ...] = ("cycle", "random")

IntMatrix = np.ndarray
"""A 2-D integer ``numpy`` array."""


# -- text format --------------------------------------------------------------------------------------
def format_matrix(matrix: IntMatrix) -> str:
    """Rows joined by ``\\n``, entries by a single space, plain integer formatting (``-65``)."""
    return "\n".join(" ".join(str(v) for v in row) for row in np.asarray(matrix).tolist())


def format_operands(a: IntMatrix, b: IntMatrix) -> str:
    """The task input text ``A=\\n<rows of a>\\nB=\\n<rows of b>``."""
    return f"A=\n{format_matrix(a)}\nB=\n{format_matrix(b)}"


def _parse_rows(text: str, name: str) -> IntMatrix:
    rows: list[list[int]] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            rows.append([int(tok) for tok in line.split()])
        except ValueError:
            raise ValueError(f"matrix {name} has a non-integer entry in row {line!r}") from None
    if not rows:
        raise ValueError(f"matrix {name} has no rows")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ValueError(f"matrix {name} is ragged: row lengths {sorted(widths)}")
    return np.array(rows, dtype=np.int64)


def parse_operands(text: str) -> tuple[IntMatrix, IntMatrix]:
    """Parse ``A=\\n...\\nB=\\n...`` into two integer matrices.

    Raises:
        ValueError: no ``\\nB=`` separator, a non-integer entry, a ragged or empty matrix.
    """
    if "\nB=" not in text:
        raise ValueError(f"input must contain a '\\nB=' line separating the matrices, got {text[:60]!r}")
    a_text, b_text = text.split("\nB=", 1)
    a_text = a_text.strip()
    if a_text.startswith("A="):
        a_text = a_text[2:]
    return _parse_rows(a_text, "A"), _parse_rows(b_text, "B")


# -- shapes ---------------------------------------------------------------------------------------------
def _divisors(value: int) -> list[int]:
    return [d for d in range(1, value + 1) if value % d == 0]


def matmul_output_shapes(length: int, allow_scalar_operations: bool = False) -> list[tuple[int, int]]:
    """Output shapes ``(i, length // i)`` for ``i = 1..floor(sqrt(length))`` dividing ``length``.

    Rows <= columns always; without ``allow_scalar_operations`` both dimensions must exceed 1.
    """
    shapes = [(i, length // i) for i in range(1, math.isqrt(length) + 1) if length % i == 0]
    if not allow_scalar_operations:
        shapes = [(r, c) for r, c in shapes if r > 1 and c > 1]
    return shapes


def kronecker_shapes(length: int, allow_scalar_operations: bool = False) -> list[tuple[int, int, int, int]]:
    """Operand shapes ``(ra, ca, rb, cb)`` with ``ra*rb * ca*cb == length``.

    Order: output rows ``R`` over the divisors of ``length`` ascending (``C = length / R``); then ``ra``
    over the divisors of ``R`` ascending (``rb = R / ra``); innermost ``ca`` over the divisors of ``C``
    ascending (``cb = C / ca``). ``1 x 1`` operands are dropped unless ``allow_scalar_operations``;
    vectors (``1 x k``, ``k x 1``) are kept.
    """
    shapes: list[tuple[int, int, int, int]] = []
    for rows in _divisors(length):
        cols = length // rows
        for ra in _divisors(rows):
            for ca in _divisors(cols):
                rb, cb = rows // ra, cols // ca
                scalar = (ra == 1 and ca == 1) or (rb == 1 and cb == 1)
                if allow_scalar_operations or not scalar:
                    shapes.append((ra, ca, rb, cb))
    return shapes


# -- parameters -----------------------------------------------------------------------------------------
def _check_int(name: str, value: object, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class _MatrixParams:
    """Parameters shared by both matrix generators (see the module docstring)."""

    output_lengths: Sequence[int] = ()
    sample_lengths: LengthSampling = "cycle"
    value_min: int = -9
    value_max: int = 9
    allow_scalar_operations: bool = False

    def __post_init__(self) -> None:
        lengths = self.output_lengths
        if isinstance(lengths, (str, bytes)) or not isinstance(lengths, (Sequence, range, np.ndarray)):
            raise ValueError(f"output_lengths must be a sequence of positive integers, got {lengths!r}")
        checked = tuple(_check_int("output_lengths entry", v, minimum=1) for v in lengths)
        if not checked:
            raise ValueError("output_lengths must not be empty")
        object.__setattr__(self, "output_lengths", checked)
        if self.sample_lengths not in LENGTH_SAMPLING_MODES:
            raise ValueError(
                f"sample_lengths must be one of {LENGTH_SAMPLING_MODES}, got {self.sample_lengths!r}"
            )
        _check_int("value_min", self.value_min)
        _check_int("value_max", self.value_max)
        if self.value_max < self.value_min:
            raise ValueError(f"value_max must be >= value_min ({self.value_min}), got {self.value_max}")
        if not isinstance(self.allow_scalar_operations, bool):
            raise ValueError(f"allow_scalar_operations must be a bool, got {self.allow_scalar_operations!r}")


@dataclass(frozen=True)
class MatmulParams(_MatrixParams):
    """Matrix Multiplication generator parameters; inner dimension uniform on the inclusive range."""

    output_lengths: Sequence[int] = field(default_factory=lambda: tuple(range(6, 66, 2)))
    sample_lengths: LengthSampling = "cycle"
    min_inner_dim: int = 2
    max_inner_dim: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_int("min_inner_dim", self.min_inner_dim, minimum=1)
        _check_int("max_inner_dim", self.max_inner_dim)
        if self.max_inner_dim < self.min_inner_dim:
            raise ValueError(
                f"max_inner_dim must be >= min_inner_dim ({self.min_inner_dim}), got {self.max_inner_dim}"
            )


@dataclass(frozen=True)
class KroneckerParams(_MatrixParams):
    """Kronecker Product generator parameters (``prefer_2d_probability`` in ``[0, 1]``)."""

    output_lengths: Sequence[int] = field(default_factory=lambda: tuple(range(40, 300, 10)))
    sample_lengths: LengthSampling = "random"
    prefer_2d_probability: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        p = self.prefer_2d_probability
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"prefer_2d_probability must be a number in [0, 1], got {p!r}")


# -- tasks ----------------------------------------------------------------------------------------------
class _MatrixTask(Task):
    """Shared text format, solver skeleton and generation loop of the two matrix tasks."""

    delimiter = " "
    atom_regex = rf"{NUMBER_PATTERN}|{DK_ALTERNATIVES}"
    """Declared for completeness only: the space delimiter wins (docs/tasks.md §1.2)."""
    params_class: ClassVar[type[_MatrixParams]]

    def __init__(self, variant: str | None = None) -> None:
        if variant is not None:
            raise ValueError(f"the {self.slug} task has no variants, got variant={variant!r}")
        super().__init__(None)

    @staticmethod
    @abc.abstractmethod
    def combine(a: IntMatrix, b: IntMatrix) -> IntMatrix:
        """The matrix the task asks for."""

    @abc.abstractmethod
    def _has_shape(self, length: int, params: _MatrixParams) -> bool:
        """Whether ``length`` admits at least one operand shape under ``params``."""

    @abc.abstractmethod
    def _sample_operands(
        self, rng: np.random.Generator, length: int, params: _MatrixParams
    ) -> tuple[IntMatrix, IntMatrix]:
        """Draw one operand pair whose result has ``length`` entries."""

    def solve(self, input: str) -> str:
        """Parse the two matrices and print :meth:`combine` in the row format."""
        a, b = parse_operands(input)
        return format_matrix(self.combine(a, b))

    def generate(self, n: int, seed: int, **params: object) -> pl.DataFrame:
        """``n`` operand pairs from ``numpy.random.default_rng(seed)`` (params: the task's params class).

        Raises:
            ValueError: bad parameter values, or no output length admitting an operand shape.
        """
        n, seed = check_n_seed(n, seed)
        p = make_params(self.params_class, params)
        # Skipping shape-less lengths up front equals the authors' skip-the-attempt loop (no RNG used).
        lengths = [length for length in p.output_lengths if self._has_shape(length, p)]
        if not lengths:
            raise ValueError(
                f"no entry of output_lengths={list(p.output_lengths)} admits a {self.slug} operand shape "
                f"(allow_scalar_operations={p.allow_scalar_operations})"
            )
        rng = np.random.default_rng(seed)
        rows: list[dict[str, str | None]] = []
        for i, sid in enumerate(sample_ids(self.slug, n, seed)):
            if p.sample_lengths == "cycle":
                length = lengths[i % len(lengths)]
            else:
                length = lengths[int(rng.integers(len(lengths)))]
            a, b = self._sample_operands(rng, length, p)
            rows.append(
                {
                    "sample_id": sid,
                    "task": self.slug,
                    "variant": None,
                    "input": format_operands(a, b),
                    "reference": format_matrix(self.combine(a, b)),
                }
            )
        return dataset_frame(rows)

    def test_block(self, input: str) -> str:
        return f"Please answer the following as demonstrated before:\n{input}\nSolution:\n"


class MatmulTask(_MatrixTask):
    """Matrix Multiplication: print ``A·B``."""

    slug = "matmul"
    display_name = "Matrix Multiplication"
    label = "MatMul"
    legacy_names = ("MatrixMultiplicationProblem",)
    params_class = MatmulParams
    few_shots = (
        FewShot("A=\n1 2\n3 4\nB=\n5 6\n7 8", "19 22\n43 50"),
        FewShot("A=\n-1 0 2\nB=\n3\n4\n5", "7"),
    )

    @staticmethod
    def combine(a: IntMatrix, b: IntMatrix) -> IntMatrix:
        """``a @ b``; ``ValueError`` when the inner dimensions differ."""
        if a.shape[1] != b.shape[0]:
            raise ValueError(f"cannot multiply A {a.shape} by B {b.shape}: inner dimensions differ")
        return a @ b

    def _has_shape(self, length: int, params: _MatrixParams) -> bool:
        return bool(matmul_output_shapes(length, params.allow_scalar_operations))

    def _sample_operands(
        self, rng: np.random.Generator, length: int, params: _MatrixParams
    ) -> tuple[IntMatrix, IntMatrix]:
        assert isinstance(params, MatmulParams)
        shapes = matmul_output_shapes(length, params.allow_scalar_operations)
        rows, cols = shapes[rng.integers(len(shapes))]
        inner = rng.integers(params.min_inner_dim, params.max_inner_dim + 1)
        a = rng.integers(params.value_min, params.value_max + 1, size=(rows, inner))
        b = rng.integers(params.value_min, params.value_max + 1, size=(inner, cols))
        return a, b

    def instruction(self) -> str:
        return (
            "You are given two matrices A and B, written row by row: the entries of a row are separated by "
            "single spaces and the rows by newlines. Compute the matrix product A·B and print it in the "
            "same format."
        )

    def worked_solution(self, input: str) -> str:
        """Every entry as its sum of products, row by row: ``a11*b11+a12*b21=c11 ...`` (one line per row)."""
        a, b = parse_operands(input)
        c = self.combine(a, b)
        return "\n".join(
            " ".join(
                "+".join(f"{a[i, k]}*{b[k, j]}" for k in range(a.shape[1])) + f"={c[i, j]}"
                for j in range(c.shape[1])
            )
            for i in range(c.shape[0])
        )


class KroneckerTask(_MatrixTask):
    """Kronecker Product: print ``A ⊗ B``."""

    slug = "kronecker"
    display_name = "Kronecker Product"
    label = "Kronecker"
    legacy_names = ("KroneckerProductProblem",)
    params_class = KroneckerParams
    few_shots = (
        FewShot("A=\n1 2\nB=\n3 4", "3 4 6 8"),
        FewShot("A=\n1\n2\nB=\n3 4", "3 4\n6 8"),
    )

    @staticmethod
    def combine(a: IntMatrix, b: IntMatrix) -> IntMatrix:
        """``numpy.kron(a, b)``: block ``(i, j)`` is ``a[i, j] * b``."""
        return np.kron(a, b)

    def _has_shape(self, length: int, params: _MatrixParams) -> bool:
        return bool(kronecker_shapes(length, params.allow_scalar_operations))

    def _sample_operands(
        self, rng: np.random.Generator, length: int, params: _MatrixParams
    ) -> tuple[IntMatrix, IntMatrix]:
        assert isinstance(params, KroneckerParams)
        shapes = kronecker_shapes(length, params.allow_scalar_operations)
        if rng.random() < params.prefer_2d_probability:
            two_d = [s for s in shapes if 1 not in s]
            if two_d:
                shapes = two_d
        ra, ca, rb, cb = shapes[rng.integers(len(shapes))]
        a = rng.integers(params.value_min, params.value_max + 1, size=(ra, ca))
        b = rng.integers(params.value_min, params.value_max + 1, size=(rb, cb))
        return a, b

    def instruction(self) -> str:
        return (
            "You are given two matrices A and B, written row by row: the entries of a row are separated by "
            "single spaces and the rows by newlines. Compute their Kronecker product A ⊗ B and print it in "
            "the same row-by-row format."
        )

    def worked_solution(self, input: str) -> str:
        """Every entry as its product ``a_ij*b_kl=p``, in the output's row-by-row order (one line per row)."""
        a, b = parse_operands(input)
        (ra, ca), (rb, cb) = a.shape, b.shape
        return "\n".join(
            " ".join(f"{a[i, j]}*{b[k, m]}={a[i, j] * b[k, m]}" for j in range(ca) for m in range(cb))
            for i in range(ra)
            for k in range(rb)
        )


__all__ = [
    "LENGTH_SAMPLING_MODES",
    "KroneckerParams",
    "KroneckerTask",
    "LengthSampling",
    "MatmulParams",
    "MatmulTask",
    "format_matrix",
    "format_operands",
    "kronecker_shapes",
    "matmul_output_shapes",
    "parse_operands",
]
