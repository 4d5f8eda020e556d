"""A plugin's fingerprint covers every file that can change what it does (saltbench.core.plugins,
docs/extending.md §5): its package's code, data files and templates, and the other files its distribution
installed; not bytecode or the distribution's metadata."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys

import pytest
from helpers.fake_plugins import fake_plugin

from saltbench.core.plugins import (
    TASK_GROUP,
    broken_plugins,
    discover,
    installed_fingerprints,
    loaded_plugins,
    source_digest,
)

FILES = {
    "tplplug/templates/prompt.txt": "Complement {input}\n",
    "tplplug/table.json": "[1, 2]\n",
    "tplplug_extra/words.txt": "alpha\n",  # another top-level folder of the same distribution
}


@pytest.fixture()
def plugin(tmp_path, monkeypatch):
    """A package ``tplplug`` with a template and a data file, and a second folder of its distribution,
    importable from ``sys.path``; its ``__init__`` fails to import (nothing may import it)."""
    root = fake_plugin(
        tmp_path,
        "saltbench-tpl",
        "tplplug/__init__",
        "import no_such_module\n",
        {TASK_GROUP: {"tpl": "tplplug:Task"}},
        files=FILES,
    )
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    return root


def _digest() -> str:
    return source_digest("tplplug.task", importlib.metadata.distribution("saltbench-tpl"))


@pytest.mark.parametrize("changed", [*FILES, "tplplug/__init__.py"])
def test_every_file_of_the_package_and_the_distribution_counts(plugin, changed):
    before = _digest()
    (plugin / changed).write_text((plugin / changed).read_text() + " ")
    assert _digest() != before


def test_bytecode_and_metadata_do_not_count(plugin):
    before = _digest()
    (plugin / "tplplug" / "__pycache__").mkdir()
    (plugin / "tplplug" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0\1")
    (plugin / "saltbench_tpl-0.1.dist-info" / "INSTALLER").write_text("pip\n")
    assert _digest() == before


def test_a_new_data_file_counts(plugin):
    before = _digest()
    (plugin / "tplplug" / "templates" / "other.txt").write_text("x")
    assert _digest() != before


def test_installed_fingerprints_import_nothing(plugin):
    found = installed_fingerprints([TASK_GROUP])
    assert found[f"{TASK_GROUP}:tpl"] == f"saltbench-tpl 0.1, source {_digest()[:16]}"
    assert "tplplug" not in sys.modules  # its import would fail: it was never tried


def test_discovery_leaves_out_and_records_what_cannot_be_used(tmp_path, monkeypatch):
    group = "saltbench.test_discovery"
    fake_plugin(
        tmp_path / "a", "saltbench-good", "goodplug", "VALUE = 1\n", {group: {"good": "goodplug:VALUE"}}
    )
    fake_plugin(
        tmp_path / "b",
        "saltbench-typo",
        "typoplug",
        "import no_such_module\n",
        {group: {"typo": "typoplug:X"}},
    )
    for package in ("one", "two"):  # one name, two packages
        fake_plugin(
            tmp_path / package,
            f"saltbench-{package}",
            f"{package}plug",
            "X = 1\n",
            {group: {"twice": f"{package}plug:X"}},
        )
    for folder in ("a", "b", "one", "two"):
        monkeypatch.syspath_prepend(str(tmp_path / folder))
    importlib.invalidate_caches()
    assert [plugin.name for plugin in discover(group)] == ["good"]
    broken = broken_plugins(group)
    assert sorted(broken) == ["twice", "typo"]
    assert "failed to import: ModuleNotFoundError: No module named 'no_such_module'" in str(broken["typo"])
    assert "is declared by two packages: saltbench-one and saltbench-two" in str(broken["twice"])
    assert [key for key in loaded_plugins() if key.startswith(group)] == [f"{group}:good"]
