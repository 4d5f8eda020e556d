"""The six SALT tasks (docs/tasks.md §2–7), tasks of installed plugins (docs/extending.md) and the registry
``get_task(slug, variant=None)``."""

from __future__ import annotations

import re

from saltbench.core.plugins import TASK_GROUP, Plugin, PluginError, broken_plugins, discover
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

BUILTIN_TASKS: tuple[type[Task], ...] = (DnaTask, CodeTask, LogicTask, MatmulTask, KroneckerTask, WordsTask)
"""The six SALT tasks, in the paper's order."""

SLUG_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
"""A task slug: it names files (``data/datasets/{slug}.parquet``) and wildcards."""

TASK_PLUGINS: dict[str, Plugin] = {}
"""Task slug -> the entry point of the installed package that contributes it (docs/extending.md)."""


def _check_plugin(plugin: Plugin) -> None:
    """A task plugin is a :class:`Task` subclass whose slug is its entry-point name and no built-in's.

    Raises:
        PluginError: it is not (the message names the plugin and the rule).
    """
    cls = plugin.value
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise PluginError(f"task plugin {plugin.describe()} is not a saltbench.tasks.Task subclass")
    if plugin.name in {task.slug for task in BUILTIN_TASKS}:
        raise PluginError(f"task plugin {plugin.describe()} reuses the slug of a built-in task; uninstall it")
    slug = getattr(cls, "slug", None)
    if not SLUG_PATTERN.fullmatch(plugin.name) or slug != plugin.name:
        raise PluginError(
            f"task plugin {plugin.describe()}: the entry-point name must be the class's slug, a "
            f"lower-case name matching {SLUG_PATTERN.pattern} (the class says {slug!r})"
        )


def _registry() -> dict[str, type[Task]]:
    """The built-in tasks, then the plugins of the ``saltbench.tasks`` entry-point group that pass
    :func:`_check_plugin` (the conformance check runs when a configuration selects the task). A plugin that
    fails to import or fails the check is left out and recorded
    (:func:`saltbench.core.plugins.broken_plugins`): a configuration that names its slug is refused with
    the reason, the others run (a built-in whose slug a plugin reuses is refused too: which was meant?)."""
    tasks: dict[str, type[Task]] = {cls.slug: cls for cls in BUILTIN_TASKS}
    for plugin in discover(TASK_GROUP, _check_plugin):
        tasks[plugin.name] = plugin.value
        TASK_PLUGINS[plugin.name] = plugin
    return tasks


TASKS: dict[str, type[Task]] = _registry()
"""Task slug -> task class: the one registry of tasks (built-ins first, then installed plugins), in the
order used by tables and figures. The configuration schema, the rules' wildcards and the figure labels read
it."""

TASK_SLUGS: tuple[str, ...] = tuple(TASKS)


def declares_corruption(task_class: type[Task]) -> bool:
    """Whether the interventions can corrupt the task's atoms: a built-in task (its rule is in
    :mod:`saltbench.interventions`), or a plugin overriding :meth:`Task.corrupt_atom`."""
    return task_class in BUILTIN_TASKS or task_class.corrupt_atom is not Task.corrupt_atom


def get_task(slug: str, variant: str | None = None) -> Task:
    """Return a fresh task object.

    Args:
        slug: a key of :data:`TASKS` (``dna, code, logic, matmul, kronecker, words`` and the plugins').
        variant: the Code variant (``two_sum`` ...) or the Words subject (``numbers`` ...); required to
            build prompts and solve for those two tasks, optional for generation (then all variants).

    Raises:
        ValueError: unknown slug or variant (the message lists the valid names).
        PluginError: the slug is an installed plugin's that cannot be used (the message says why).
    """
    if not isinstance(slug, str):
        raise TypeError(f"task slug must be a string, got {type(slug).__name__}")
    broken = broken_plugins(TASK_GROUP)
    if slug not in TASKS and slug in broken:
        raise broken[slug]
    try:
        cls = TASKS[slug]
    except KeyError:
        raise ValueError(f"unknown task {slug!r}; known tasks: {', '.join(TASK_SLUGS)}") from None
    return cls(variant) if variant is not None else cls()


__all__ = [
    "BUILTIN_TASKS",
    "CODE_VARIANTS",
    "DATASET_COLUMNS",
    "FENCE",
    "FENCE_INSTRUCTION",
    "STYLES",
    "TASKS",
    "TASK_PLUGINS",
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
    "declares_corruption",
    "get_task",
]
