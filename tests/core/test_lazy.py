"""Packages with torch-importing submodules stay cheap to import and resolve those names on access."""

import subprocess
import sys

import pytest

from saltbench.core.lazy import lazy_getattr

LAZY_BACKENDS = [f"saltbench.inference.{name}" for name in ("hf", "vllm", "openai", "simulated", "sources")]
"""The inference packages whose heavy modules are imported on first access (docs/backends.md §7)."""


@pytest.mark.parametrize("package", ["saltbench.inference", "saltbench.interventions", *LAZY_BACKENDS])
def test_importing_package_does_not_import_torch(package: str) -> None:
    code = f"import sys, {package}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


def test_lazy_name_resolves_and_is_cached() -> None:
    import saltbench.inference as pkg
    from saltbench.inference.hf.generation import generate

    assert pkg.generate is generate
    assert vars(pkg)["generate"] is generate


def test_unknown_name_raises_attribute_error() -> None:
    getter = lazy_getattr("saltbench.inference", {"generate": "generation"})
    with pytest.raises(AttributeError, match="no_such_name"):
        getter("no_such_name")
    with pytest.raises(AttributeError):
        import saltbench.inference

        _ = saltbench.inference.no_such_name  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "package",
    [
        "saltbench.config",
        "saltbench.conformance",
        "saltbench.inference",
        "saltbench.training",
        *LAZY_BACKENDS,
    ],
)
def test_every_public_name_of_a_lazy_package_resolves(package: str) -> None:
    """Each name of ``__all__`` resolves (a lazy name whose module moved would fail here, not in a job)."""
    import importlib

    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, missing
