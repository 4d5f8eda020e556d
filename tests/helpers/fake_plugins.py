"""Plugins "installed" for one subprocess: a module and a ``*.dist-info`` folder with its entry points in a
directory put on ``PYTHONPATH`` (``importlib.metadata`` finds distributions on ``sys.path``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def fake_plugin(
    root: Path, package: str, module: str, source: str, entry_points: Mapping[str, Mapping[str, str]]
) -> Path:
    """Write ``root/{module}.py`` and the distribution ``package`` declaring ``entry_points``
    (``{group: {name: "module:attribute"}}``); returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(source)
    info = root / f"{package.replace('-', '_')}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    lines = []
    for group, points in entry_points.items():
        lines += [f"[{group}]", *(f"{name} = {target}" for name, target in points.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    return root


def env_with(root: Path) -> dict[str, str]:
    """The environment of a subprocess that sees the plugins under ``root``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    return env
