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


def task_failures(
    cls: type[Task], *, n: int = 8, seed: int = 20260601, corrupt: Corrupt | None = None
) -> list[Failure]:
    """Every failed check of task class ``cls`` on ``n`` rows generated with ``seed`` (module docstring)."""
    state: dict[str, pl.DataFrame] = {}

    def generated() -> pl.DataFrame:
        if "frame" not in state:
            state["frame"] = _instance(cls, None).generate(n, seed)
        return state["frame"]

    def deterministic() -> str | None:
        again = _instance(cls, None).generate(n, seed)
        return None if again.equals(generated()) else f"two calls of generate({n}, seed={seed}) differ"

    def contract() -> str | None:
        frame = generated()
        try:
            DATASET.validate(frame, f"{cls.__name__}.generate")
        except ContractError as exc:
            return str(exc)
        if frame.height != n:
            return f"generate({n}, ...) returned {frame.height} rows"
        if set(frame["task"].to_list()) != {cls.slug}:
            return f"the task column holds {sorted(set(frame['task'].to_list()))}, expected [{cls.slug!r}]"
        if frame["sample_id"].n_unique() != frame.height:
            return "sample ids repeat"
        return None

    def rows() -> list[dict[str, str | None]]:
        return generated().select("variant", "input", "reference").to_dicts()

    def solves() -> str | None:
        for row in rows():
            got = _instance(cls, row["variant"]).solve(str(row["input"]))
            if got != row["reference"]:
                given, want = str(row["input"])[:60], str(row["reference"])[:60]
                return f"solve({given!r}...) gave {got[:60]!r}, the reference is {want!r}"
        return None

    def precision_one() -> str | None:
        for row in rows():
            task, reference = _instance(cls, row["variant"]), str(row["reference"])
            for granularity in GRANULARITIES:
                for alignment in ALIGNMENTS:
                    ev = evaluate(
                        task.render_answer(reference),
                        reference,
                        task,
                        granularity=granularity,
                        alignment=alignment,
                        keyword_filter=False,
                    )
                    if ev.metrics["precision"] != 1:
                        return (
                            f"the rendered reference of {row['input']!r:.60} has precision "
                            f"{ev.metrics['precision']} at {granularity}/{alignment}"
                        )
        return None

    def prompts() -> str | None:
        row = rows()[0]
        task = _instance(cls, row["variant"])
        for style in STYLES:
            text = task.prompt(str(row["input"]), style)
            if FENCE_INSTRUCTION not in text:
                return f"the {style} prompt lacks the fence instruction"
            if str(row["input"]) not in text:
                return f"the {style} prompt does not contain the input"
        return None

    def corrupted() -> str | None:
        rng = random.Random(seed)
        for row in rows():
            task, reference = _instance(cls, row["variant"]), str(row["reference"])
            rule = corrupt(cls.slug, row["variant"]) if corrupt is not None else task.corrupt_atom
            answer = task.render_answer(reference)
            ev = evaluate(answer, reference, task, granularity="atom", keyword_filter=False)
            if not ev.response_unit_spans:
                continue
            start, end = ev.response_unit_spans[0]
            new = rule(answer[start:end], rng)
            if new is None:
                return "corrupt_atom returned None for an atom of the reference"
            damaged = evaluate(
                answer[:start] + new + answer[end:], reference, task, granularity="atom", keyword_filter=False
            )
            if not damaged.comparisons or damaged.comparisons[0].status != "incorrect":
                status = damaged.comparisons[0].status if damaged.comparisons else "no unit"
                return f"atom {answer[start:end]!r} corrupted to {new!r} scores {status!r}, not 'incorrect'"
        return None

    def not_the_input() -> str | None:
        if any(str(row["input"]).split() != str(row["reference"]).split() for row in rows()):
            return None
        return (
            f"the reference equals the input on all {n} generated rows: a model that echoes its input would "
            "score as correct (does solve return its input?)"
        )

    checks: list[tuple[str, Callable[[], str | None]]] = [
        (TASK_CHECKS[0], deterministic),
        (TASK_CHECKS[1], contract),
        (TASK_CHECKS[2], solves),
        (TASK_CHECKS[3], precision_one),
        (TASK_CHECKS[4], prompts),
    ]
    if corrupt is not None or cls.corrupt_atom is not Task.corrupt_atom:
        checks.append((TASK_CHECKS[5], corrupted))
    checks.append((TASK_CHECKS[6], not_the_input))
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
