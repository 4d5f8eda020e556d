"""Plugins: tasks, confidence functions, inference backends and metrics contributed by other installed
packages (docs/extending.md).

A package declares them as entry points (``pyproject.toml``)::

    [project.entry-points."saltbench.tasks"]
    hex = "saltbench_hex.task:HexTask"              # a saltbench.tasks.Task subclass; the name is its slug

    [project.entry-points."saltbench.confidence"]
    covered_mass = "saltbench_hex.confidence:COVERED_MASS"   # a saltbench.confidence.ConfidenceSpec

    [project.entry-points."saltbench.backends"]
    llamacpp = "saltbench_llamacpp:load"    # loader(model_path, spec, **settings) -> a LoadedModel

    [project.entry-points."saltbench.metrics"]
    top_half_accuracy = "my_metrics:TOP_HALF"   # a saltbench.metrics.MetricSpec

Discovery is the standard library's (``importlib.metadata.entry_points``); the registries that use it
(:data:`saltbench.tasks.TASKS`, :data:`saltbench.confidence.CONFIDENCE_FUNCTIONS`) join the plugins to the
built-ins once, when they are imported; a backend plugin is imported only when a job loads a model on it
(:func:`load_plugin`, from :mod:`saltbench.inference.backends`), and the metric registry
(:func:`saltbench.core.metric_registry.metric_registry`) joins its plugins on first use. A plugin that
fails to import is a :class:`PluginError` naming the package and the entry point, not a traceback from
inside the plugin; the registries record it (:func:`broken_plugins`) instead of raising it, so that it
stops only the runs whose configuration selects that plugin (the configuration check names it there,
docs/extending.md §1).
Standard library only.

Every plugin is part of the provenance of what it touches: :func:`loaded_plugins` names each loaded one with
its package, version and a digest of its files (:func:`source_digest`: every file of its top-level package,
data files and templates included, and every file its distribution installed; :attr:`Plugin.fingerprint`),
which :func:`saltbench.io.provenance` records in every output and the rules take as a parameter, so that a
new version — or an edit of an editable install's code or data — makes the outputs that used it stale
(docs/extending.md §5). :func:`installed_fingerprints` gives the same fingerprints from the package metadata
and files alone, without importing anything.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from saltbench.core.vocabulary import CONFIDENCE_NAME_PATTERN as _SPEC_NAME

TASK_GROUP = "saltbench.tasks"
"""Entry-point group of task plugins: name = task slug, value = a ``Task`` subclass."""
CONFIDENCE_GROUP = "saltbench.confidence"
"""Entry-point group of confidence-function plugins: name = function name, value = a ``ConfidenceSpec``."""
BACKEND_GROUP = "saltbench.backends"
"""Entry-point group of inference backends: name = backend name, value = its loader. saltbench declares its
built-in backends here too (:data:`OWN_DISTRIBUTION`); they are not plugins."""
OWN_DISTRIBUTION = "saltbench"
"""saltbench's own distribution: its entry points are built-ins, whose version and commit the provenance
records apart, not plugins."""
METRIC_GROUP = "saltbench.metrics"
"""Entry-point group of metric plugins: name = metric name, value = a ``MetricSpec``."""


class PluginError(RuntimeError):
    """A plugin cannot be used: it fails to import, has the wrong type, reuses a name or fails a check."""


@dataclass(frozen=True)
class Plugin:
    """One loaded entry point: its ``name``, the ``package`` (distribution) that declares it, ``target``
    (the ``module:attribute`` it points at), the loaded ``value``, the package's ``version`` and
    ``source_sha256``, the digest of the files of the top-level package ``target`` lives in and of the
    distribution (:func:`source_digest`)."""

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
        """``saltbench-hex 0.1.0, source 3f2a...`` (16 hex digits): changes when the plugin's files do."""
        return fingerprint(self.package, self.version, self.source_sha256)


_LOADED: dict[str, Plugin] = {}
_BROKEN: dict[str, PluginError] = {}  # "GROUP:NAME" -> why that plugin cannot be used


def loaded_plugins() -> dict[str, str]:
    """``{"GROUP:NAME": fingerprint}`` of every plugin this process has loaded (:func:`discover`), sorted."""
    return {key: _LOADED[key].fingerprint for key in sorted(_LOADED)}


