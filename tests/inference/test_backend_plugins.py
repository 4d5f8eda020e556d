"""Backends are plugins like tasks and confidence functions (docs/extending.md): an installed package adds
one through the entry-point group ``saltbench.backends``, where saltbench registers its own; it is listed
without being imported, imported when a model is loaded on it (or its options read), given the settings its
loader names and the options block it declares, and recorded in the provenance."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from helpers.fake_plugins import env_with, fake_plugin

from saltbench.core.vocabulary import BACKENDS
from saltbench.inference.backends import (
    LoadSettings,
    backend_loader,
    builtin_backends,
    loader_settings,
    options_class,
)
from saltbench.inference.openai import ApiSettings
from saltbench.inference.vllm import VllmOptions

PLUGIN = """
from dataclasses import dataclass

from saltbench.core.blocks import Block, setting


@dataclass(frozen=True, kw_only=True)
class EchoOptions(Block):
    repeat: int = setting(1, "How often.")


class Echo:
    backend = "echo"
    continuous_batching = False
    full_entropy = False

    def __init__(self, spec, batch_size, top_k, options):
        self.spec, self.batch_size, self.top_k, self.tokenizer = spec, batch_size, top_k, None
        self.options = options


def load(model_path, spec, *, batch_size, top_k, options: EchoOptions):
    return Echo(spec, batch_size, top_k, options)


def needy(model_path, spec, *, gpu_count):
    return None
"""

SCRIPT = """
import json, sys
from saltbench.core.plugins import PluginError, loaded_plugins
from saltbench.inference.backends import LoadSettings, load_backend
from saltbench.inference.backends import backend_names
from saltbench.inference.registry import RegistryError, parse_model_registry

listed = backend_names()
imported_when_listed = "echoplug" in sys.modules
entry = {"source": {"kind": "local", "path": "nowhere"}, "backend": "echo", "backend_options": {"repeat": 3}}
spec = parse_model_registry({"models": {"m": entry}})["m"]
recorded_when_read = sorted(k for k in loaded_plugins() if k.startswith("saltbench.backends:"))
loaded = load_backend("nowhere", spec, settings=LoadSettings(batch_size=3, top_k=7, server="unused"))
try:
    parse_model_registry({"models": {"m": {**entry, "backend_options": {"repeats": 3}}}})
    bad_option = ""
except RegistryError as exc:
    bad_option = str(exc)
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
    "recorded_when_read": recorded_when_read, "bad_option": bad_option,
    "loaded": [type(loaded).__name__, loaded.batch_size, loaded.top_k, loaded.options.repeat],
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
    assert seen["listed"] == [*BACKENDS, "echo", "needy"]
    assert seen["imported_when_listed"] is False  # listed from the package metadata alone
    assert seen["recorded_when_read"] == []  # its options block read, the plugin not used yet
    assert seen["loaded"] == ["Echo", 3, 7, 3]  # its options as the registry entry gives them
    assert "models.m.backend_options: unknown key(s) 'repeats'; allowed: repeat" in seen["bad_option"]
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
from saltbench.inference.backends import backend_names

registry = parse_model_registry({"models": {
    "on-hf": {"source": {"kind": "hub", "id": "o/a"}, "backend": "hf"},
    "on-vllm": {"source": {"kind": "hub", "id": "o/b"}, "backend": "vllm"},
    "on-wreck": {"source": {"kind": "hub", "id": "o/c"}, "backend": "wreck", "backend_options": {"x": 1}},
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


def test_a_plugin_that_takes_a_built_in_name_or_fails_to_import_stops_only_the_runs_that_use_it(tmp_path):
    """The name stays the built-in's; a run whose models use it is refused naming the plugin, the others
    run (with a warning). So with a plugin that fails to import when the registry reads its entry's options:
    the registry is read (those options kept as written), and only the run on it is refused."""
    root = fake_plugin(
        tmp_path,
        "saltbench-shadow",
        "shadowplug",
        "def load(p, s):\n    return None\n",
        {"saltbench.backends": {"hf": "shadowplug:load"}},
    )
    fake_plugin(
        tmp_path,
        "saltbench-wreck",
        "wreckplug",
        "import no_such_module\n",
        {"saltbench.backends": {"wreck": "wreckplug:load"}},
    )
    proc = subprocess.run(
        [sys.executable, "-c", SHADOW_SCRIPT], env=env_with(root), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["names"] == [*BACKENDS, "wreck"]
    assert seen["on-vllm"] == "ok" and "this configuration does not use it: the run goes on" in proc.stderr
    assert seen["on-wreck"].startswith(
        "models: model 'on-wreck' runs on backend 'wreck': saltbench.backends plugin 'wreck' of package "
        "saltbench-wreck (wreckplug:load) failed to import: ModuleNotFoundError"
    )
    assert seen["on-hf"] == (
        "models: model 'on-hf' runs on backend 'hf': saltbench.backends plugin 'hf' of package "
        "saltbench-shadow reuses a built-in backend's name; uninstall it (pip uninstall saltbench-shadow)"
    )


def test_each_built_in_backend_takes_only_settings_a_job_offers_and_declares_its_options():
    """Every built-in loader's settings are fields of LoadSettings (what every job offers), and each takes
    only the ones it uses: transformers no vLLM or server setting, the served backends no engine setting;
    vLLM and its managed server share the engine's options block, openai declares the client's."""
    taken = {
        name: set(loader_settings(name, backend_loader(name), LoadSettings())) for name in builtin_backends()
    }
    assert taken == {
        "hf": {"batch_size", "top_k"},
        "vllm": {"batch_size", "top_k", "num_threads", "prefix_caching", "whole_prefills"},
        "openai": {"batch_size", "top_k", "cache_dir"},
        "vllm_server": {"batch_size", "top_k", "cache_dir", "server"},
        "simulated": {"batch_size", "top_k"},
    }
    assert {name: options_class(name) for name in builtin_backends()} == {
        "hf": None,
        "vllm": VllmOptions,
        "openai": ApiSettings,
        "vllm_server": VllmOptions,
        "simulated": None,
    }


def test_the_built_in_backends_are_the_entry_points_saltbench_declares(repo_root: Path):
    """pyproject.toml registers the built-in backends in the plugins' entry-point group, one package of
    saltbench.inference each; the installed metadata, where it declares them, says the same."""
    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    declared = project["entry-points"]["saltbench.backends"]
    assert tuple(declared) == BACKENDS
    assert all(
        value.startswith("saltbench.inference.") and value.endswith(":load") for value in declared.values()
    )
    assert {name: point.value for name, point in builtin_backends().items()} == declared


def test_the_backends_without_torch_never_import_it():
    """The openai, vllm_server and simulated backends — their packages, modules and loaders — import neither
    torch nor transformers nor vLLM (their types are the torch-free saltbench.inference.base; the import
    contract in pyproject.toml forbids the direct imports)."""
    code = (
        "import sys\n"
        "import saltbench.inference.openai.client, saltbench.inference.openai.responses\n"
        "import saltbench.inference.server.serving, saltbench.inference.simulated.model\n"
        "from saltbench.inference.backends import backend_loader, options_class\n"
        "for name in ('openai', 'vllm_server', 'simulated'):\n"
        "    backend_loader(name), options_class(name)\n"
        "print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]"]
