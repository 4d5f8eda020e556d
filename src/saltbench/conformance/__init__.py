"""Conformance checks for plugin authors (docs/extending.md §4), run on the built-in tasks and functions too.

:func:`check_task` and :func:`check_confidence_function` run every check and raise
:class:`ConformanceError` naming the first that fails (its name is in :data:`TASK_CHECKS` /
:data:`CONFIDENCE_CHECKS`); :func:`task_failures` / :func:`confidence_failures` return every failure
instead. The workflow runs them on the plugins a configuration selects, before any job
(:mod:`saltbench.config.checks`): a broken plugin is refused with the failed check named, before it can
produce a wrong number.
"""

from saltbench.conformance.common import ConformanceError, Failure
from saltbench.conformance.confidence import (
    CONFIDENCE_CHECKS,
    check_confidence_function,
    confidence_failures,
)
from saltbench.conformance.tasks import TASK_CHECKS, check_task, task_failures

__all__ = [
    "CONFIDENCE_CHECKS",
    "TASK_CHECKS",
    "ConformanceError",
    "Failure",
    "check_confidence_function",
    "check_task",
    "confidence_failures",
    "task_failures",
]
