"""Plugins: tasks, confidence functions and inference backends contributed by other installed packages
(docs/extending.md).

A package declares them as entry points (``pyproject.toml``)::

    [project.entry-points."saltbench.tasks"]
    hex = "saltbench_hex.task:HexTask"              # a saltbench.tasks.Task subclass; the name is its slug

    [project.entry-points."saltbench.confidence"]
    covered_mass = "saltbench_hex.confidence:COVERED_MASS"   # a saltbench.confidence.ConfidenceSpec

    [project.entry-points."saltbench.backends"]
    llamacpp = "saltbench_llamacpp:load"    # loader(model_path, spec, **settings) -> a LoadedModel

Discovery is the standard library's (``importlib.metadata.entry_points``); the registries that use it
(:data:`saltbench.tasks.TASKS`, :data:`saltbench.confidence.CONFIDENCE_FUNCTIONS`) join the plugins to the
built-ins once, when they are imported; a backend plugin is imported only when a job loads a model on it
(:func:`load_plugin`, from :mod:`saltbench.inference.backends`). A plugin that fails to import is a
:class:`PluginError` naming the package and the entry point, not a traceback from inside the plugin.
Standard library only.

Every plugin is part of the provenance of what it touches: :func:`loaded_plugins` names each loaded one with
its package, version and a digest of its package's Python source (:attr:`Plugin.fingerprint`), which
:func:`saltbench.io.provenance` records in every output and the rules take as a parameter, so that a new
version — or an edit of an editable install's code — makes the outputs that used it stale
(docs/extending.md §5).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TASK_GROUP = "saltbench.tasks"
"""Entry-point group of task plugins: name = task slug, value = a ``Task`` subclass."""
CONFIDENCE_GROUP = "saltbench.confidence"
"""Entry-point group of confidence-function plugins: name = function name, value = a ``ConfidenceSpec``."""
BACKEND_GROUP = "saltbench.backends"
"""Entry-point group of inference-backend plugins: name = backend name, value = its loader."""


class PluginError(RuntimeError):
    """A plugin cannot be used: it fails to import, has the wrong type, reuses a name or fails a check."""


@dataclass(frozen=True)
class Plugin:
    """One loaded entry point: its ``name``, the ``package`` (distribution) that declares it, ``target``
    (the ``module:attribute`` it points at), the loaded ``value``, the package's ``version`` and
    ``source_sha256``, the digest of the Python source of the top-level module ``target`` lives in
    (:func:`source_digest`)."""

    name: str
    package: str
    target: str
    value: Any
    version: str = ""
    source_sha256: str = ""

    def describe(self) -> str:
        """``'hex' (saltbench_hex.task:HexTask) of package saltbench-hex``."""
        return f"{self.name!r} ({self.target}) of package {self.package}"

    @property
    def fingerprint(self) -> str:
        """``saltbench-hex 0.1.0, source 3f2a...`` (16 hex digits): changes when the plugin's code does."""
        return f"{self.package} {self.version}, source {self.source_sha256[:16]}"


_LOADED: dict[str, Plugin] = {}


def loaded_plugins() -> dict[str, str]:
    """``{"GROUP:NAME": fingerprint}`` of every plugin this process has loaded (:func:`discover`), sorted."""
    return {key: _LOADED[key].fingerprint for key in sorted(_LOADED)}


def source_digest(module: str) -> str:
    """SHA-256 over the Python files of the top-level package (or module) that holds ``module``: each file's
    path relative to the package and its bytes, in path order; ``""`` where no source is found."""
    spec = importlib.util.find_spec(module.split(".", 1)[0])
    if spec is None or spec.origin is None:
        return ""
    origin = Path(spec.origin)
    root = origin.parent if spec.submodule_search_locations else None
    files = sorted(root.rglob("*.py")) if root is not None else [origin]
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root) if root is not None else path.name).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _load(group: str, point: importlib.metadata.EntryPoint) -> Plugin:
    """Import one entry point as a :class:`Plugin`.

    Raises:
        PluginError: it fails to import (the message names the package, the entry point and the error).
    """
    package = point.dist.name if point.dist is not None else "an unknown distribution"
    try:
        value = point.load()
    except Exception as exc:  # anything a broken plugin raises on import
        raise PluginError(
            f"{group} plugin {point.name!r} of package {package} ({point.value}) failed to import: "
            f"{type(exc).__name__}: {exc}; fix or uninstall the package (pip uninstall {package})"
        ) from None
    version = point.dist.version if point.dist is not None else ""
    return Plugin(point.name, package, point.value, value, version, source_digest(point.module))


def discover(group: str) -> list[Plugin]:
    """Load every entry point of ``group``, sorted by name.

    Raises:
        PluginError: an entry point fails to import, or two installed packages declare the same name.
    """
    found: dict[str, Plugin] = {}
    for point in importlib.metadata.entry_points(group=group):
        plugin = _load(group, point)
        if point.name in found and found[point.name].package != plugin.package:
            raise PluginError(
                f"{group} name {point.name!r} is declared by two packages: {found[point.name].package} and "
                f"{plugin.package}; uninstall one"
            )
        found[point.name] = plugin
    _LOADED.update({f"{group}:{name}": plugin for name, plugin in found.items()})
    return [found[name] for name in sorted(found)]


def load_plugin(group: str, name: str) -> Plugin:
    """Load the one entry point ``name`` of ``group`` (recorded as loaded, :func:`loaded_plugins`).

    Raises:
        PluginError: none or two packages declare it, or it fails to import.
    """
    points = list(importlib.metadata.entry_points(group=group, name=name))
    packages = sorted({p.dist.name if p.dist is not None else "?" for p in points})
    if len(packages) != 1:
        raise PluginError(
            f"{group} name {name!r} is declared by {len(packages)} packages ({', '.join(packages) or 'none'})"
        )
    plugin = _load(group, points[0])
    _LOADED[f"{group}:{name}"] = plugin
    return plugin


__all__ = [
    "BACKEND_GROUP",
    "CONFIDENCE_GROUP",
    "TASK_GROUP",
    "Plugin",
    "PluginError",
    "discover",
    "load_plugin",
    "loaded_plugins",
    "source_digest",
]
