"""Packages with torch-importing submodules stay cheap to import and resolve those names on access."""

import subprocess
import sys

import pytest

from saltbench._lazy import lazy_getattr


@pytest.mark.parametrize("package", ["saltbench.inference", "saltbench.interventions"])
def test_importing_package_does_not_import_torch(package: str) -> None:
    code = f"import sys, {package}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


def test_lazy_name_resolves_and_is_cached() -> None:
    import saltbench.interventions as pkg
    from saltbench.interventions._decode import force_and_continue

    assert pkg.force_and_continue is force_and_continue
    assert vars(pkg)["force_and_continue"] is force_and_continue


def test_unknown_name_raises_attribute_error() -> None:
    getter = lazy_getattr("saltbench.inference", {"generate": "generation"})
    with pytest.raises(AttributeError, match="no_such_name"):
        getter("no_such_name")
    with pytest.raises(AttributeError):
        import saltbench.inference

        _ = saltbench.inference.no_such_name  # type: ignore[attr-defined]
