"""Backends are plugins like tasks and confidence functions (docs/extending.md): an installed package adds
one through the entry-point group ``saltbench.backends``; it is listed without being imported, imported when
a model is loaded on it, given the settings its loader names, and recorded in the provenance."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from helpers.fake_plugins import env_with, fake_plugin

from saltbench.inference.backends import BACKEND_LOADERS, LoadSettings, loader_settings

PLUGIN = """
class Echo:
    backend = "echo"
    continuous_batching = False
    full_entropy = False

    def __init__(self, spec, batch_size, top_k):
        self.spec, self.batch_size, self.top_k, self.tokenizer = spec, batch_size, top_k, None


def load(model_path, spec, *, batch_size, top_k):
    return Echo(spec, batch_size, top_k)


def needy(model_path, spec, *, gpu_count):
    return None
"""

SCRIPT = """
import json, sys
from saltbench.core.plugins import PluginError, loaded_plugins
from saltbench.inference.backends import LoadSettings, load_backend
from saltbench.inference.registry import RegistryError, backend_names, parse_model_registry

listed = backend_names()
imported_when_listed = "echoplug" in sys.modules
entry = {"source": {"kind": "local", "path": "nowhere"}, "backend": "echo"}
spec = parse_model_registry({"models": {"m": entry}})["m"]
loaded = load_backend("nowhere", spec, settings=LoadSettings(batch_size=3, top_k=7, server="unused"))
try:
    load_backend("nowhere", spec, backend="needy")
    needy = ""
except PluginError as exc:
    needy = str(exc)
try:
    parse_model_registry({"models": {"m": {**entry, "backend": "nope"}}})
    unknown = ""
except RegistryError as exc:
    unknown = str(exc)
print(json.dumps({
    "listed": list(listed), "imported_when_listed": imported_when_listed,
    "loaded": [type(loaded).__name__, loaded.batch_size, loaded.top_k],
    "provenance": sorted(k for k in loaded_plugins() if k.startswith("saltbench.backends:")),
    "needy": needy, "unknown": unknown,
}))
"""


def test_an_installed_backend_is_listed_lazily_loaded_with_its_settings_and_recorded(tmp_path):
    root = fake_plugin(
        tmp_path,
        "saltbench-echo",
        "echoplug",
        textwrap.dedent(PLUGIN),
        {"saltbench.backends": {"echo": "echoplug:load", "needy": "echoplug:needy"}},
    )
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env_with(root), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["listed"] == [*BACKEND_LOADERS, "echo", "needy"]
    assert seen["imported_when_listed"] is False  # listed from the package metadata alone
    assert seen["loaded"] == ["Echo", 3, 7]
    assert seen["provenance"] == ["saltbench.backends:echo", "saltbench.backends:needy"]
    assert (
        "backend 'needy': its loader asks for the setting 'gpu_count', which no job offers" in seen["needy"]
    )
    assert (
        "models.m.backend: 'nope' is not one of ['hf', 'vllm', 'openai', 'vllm_server', 'simulated', 'echo'"
        in (seen["unknown"])
    )


SHADOW_SCRIPT = """
import json, types
from saltbench.config.checks import check_backend_plugins
from saltbench.config.schema import ConfigError
from saltbench.inference import parse_model_registry
from saltbench.inference.registry import backend_names

registry = parse_model_registry({"models": {
    "on-hf": {"source": {"kind": "hub", "id": "o/a"}, "backend": "hf"},
    "on-vllm": {"source": {"kind": "hub", "id": "o/b"}, "backend": "vllm"},
}})
seen = {"names": list(backend_names())}
for model in registry:
    settings = types.SimpleNamespace(models=(model,), inference=types.SimpleNamespace(backend=None))
    try:
        check_backend_plugins(settings, registry)
        seen[model] = "ok"
    except ConfigError as exc:
        seen[model] = str(exc)
print(json.dumps(seen))
"""


def test_a_plugin_that_takes_a_built_in_name_stops_only_the_runs_that_use_the_name(tmp_path):
    """The name stays the built-in's; a run whose models use it is refused naming the plugin, the others
    run (with a warning)."""
    root = fake_plugin(
        tmp_path,
        "saltbench-shadow",
        "shadowplug",
        "def load(p, s):\n    return None\n",
        {"saltbench.backends": {"hf": "shadowplug:load"}},
    )
    proc = subprocess.run(
        [sys.executable, "-c", SHADOW_SCRIPT], env=env_with(root), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["names"] == list(BACKEND_LOADERS)
    assert seen["on-vllm"] == "ok" and "this configuration does not use it: the run goes on" in proc.stderr
    assert seen["on-hf"] == (
        "models: model 'on-hf' runs on backend 'hf': saltbench.backends plugin 'hf' of package "
        "saltbench-shadow reuses a built-in backend's name; uninstall it (pip uninstall saltbench-shadow)"
    )


def test_each_built_in_backend_takes_only_settings_a_job_offers():
    """Every built-in loader's settings are fields of LoadSettings (what every job offers), and each takes
    only the ones it uses: transformers no vLLM or server setting, the served backends no engine setting."""
    taken = {
        name: set(loader_settings(name, loader, LoadSettings())) for name, loader in BACKEND_LOADERS.items()
    }
    assert taken == {
        "hf": {"batch_size", "top_k"},
        "vllm": {"batch_size", "top_k", "num_threads", "prefix_caching"},
        "openai": {"batch_size", "top_k", "cache_dir"},
        "vllm_server": {"batch_size", "top_k", "cache_dir", "server"},
        "simulated": {"batch_size", "top_k"},
    }
