"""Lazy attribute access for packages whose heavy submodules import torch.

A package declares ``__getattr__ = lazy_getattr(__name__, {"name": "submodule", ...})``: reading
``package.name`` imports ``package.submodule`` on first access and caches the value in the package
namespace, so importing the package itself (e.g. from the Snakefile) stays fast.
"""

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """Return a module-level ``__getattr__`` resolving ``names`` (attribute → submodule) lazily."""

    def __getattr__(name: str) -> Any:
        submodule = names.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{submodule}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
