"""Conformance of a task class: what every stage of the workflow assumes of a task (docs/extending.md §4).

Checks, in order (:data:`TASK_CHECKS`):

* ``generate is deterministic``: ``generate(n, seed)`` twice gives equal frames;
* ``dataset contract``: the frame satisfies the dataset contract (:data:`saltbench.core.contracts.DATASET`),
  holds ``n`` rows of this task with unique sample ids;
* ``solve reproduces the reference``: ``solve(input) == reference`` on every generated row;
* ``reference scores precision 1``: the rendered reference, evaluated against itself, has precision 1 at
  every granularity and alignment (without the authors' bad-keyword filter, which can drop a correct
  Words answer naming e.g. an analyst: docs/compatibility.md);
* ``prompts carry the fence instruction``: both prompt styles contain the fence instruction and the input;
* ``a corrupted atom scores incorrect``: the first atom replaced by the task's corruption is ``incorrect``
  at atom level (only for a task that declares a corruption: ``corrupt`` or ``Task.corrupt_atom``);
* ``the answer is not the input``: on some generated row the reference's atoms differ from the input's
  (a task whose ``generate`` takes its references from its own ``solve`` passes the checks above even when
  ``solve`` returns its input, and then a model that echoes its prompt scores as correct).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import polars as pl

from saltbench.conformance.common import Failure, raise_first, run_checks
from saltbench.core.contracts import DATASET, ContractError
from saltbench.core.vocabulary import ALIGNMENTS, GRANULARITIES, STYLES
from saltbench.evaluation import evaluate
from saltbench.tasks import FENCE_INSTRUCTION, Task

TASK_CHECKS: tuple[str, ...] = (
    "generate is deterministic",
    "dataset contract",
    "solve reproduces the reference",
    "reference scores precision 1",
    "prompts carry the fence instruction",
    "a corrupted atom scores incorrect",
    "the answer is not the input",
)
"""The names of the task checks, in the order they run."""

Corrupt = Callable[[str, str | None], Callable[[str, random.Random], str | None]]
"""``corrupt(slug, variant) -> (atom, rng) -> corrupted atom``: a corruption rule from outside the task
(the built-in tasks': :func:`saltbench.interventions.corruptor_for`)."""


def _instance(cls: type[Task], variant: str | None) -> Task:
    return cls(variant) if variant is not None else cls()


_Rows = list[dict[str, str | None]]
"""The ``variant``, ``input`` and ``reference`` of each generated row."""


def _memoised_frame(cls: type[Task], row_count: int, seed: int) -> Callable[[], pl.DataFrame]:
    """A function giving ``generate(row_count, seed)`` of a default ``cls``: generated on its first
    successful call and kept (called again while ``generate`` raises)."""
    state: dict[str, pl.DataFrame] = {}

    def generated() -> pl.DataFrame:
        if "frame" not in state:
            state["frame"] = _instance(cls, None).generate(row_count, seed)
        return state["frame"]

    return generated


def _rows(frame: pl.DataFrame) -> _Rows:
    """The rows of a generated frame, as the checks below read them."""
    return frame.select("variant", "input", "reference").to_dicts()


def _deterministic_problem(
    cls: type[Task], row_count: int, seed: int, generated: Callable[[], pl.DataFrame]
) -> str | None:
    """Check that a fresh ``generate(row_count, seed)``, run first, equals the kept frame (``None``: it does,
    else the problem)."""
    again = _instance(cls, None).generate(row_count, seed)
    return None if again.equals(generated()) else f"two calls of generate({row_count}, seed={seed}) differ"


def _contract_problem(cls: type[Task], row_count: int, frame: pl.DataFrame) -> str | None:
    """Check that the frame satisfies the dataset contract and holds ``row_count`` rows of ``cls`` with unique
    sample ids (``None``: it does, else the first problem)."""
    try:
        DATASET.validate(frame, f"{cls.__name__}.generate")
    except ContractError as error:
        return str(error)
    if frame.height != row_count:
        return f"generate({row_count}, ...) returned {frame.height} rows"
    if set(frame["task"].to_list()) != {cls.slug}:
        return f"the task column holds {sorted(set(frame['task'].to_list()))}, expected [{cls.slug!r}]"
    if frame["sample_id"].n_unique() != frame.height:
        return "sample ids repeat"
    return None


def _solve_problem(cls: type[Task], rows: _Rows) -> str | None:
    """Check that ``solve(input)`` gives the reference on every row (``None``, else the first miss)."""
    for row in rows:
        solved = _instance(cls, row["variant"]).solve(str(row["input"]))
        if solved != row["reference"]:
            given, wanted = str(row["input"])[:60], str(row["reference"])[:60]
            return f"solve({given!r}...) gave {solved[:60]!r}, the reference is {wanted!r}"
    return None


def _precision_problem(cls: type[Task], rows: _Rows) -> str | None:
    """Check that every row's rendered reference, evaluated against itself without the keyword filter, has
    precision 1 at every granularity and alignment (``None``, else the first that does not)."""
    for row in rows:
        task, reference = _instance(cls, row["variant"]), str(row["reference"])
        for granularity in GRANULARITIES:
            for alignment in ALIGNMENTS:
                evaluation = evaluate(
                    task.render_answer(reference),
                    reference,
                    task,
                    granularity=granularity,
                    alignment=alignment,
                    keyword_filter=False,
                )
                if evaluation.metrics["precision"] != 1:
                    return (
                        f"the rendered reference of {row['input']!r:.60} has precision "
                        f"{evaluation.metrics['precision']} at {granularity}/{alignment}"
                    )
    return None


def _prompt_problem(cls: type[Task], rows: _Rows) -> str | None:
    """Check that the first row's prompt, in every style, holds the fence instruction and the input."""
    row = rows[0]
    task = _instance(cls, row["variant"])
    for style in STYLES:
        text = task.prompt(str(row["input"]), style)
        if FENCE_INSTRUCTION not in text:
            return f"the {style} prompt lacks the fence instruction"
        if str(row["input"]) not in text:
            return f"the {style} prompt does not contain the input"
    return None


def _corruption_problem(cls: type[Task], seed: int, corrupt: Corrupt | None, rows: _Rows) -> str | None:
    """Check that the first atom of each row's rendered reference, corrupted by ``corrupt`` (else the task's
    ``corrupt_atom``) with a random source seeded with ``seed``, scores ``incorrect`` at atom level."""
    random_source = random.Random(seed)
    for row in rows:
        task, reference = _instance(cls, row["variant"]), str(row["reference"])
        rule = corrupt(cls.slug, row["variant"]) if corrupt is not None else task.corrupt_atom
        answer = task.render_answer(reference)
        evaluation = evaluate(answer, reference, task, granularity="atom", keyword_filter=False)
        if not evaluation.response_unit_spans:
            continue
        start, end = evaluation.response_unit_spans[0]
        corrupted = rule(answer[start:end], random_source)
        if corrupted is None:
            return "corrupt_atom returned None for an atom of the reference"
        damaged = evaluate(
            answer[:start] + corrupted + answer[end:],
            reference,
            task,
            granularity="atom",
            keyword_filter=False,
        )
        if not damaged.comparisons or damaged.comparisons[0].status != "incorrect":
            status = damaged.comparisons[0].status if damaged.comparisons else "no unit"
            return f"atom {answer[start:end]!r} corrupted to {corrupted!r} scores {status!r}, not 'incorrect'"
    return None


def _echo_problem(row_count: int, rows: _Rows) -> str | None:
    """Check that on some row the reference's atoms differ from the input's (else an echoing model scores)."""
    if any(str(row["input"]).split() != str(row["reference"]).split() for row in rows):
        return None
    return (
        f"the reference equals the input on all {row_count} generated rows: a model that echoes its input "
        "would score as correct (does solve return its input?)"
    )


def task_failures(
    cls: type[Task], *, n: int = 8, seed: int = 20260601, corrupt: Corrupt | None = None
) -> list[Failure]:
    """Every failed check of task class ``cls`` on ``n`` rows generated with ``seed`` (module docstring)."""
    generated = _memoised_frame(cls, n, seed)
    checks: list[tuple[str, Callable[[], str | None]]] = [
        (TASK_CHECKS[0], lambda: _deterministic_problem(cls, n, seed, generated)),
        (TASK_CHECKS[1], lambda: _contract_problem(cls, n, generated())),
        (TASK_CHECKS[2], lambda: _solve_problem(cls, _rows(generated()))),
        (TASK_CHECKS[3], lambda: _precision_problem(cls, _rows(generated()))),
        (TASK_CHECKS[4], lambda: _prompt_problem(cls, _rows(generated()))),
    ]
    if corrupt is not None or cls.corrupt_atom is not Task.corrupt_atom:
        checks.append((TASK_CHECKS[5], lambda: _corruption_problem(cls, seed, corrupt, _rows(generated()))))
    checks.append((TASK_CHECKS[6], lambda: _echo_problem(n, _rows(generated()))))
    return run_checks(checks)


def check_task(cls: type[Task], *, n: int = 8, seed: int = 20260601, corrupt: Corrupt | None = None) -> None:
    """Raise :class:`~saltbench.conformance.ConformanceError` naming the first failed check of ``cls``.

    >>> from saltbench.tasks import DnaTask
    >>> check_task(DnaTask)
    """
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise_first(f"task {cls!r}", [Failure("a Task subclass", f"got {type(cls).__name__}")])
    raise_first(
        f"task {cls.slug!r} ({cls.__module__}.{cls.__qualname__})",
        task_failures(cls, n=n, seed=seed, corrupt=corrupt),
    )


__all__ = ["TASK_CHECKS", "Corrupt", "check_task", "task_failures"]
