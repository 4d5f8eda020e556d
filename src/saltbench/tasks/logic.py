"""First-Order Logic task (docs/tasks.md §4, §8.4; docs/compatibility.md §1.13) — really propositional logic.

The task class; the formulas, their SAT-based deduction and the generator are in
:mod:`saltbench.tasks.logic_formulas`, imported on first use (it imports SymPy, and the Snakefile reads the
task registry while planning).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from saltbench.tasks.base import FewShot, Task, dataset_frame, sample_ids

if TYPE_CHECKING:
    import polars as pl


_FEW_SHOTS = (
    FewShot(
        input="∧(p3, ¬(p2))\n→(p4, p5)\n∨(p3, p7)\n\nInitial Assignments:\np3: True\n",
        output="p2: False\np3: True\n",
    ),
    FewShot(
        input=(
            "¬(p7)\n↔(p10, p12)\n∧(p4, ¬(p11))\n\nInitial Assignments:\np7: False\np10: True\np12: True\n"
        ),
        output="p4: True\np7: False\np10: True\np11: False\np12: True\n",
    ),
)


class LogicTask(Task):
    """First-Order Logic: deduce every forced truth value (docs/tasks.md §4).

    ``generate`` params (all optional):
        num_variables: allowed N (= formulas = variables), drawn uniformly; default 6, 8, …, 40.
        num_variables_range: ``(min, max)``, upstream rule (only min, min+2, … are drawn).
        num_initial_assignments: fixed k (upstream); default: ``floor(N · f)``.
        assignment_fractions: the f values; default 1/5, 1/4, 1/3, 1/2.
        layout_blank_lines: 1 (package layout, default) or 2 (paper-data layout).
    """

    slug: ClassVar[str] = "logic"
    display_name: ClassVar[str] = "First-Order Logic"
    label: ClassVar[str] = "Logic"
    legacy_names: ClassVar[tuple[str, ...]] = ("LogicProblem",)
    delimiter = "\n"
    atom_regex = None
    few_shots = _FEW_SHOTS

    param_names: ClassVar[frozenset[str]] = frozenset(
        {
            "num_variables",
            "num_variables_range",
            "num_initial_assignments",
            "assignment_fractions",
            "layout_blank_lines",
        }
    )

    def solve(self, input: str) -> str:
        from saltbench.tasks.logic_formulas import solve_logic

        return solve_logic(input)

    def generate(self, n: int, seed: int, **params: object) -> pl.DataFrame:
        from saltbench.tasks.logic_formulas import create_logic_samples, render_assignments, render_input

        self.check_params(params)
        layout = params.pop("layout_blank_lines", 1)
        if layout not in (1, 2):
            raise ValueError(f"layout_blank_lines must be 1 or 2, got {layout!r}")
        if "num_variables_range" in params and params["num_variables_range"] is not None:
            params["num_variables_range"] = tuple(params["num_variables_range"])  # type: ignore[arg-type]
        samples = create_logic_samples(n, seed, **params)  # type: ignore[arg-type]
        ids = sample_ids(self.slug, n, seed)
        rows: list[dict[str, str | None]] = [
            {
                "sample_id": sid,
                "task": self.slug,
                "variant": None,
                "input": render_input(s.formulas, s.initial, layout),
                "reference": render_assignments(s.result),
            }
            for sid, s in zip(ids, samples, strict=True)
        ]
        return dataset_frame(rows)

    def instruction(self) -> str:
        return (
            "You are given propositional formulas in prefix notation (∧ and, ∨ or, ¬ not, → implies, "
            "↔ if and only if) over variables p1, p2, …, followed by initial truth values for some "
            "variables. "
            "Deduce every variable whose truth value is forced by the formulas together with the initial "
            "values, and print each conclusive assignment, the initial ones included, on its own line as "
            "'pK: True' or 'pK: False', ordered by variable number; leave out variables that stay "
            "undetermined."
        )

    def test_block(self, input: str) -> str:
        """Tail: request line, the input (which ends with ``\\n``), one more newline, ``Answer =``."""
        return f"Please answer the following as demonstrated before:\n{input}\nAnswer =\n"
