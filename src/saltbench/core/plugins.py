"""Plugins: tasks and confidence functions contributed by other installed packages (docs/extending.md).

A package declares them as entry points (``pyproject.toml``)::

    [project.entry-points."saltbench.tasks"]
    hex = "saltbench_hex.task:HexTask"              # a saltbench.tasks.Task subclass; the name is its slug

    [project.entry-points."saltbench.confidence"]
    covered_mass = "saltbench_hex.confidence:COVERED_MASS"   # a saltbench.confidence.ConfidenceSpec

Discovery is the standard library's (``importlib.metadata.entry_points``); the registries that use it
(:data:`saltbench.tasks.TASKS`, :data:`saltbench.confidence.CONFIDENCE_FUNCTIONS`) join the plugins to the
built-ins once, when they are imported. A plugin that fails to import is a :class:`PluginError` naming the
package and the entry point, not a traceback from inside the plugin. Standard library only.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any

TASK_GROUP = "saltbench.tasks"
"""Entry-point group of task plugins: name = task slug, value = a ``Task`` subclass."""
CONFIDENCE_GROUP = "saltbench.confidence"
"""Entry-point group of confidence-function plugins: name = function name, value = a ``ConfidenceSpec``."""


class PluginError(RuntimeError):
    """A plugin cannot be used: it fails to import, has the wrong type, reuses a name or fails a check."""


@dataclass(frozen=True)
class Plugin:
    """One loaded entry point: its ``name``, the ``package`` (distribution) that declares it, ``target``
    (the ``module:attribute`` it points at) and the loaded ``value``."""

    name: str
    package: str
    target: str
    value: Any

    def describe(self) -> str:
        """``'hex' (saltbench_hex.task:HexTask) of package saltbench-hex``."""
        return f"{self.name!r} ({self.target}) of package {self.package}"


def discover(group: str) -> list[Plugin]:
    """Load every entry point of ``group``, sorted by name.

    Raises:
        PluginError: an entry point fails to import (the message names the package, the entry point and the
            error), or two installed packages declare the same name.
    """
    found: dict[str, Plugin] = {}
    for point in importlib.metadata.entry_points(group=group):
        package = point.dist.name if point.dist is not None else "an unknown distribution"
        try:
            value = point.load()
        except Exception as exc:  # anything a broken plugin raises on import
            raise PluginError(
                f"{group} plugin {point.name!r} of package {package} ({point.value}) failed to import: "
                f"{type(exc).__name__}: {exc}; fix or uninstall the package (pip uninstall {package})"
            ) from None
        plugin = Plugin(point.name, package, point.value, value)
        if point.name in found and found[point.name].package != package:
            raise PluginError(
                f"{group} name {point.name!r} is declared by two packages: {found[point.name].package} and "
                f"{package}; uninstall one"
            )
        found[point.name] = plugin
    return [found[name] for name in sorted(found)]


__all__ = ["CONFIDENCE_GROUP", "TASK_GROUP", "Plugin", "PluginError", "discover"]
