"""Conformance checks for plugin authors (docs/extending.md §4), run on the built-in tasks and functions too.

:func:`check_task` and :func:`check_confidence_function` run every check and raise
:class:`ConformanceError` naming the first that fails (its name is in :data:`TASK_CHECKS` /
:data:`CONFIDENCE_CHECKS`); :func:`task_failures` / :func:`confidence_failures` return every failure
instead. The workflow runs them on the plugins a configuration selects, before any job
(:mod:`saltbench.config.checks`): a broken plugin is refused with the failed check named, before it can
produce a wrong number.

:func:`check_backend` / :func:`backend_failures` (:data:`BACKEND_CHECKS`) check an inference backend on one
registry entry and its model files: it loads a model, so the author of a backend runs it (and the test
suite on the built-in backends and the example backend, docs/extending.md §9), not the configuration check.
Imported on first use.
"""

from typing import TYPE_CHECKING

from saltbench.conformance.common import ConformanceError, Failure
from saltbench.conformance.confidence import (
    CONFIDENCE_CHECKS,
    check_confidence_function,
    confidence_failures,
)
from saltbench.conformance.tasks import TASK_CHECKS, check_task, task_failures
from saltbench.core.lazy import lazy_getattr

__getattr__ = lazy_getattr(
    __name__,
    {"BACKEND_CHECKS": "backends", "backend_failures": "backends", "check_backend": "backends"},
)

if TYPE_CHECKING:
    from saltbench.conformance.backends import BACKEND_CHECKS, backend_failures, check_backend

__all__ = [
    "BACKEND_CHECKS",
    "CONFIDENCE_CHECKS",
    "TASK_CHECKS",
    "ConformanceError",
    "Failure",
    "backend_failures",
    "check_backend",
    "check_confidence_function",
    "check_task",
    "confidence_failures",
    "task_failures",
]