def fingerprint(package: str, version: str, digest: str) -> str:
    """``'{package} {version}, source {digest[:16]}'``: how a plugin is named in provenance and parameters."""
    return f"{package} {version}, source {digest[:16]}"


def _counts(relative: PurePosixPath) -> bool:
    """Whether a file at ``relative`` (within a package or a distribution) can change what the plugin does:
    not compiled bytecode (``__pycache__``, ``.pyc``), not the distribution's own metadata (``*.dist-info``,
    ``*.egg-info``: version and entry points are named apart), not outside the install folder (``../``:
    scripts, whose text names the interpreter), not an editable install's path hook (``.pth``,
    ``__editable__*``: it names the checkout's folder)."""
    parts = relative.parts
    if not parts or parts[0] == ".." or "__pycache__" in parts:
        return False
    if any(part.endswith((".dist-info", ".egg-info")) for part in parts[:-1]):
        return False
    name = parts[-1]
    return not (name.endswith((".pyc", ".pyo", ".pth")) or name.startswith("__editable__"))


def _package_files(module: str) -> dict[str, Path]:
    """``{label: file}`` of the top-level package (every file below its folders) or single module that holds
    ``module``, found without importing it; labels are ``{package}/{path}`` (the module's file name)."""
    top = module.split(".", 1)[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return {}
    if spec is None:
        return {}
    files: dict[str, Path] = {}
    if spec.submodule_search_locations is not None:  # a package; a namespace package has several folders
        for folder in map(Path, spec.submodule_search_locations):
            for path in folder.rglob("*"):
                relative = PurePosixPath(path.relative_to(folder).as_posix())
                if path.is_file() and _counts(relative):
                    files[f"{top}/{relative}"] = path
    elif spec.origin is not None and Path(spec.origin).is_file():
        files[Path(spec.origin).name] = Path(spec.origin)
    return files


def _distribution_files(dist: importlib.metadata.Distribution | None) -> dict[str, Path]:
    """``{label: file}`` of the files ``dist`` installed (its ``RECORD``) that can change what it does
    (:func:`_counts`); labels are the recorded paths. An editable install records only its path hook: its
    package's folder is found by :func:`_package_files`."""
    files: dict[str, Path] = {}
    for entry in (dist.files or ()) if dist is not None else ():
        relative = PurePosixPath(str(entry))
        if _counts(relative):
            path = Path(str(entry.locate()))
            if path.is_file():
                files[str(relative)] = path
    return files


def source_digest(module: str, dist: importlib.metadata.Distribution | None = None) -> str:
    """SHA-256 over the files that make a plugin: every file of the top-level package (or module) that holds
    ``module`` — Python, data files, templates — and every file the distribution ``dist`` installed (other
    top-level packages, package data), without bytecode and metadata (:func:`_counts`). Each file counts
    with its label (``package/relative/path``) and its bytes, in label order; ``""`` where no file is
    found. Nothing is imported."""
    files = {**_distribution_files(dist), **_package_files(module)}
    if not files:
        return ""
    digest = hashlib.sha256()
    for label in sorted(files):
        digest.update(label.encode() + b"\0")
        digest.update(files[label].read_bytes() + b"\0")
    return digest.hexdigest()


def installed_fingerprints(groups: Iterable[str]) -> dict[str, str]:
    """``{"GROUP:NAME": fingerprint}`` (:func:`fingerprint`) of every installed entry point of ``groups``,
    sorted, from the package metadata and files alone: nothing is imported, so a plugin that fails to
    import has a fingerprint too. saltbench's own entry points (its built-in backends) are left out."""
    found: dict[str, str] = {}
    digests: dict[tuple[str, str], str] = {}
    for group in groups:
        for point in importlib.metadata.entry_points(group=group):
            if point.dist is not None and point.dist.name == OWN_DISTRIBUTION:
                continue  # a built-in (saltbench's version and commit are recorded apart)
            dist = point.dist
            package = dist.name if dist is not None else "an unknown distribution"
            where = (package, point.module.split(".", 1)[0])
            if where not in digests:
                digests[where] = source_digest(point.module, dist)
            found[f"{group}:{point.name}"] = fingerprint(
                package, dist.version if dist else "", digests[where]
            )
    return dict(sorted(found.items()))


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
    return Plugin(point.name, package, point.value, value, version, source_digest(point.module, point.dist))


def discover(group: str, check: Callable[[Plugin], None] | None = None) -> list[Plugin]:
    """Load every entry point of ``group``, sorted by name. One that cannot be used — it fails to import,
    two installed packages declare its name, or ``check`` raises :class:`PluginError` on it (the registry's
    rules) — is left out and recorded (:func:`refuse`), not raised: only a run that selects it fails
    (:func:`broken_plugins`; docs/extending.md §1)."""
    points: dict[str, dict[str, importlib.metadata.EntryPoint]] = {}
    for point in importlib.metadata.entry_points(group=group):
        package = point.dist.name if point.dist is not None else "an unknown distribution"
        points.setdefault(point.name, {}).setdefault(package, point)
    found: dict[str, Plugin] = {}
    for name, by_package in points.items():
        if len(by_package) > 1:
            first, second = sorted(by_package)[:2]
            refuse(
                group,
                name,
                PluginError(
                    f"{group} name {name!r} is declared by two packages: {first} and {second}; uninstall one"
                ),
            )
            continue
        try:
            plugin = _load(group, next(iter(by_package.values())))
            if check is not None:
                check(plugin)
        except PluginError as exc:
            refuse(group, name, exc)
        else:
            found[name] = plugin
    _LOADED.update({f"{group}:{name}": plugin for name, plugin in found.items()})
    return [found[name] for name in sorted(found)]


def check_named_spec(
    plugin: Plugin, spec_type: type, public: str, builtins: Iterable[str], kind: tuple[str, str]
) -> None:
    """The rules the registries of named specs (confidence functions, metrics) apply to a plugin: its value
    is a ``spec_type`` (importable as ``public``), its entry-point name is no built-in's (``builtins``) and
    is the spec's ``name``, a lower-case identifier. ``kind`` names the plugin and a built-in in the messages
    (``"confidence", "function"``).

    Raises:
        PluginError: naming the plugin and the rule it breaks.
    """
    spec = plugin.value
    if not isinstance(spec, spec_type):
        raise PluginError(
            f"{kind[0]} plugin {plugin.describe()} is not a {public} (got {type(spec).__name__})"
        )
    if plugin.name in set(builtins):
        raise PluginError(
            f"{kind[0]} plugin {plugin.describe()} reuses the name of a built-in {kind[1]}; uninstall it"
        )
    name = getattr(spec, "name", None)
    if name != plugin.name or not _SPEC_NAME.fullmatch(plugin.name):
        raise PluginError(
            f"{kind[0]} plugin {plugin.describe()}: the entry-point name must be the spec's name, "
            f"matching {_SPEC_NAME.pattern} (the spec says {name!r})"
        )


def refuse(group: str, name: str, error: PluginError) -> None:
    """Record that the plugin ``name`` of ``group`` cannot be used, and why (:func:`broken_plugins`)."""
    _BROKEN[f"{group}:{name}"] = error
    _LOADED.pop(f"{group}:{name}", None)


def broken_plugins(group: str) -> dict[str, PluginError]:
    """``{name: error}`` of the installed plugins of ``group`` that cannot be used (:func:`discover`,
    :func:`refuse`): a configuration that selects one is refused with its error; the others run."""
    prefix = f"{group}:"
    return {key.removeprefix(prefix): err for key, err in sorted(_BROKEN.items()) if key.startswith(prefix)}


def load_plugin(group: str, name: str, *, record: bool = True) -> Plugin:
    """Load the one entry point ``name`` of ``group`` (recorded as loaded, :func:`loaded_plugins`, unless
    ``record`` is false: the backend registry reads a plugin's options block without using it).

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
    if record:
        _LOADED[f"{group}:{name}"] = plugin
    return plugin


__all__ = [
    "BACKEND_GROUP",
    "CONFIDENCE_GROUP",
    "OWN_DISTRIBUTION",
    "METRIC_GROUP",
    "TASK_GROUP",
    "Plugin",
    "PluginError",
    "broken_plugins",
    "check_named_spec",
    "discover",
    "fingerprint",
    "installed_fingerprints",
    "load_plugin",
    "loaded_plugins",
    "refuse",
    "source_digest",
]
