"""Plugins "installed" for one subprocess: a module and a ``*.dist-info`` folder with its entry points in a
directory put on ``PYTHONPATH`` (``importlib.metadata`` finds distributions on ``sys.path``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def fake_plugin(
    root: Path,
    package: str,
    module: str,
    source: str,
    entry_points: Mapping[str, Mapping[str, str]],
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write ``root/{module}.py`` (``module`` may be ``pkg/__init__``), the other ``files``
    (``{path below root: text}``: package data, templates) and the distribution ``package`` declaring
    ``entry_points`` (``{group: {name: "module:attribute"}}``), whose ``RECORD`` lists them all, as an
    installer's does; returns ``root``."""
    written = {f"{module}.py": source, **(files or {})}
    for relative, text in written.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    info = root / f"{package.replace('-', '_')}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    lines = []
    for group, points in entry_points.items():
        lines += [f"[{group}]", *(f"{name} = {target}" for name, target in points.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    names = [*written, *(f"{info.name}/{name}" for name in ("METADATA", "entry_points.txt", "RECORD"))]
    (info / "RECORD").write_text("".join(f"{name},,\n" for name in names))
    return root


def env_with(root: Path) -> dict[str, str]:
    """The environment of a subprocess that sees the plugins under ``root``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    return env
