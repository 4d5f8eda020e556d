"""Lazy attribute access for packages whose heavy submodules import torch, and objects named
``module:attribute`` (the functions of the figure, table and metric declarations), imported on first use.

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


def load_reference(reference: str) -> Any:
    """The object ``module:attribute`` names (imported on first use, as an entry point's).

    Raises:
        ValueError: ``reference`` is not of that form, or the module has no such attribute.
    """
    module, sep, attribute = reference.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"{reference!r} is not a reference of the form 'module:attribute'")
    try:
        return getattr(importlib.import_module(module), attribute)
    except AttributeError:
        raise ValueError(f"{reference!r}: module {module} has no attribute {attribute!r}") from None
