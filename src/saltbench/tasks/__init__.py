"""The six SALT tasks (docs/tasks.md §2–7) and the registry ``get_task(slug, variant=None)``."""

from __future__ import annotations

from saltbench.core.vocabulary import STYLES, PromptStyle
from saltbench.tasks.base import (
    DATASET_COLUMNS,
    FENCE,
    FENCE_INSTRUCTION,
    FewShot,
    Task,
)
from saltbench.tasks.code import CODE_VARIANTS, CodeTask
from saltbench.tasks.dna import DnaTask
from saltbench.tasks.logic import LogicTask
from saltbench.tasks.matrix import KroneckerTask, MatmulTask
from saltbench.tasks.words import WORDS_SUBJECTS, WordsTask

TASKS: dict[str, type[Task]] = {
    "dna": DnaTask,
    "code": CodeTask,
    "logic": LogicTask,
    "matmul": MatmulTask,
    "kronecker": KroneckerTask,
    "words": WordsTask,
}
"""Task slug -> task class, in the order used by tables and figures."""

TASK_SLUGS: tuple[str, ...] = tuple(TASKS)


def get_task(slug: str, variant: str | None = None) -> Task:
    """Return a fresh task object.

    Args:
        slug: one of ``dna, code, logic, matmul, kronecker, words``.
        variant: the Code variant (``two_sum`` ...) or the Words subject (``numbers`` ...); required to
            build prompts and solve for those two tasks, optional for generation (then all variants).

    Raises:
        ValueError: unknown slug or variant (the message lists the valid names).
    """
    if not isinstance(slug, str):
        raise TypeError(f"task slug must be a string, got {type(slug).__name__}")
    try:
        cls = TASKS[slug]
    except KeyError:
        raise ValueError(f"unknown task {slug!r}; known tasks: {', '.join(TASK_SLUGS)}") from None
    return cls(variant) if variant is not None else cls()


__all__ = [
    "CODE_VARIANTS",
    "DATASET_COLUMNS",
    "FENCE",
    "FENCE_INSTRUCTION",
    "STYLES",
    "TASKS",
    "TASK_SLUGS",
    "WORDS_SUBJECTS",
    "CodeTask",
    "DnaTask",
    "FewShot",
    "KroneckerTask",
    "LogicTask",
    "MatmulTask",
    "PromptStyle",
    "Task",
    "WordsTask",
    "get_task",
]
