"""What the cross-check benches share: loading an anchor's files by path, each module they import for
another purpose (a model wrapper, an API client, a logging helper) replaced by a minimal stand-in, so
that the functions compared run unchanged without the anchor's package ``__init__`` or its dependencies
(docs/confidence.md §4.4, §4.6, §8.4)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any


class Stand:
    """A stand-in class for the model wrappers, API clients and base classes their files import."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def stub(name: str, **attributes: Any) -> None:
    """Register module ``name`` (and its missing parents, as empty packages) with ``attributes``."""
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        module_name = ".".join(parts[:depth])
        if module_name not in sys.modules:
            module = types.ModuleType(module_name)
            module.__path__ = []
            sys.modules[module_name] = module
    sys.modules[name].__dict__.update(attributes)


def load(name: str, path: Path) -> types.ModuleType:
    """Execute their file ``path`` as module ``name`` (parents registered as empty packages)."""
    if "." in name:
        stub(name.rsplit(".", 1)[0])
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def find_anchor(sites: list[Path], package: str) -> Path | None:
    """The folder of ``package`` in the first of ``sites`` that holds it."""
    return next((site / package for site in sites if (site / package).is_dir()), None)
