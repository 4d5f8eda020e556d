"""Config validation: defaults validate, wrong keys and values are named in the error; the configuration
model generates the committed schema and resolves every default (docs/architecture.md §5)."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
import yaml

from saltbench import config as config_model
from saltbench.confidence import PAPER_CONFIDENCE_NAMES, TOKEN_FUNCTIONS
from saltbench.config import (
    MAX_INFERENCE_JOBS,
    MAX_SAMPLES_PER_TASK,
    AnalysisConfig,
    ConfigError,
    DuplicateKeyError,
    InterventionsConfig,
    StrictYAMLLoader,
    TrainingConfig,
    WorkflowConfig,
    check_config_files,
    load_config,
    load_schema,
    read_config_file,
    render_schema,
    resolve_block,
    resolve_config,
    validate_config,
)
from saltbench.config import schema as config_schema
from saltbench.config.__main__ import main
from saltbench.core.vocabulary import CALIBRATION_METHODS, FLAVOURS, GRANULARITIES
from saltbench.data import PAPER_FOLDERS
from saltbench.tasks import TASK_SLUGS
from saltbench.workflow.analysis_rules import ANALYSIS_DEFAULTS, analysis_options


@pytest.fixture()
def default_cfg(repo_root):
    return yaml.safe_load((repo_root / "config" / "config.yaml").read_text())


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml"])
def test_shipped_configs_validate(repo_root, monkeypatch, name):
    monkeypatch.chdir(repo_root)
    cfg = load_config(repo_root / "config" / name)
    assert cfg["prompt_styles"] == ["direct", "cot"]
    assert cfg["inference"]["top_k"] == 20  # filled from the schema default


def test_paper_config_has_paper_sizes(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    cfg = load_config(repo_root / "config" / "paper.yaml")
    assert cfg["datasets"]["n_samples"] == {
        "dna": 300,
        "code": 148,
        "logic": 400,
        "matmul": 300,
        "kronecker": 300,
        "words": 300,
    }
    assert len(cfg["models"]) >= 50


def test_unknown_top_level_key_is_named(default_cfg):
    default_cfg["sead"] = 1
    with pytest.raises(ConfigError, match="unknown key.*'sead'"):
        validate_config(default_cfg, check_models=False)


def test_unknown_nested_key_is_named(default_cfg):
    default_cfg["datasets"]["n_sample"] = 3
    with pytest.raises(ConfigError, match=r"datasets: unknown key.*'n_sample'"):
        validate_config(default_cfg, check_models=False)


def test_bad_value_is_named(default_cfg):
    bad = copy.deepcopy(default_cfg)
    bad["tasks"] = ["dna", "chess"]
    with pytest.raises(ConfigError, match=r"tasks\.1: 'chess' is not one of"):
        validate_config(bad, check_models=False)
    bad = copy.deepcopy(default_cfg)
    bad["datasets"]["n_samples"] = 0
    with pytest.raises(ConfigError, match="datasets.n_samples"):
        validate_config(bad, check_models=False)


def test_unknown_generator_parameter_is_named(default_cfg):
    default_cfg["datasets"]["params"]["dna"] = {"max_codon": 5}
    with pytest.raises(ConfigError, match=r"datasets.params.dna: unknown parameter.*max_codon"):
        validate_config(default_cfg, check_models=False)


def test_unknown_model_is_named(default_cfg, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    default_cfg["models"] = ["no-such-model"]
    with pytest.raises(ConfigError, match="unknown model 'no-such-model'"):
        validate_config(default_cfg)


def test_paper_source_needs_path(default_cfg):
    default_cfg["datasets"] = {"source": "paper"}
    with pytest.raises(ConfigError, match="datasets.paper_path"):
        validate_config(default_cfg, check_models=False)


def test_malformed_yaml_top_level(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(path)


def test_inference_backend_override(default_cfg):
    assert validate_config(default_cfg, check_models=False)["inference"]["backend"] is None  # the registry's
    default_cfg["inference"]["backend"] = "vllm"
    assert validate_config(default_cfg, check_models=False)["inference"]["backend"] == "vllm"
    default_cfg["inference"]["backend"] = "tgi"
    backends = r"\['hf', 'vllm', 'openai', 'vllm_server', 'simulated'\]"
    expected = rf"inference.backend: 'tgi' is not one of {backends}"
    with pytest.raises(ConfigError, match=expected):
        validate_config(default_cfg, check_models=False)


def test_a_simulated_model_runs_on_its_own_backend_only(default_cfg, repo_root, monkeypatch):
    """``inference.backend: hf`` cannot run a simulated model, nor ``simulated`` a real one (named)."""
    monkeypatch.chdir(repo_root)
    default_cfg["models"] = ["sim-planted"]
    default_cfg["inference"]["backend"] = "hf"
    with pytest.raises(ConfigError, match=r"inference\.backend: 'hf' cannot run model 'sim-planted'"):
        validate_config(default_cfg)
    default_cfg["models"] = ["smollm2-135m"]
    default_cfg["inference"]["backend"] = "simulated"
    with pytest.raises(ConfigError, match=r"inference\.backend: 'simulated' cannot run model 'smollm2-135m'"):
        validate_config(default_cfg)


# -- integers are real integers (2.0 and true are not) ----------------------------------------------------


def _set(cfg: dict, path: tuple, value: object) -> None:
    """Set the value at a key path; an integer last element means a one-item list."""
    if isinstance(path[-1], int):
        path, value = path[:-1], [value]
    for key in path[:-1]:
        cfg = cfg.setdefault(key, {})
    cfg[path[-1]] = value


def _types(sub: dict) -> list:
    """The schema's type of a subschema as a list (empty when it has none)."""
    types = sub.get("type", [])
    return types if isinstance(types, list) else [types]


def _integer_fields(schema: dict, path: tuple = ()) -> list[tuple[tuple, dict]]:
    """(key path, subschema) of every integer in the schema, however deep: properties, one key of each
    per-task mapping (as task "dna") and array items (path element 0)."""
    children = list(schema.get("properties", {}).items())
    if "propertyNames" in schema and isinstance(schema.get("additionalProperties"), dict):
        children.append(
            ("dna", schema["additionalProperties"])
        )  # a per-task mapping: one task stands for all
    out = []
    for key, sub in children:
        if "$ref" in sub:
            sub = load_schema()["$defs"][sub["$ref"].rsplit("/", 1)[1]]
        if "integer" in _types(sub):
            out.append(((*path, key), sub))
        if "object" in _types(sub):
            out += _integer_fields(sub, (*path, key))
        if "array" in _types(sub) and "integer" in _types(sub.get("items", {})):
            out.append(((*path, key, 0), sub["items"]))
    return out


INTEGER_FIELDS = _integer_fields(load_schema())
INTEGER_IDS = [".".join(map(str, p)) for p, _ in INTEGER_FIELDS]


def test_integer_fields_found():
    """The schema walk finds integers in properties, per-task mappings, lists and all blocks."""
    assert {
        "seed",
        "datasets.n_samples",
        "datasets.n_samples.dna",
        "inference.shard_size",
        "inference.max_new_tokens.dna",
        "metrics.n_bins",
        "interventions.seed",
        "interventions.corruption_counts.0",
        "analysis.rejection_points",
        "training.steps",
        "training.checkpoints.dna",
        "training.model.d_model",
        "training.optim.warmup_steps",
        "training.num_threads",
    } <= set(INTEGER_IDS)


def _current(cfg: dict, path: tuple) -> object:
    """The value at a key path of ``cfg`` (None when absent)."""
    for key in path:
        if not isinstance(cfg, dict) or key not in cfg:
            return None
        cfg = cfg[key]
    return cfg


@pytest.mark.parametrize("path, sub", INTEGER_FIELDS, ids=INTEGER_IDS)
def test_every_integer_field_rejects_a_float(default_cfg, path, sub):
    """Every integer of the schema accepts an int but rejects the same value as a float or a bool."""
    if path[:2] == ("inference", "max_samples"):  # keyed by model name: a model of the run stands for all
        path = (*path[:2], default_cfg["models"][0])
    current = _current(default_cfg, path)  # the config's own value keeps the training recipe consistent
    good = current if type(current) is int else max(sub.get("minimum", 0), 2)
    if path[:2] == ("datasets", "n_samples") and len(path) == 3:
        default_cfg["datasets"]["n_samples"] = {task: good for task in default_cfg["tasks"]}
    _set(default_cfg, path, good)
    validate_config(default_cfg, check_models=False)  # the integer itself is fine
    key = re.escape(".".join(map(str, path)))
    _set(default_cfg, path, float(good))
    expected = rf"configuration: {key}: {good}\.0 is not of type .*\(a float; write {good}\)"
    with pytest.raises(ConfigError, match=expected):
        validate_config(default_cfg, check_models=False)
    _set(default_cfg, path, True)
    with pytest.raises(ConfigError, match=rf"{key}: True is not of type"):
        validate_config(default_cfg, check_models=False)


def test_float_n_samples_and_shard_size_are_rejected(default_cfg):
    """2.0 for datasets.n_samples / inference.shard_size is rejected with the key and a hint."""
    bad = copy.deepcopy(default_cfg)
    bad["datasets"]["n_samples"] = 2.0
    with pytest.raises(ConfigError) as err:
        validate_config(bad, check_models=False)
    assert str(err.value) == (
        "invalid configuration: datasets.n_samples: 2.0 is not of type 'integer', 'null', 'object' "
        "(a float; write 2)"
    )
    bad = copy.deepcopy(default_cfg)
    bad["inference"]["shard_size"] = 2.0
    with pytest.raises(ConfigError, match=r"^invalid configuration: inference\.shard_size: 2\.0 is not"):
        validate_config(bad, check_models=False)
    bad = copy.deepcopy(default_cfg)
    bad["datasets"]["n_samples"] = 2.5
    with pytest.raises(ConfigError, match=r"datasets\.n_samples: 2\.5 .*a whole number is required"):
        validate_config(bad, check_models=False)


def test_floats_in_per_task_mappings_and_lists_are_rejected(default_cfg):
    """Floats inside per-task mappings and integer lists are named with their full key path."""
    bad = copy.deepcopy(default_cfg)
    bad["datasets"]["n_samples"] = {t: 4 for t in bad["tasks"]} | {"dna": 4.0}
    with pytest.raises(ConfigError, match=r"datasets\.n_samples\.dna: 4\.0 is not of type 'integer'"):
        validate_config(bad, check_models=False)
    bad = copy.deepcopy(default_cfg)
    bad["inference"]["max_new_tokens"]["words"] = 64.0
    with pytest.raises(ConfigError, match=r"inference\.max_new_tokens\.words: 64\.0 is not of type"):
        validate_config(bad, check_models=False)
    bad = copy.deepcopy(default_cfg)
    bad["interventions"]["corruption_counts"] = [0, 1.0]
    with pytest.raises(ConfigError, match=r"interventions\.corruption_counts\.1: 1\.0 is not of type"):
        validate_config(bad, check_models=False)


def test_float_seed_is_named_seed_not_interventions_seed(default_cfg):
    """seed: 7.0 is reported as ``seed`` (not as the interventions block's copy)."""
    default_cfg["seed"] = 7.0
    with pytest.raises(ConfigError) as err:
        validate_config(default_cfg, check_models=False)
    assert str(err.value) == "invalid configuration: seed: 7.0 is not of type 'integer' (a float; write 7)"


# -- paper data folder -------------------------------------------------------------------------------------


def _paper_cfg(cfg: dict, paper_path: str) -> dict:
    """Switch ``cfg`` to the paper source at ``paper_path`` (all rows)."""
    cfg["datasets"] = {"source": "paper", "paper_path": paper_path, "n_samples": None}
    return cfg


def _fake_paper_data(root: Path) -> Path:
    """An empty reproduction folder per task under ``root`` (enough for the config check)."""
    for folder in PAPER_FOLDERS.values():
        (root / folder).mkdir(parents=True)
    return root


def test_missing_paper_path_is_named_with_the_path(default_cfg, tmp_path, monkeypatch):
    """A missing (or non-folder) datasets.paper_path is named with the given and resolved path."""
    monkeypatch.chdir(tmp_path)
    _paper_cfg(default_cfg, "no/such/folder")
    with pytest.raises(ConfigError) as err:
        validate_config(default_cfg, check_models=False)
    assert str(err.value) == (
        f"datasets.paper_path: 'no/such/folder' does not exist (resolved to '{tmp_path / 'no/such/folder'}'; "
        "relative paths are resolved against the working directory)"
    )
    (tmp_path / "a_file").write_text("")
    _paper_cfg(default_cfg, str(tmp_path / "a_file"))
    with pytest.raises(ConfigError, match=r"datasets\.paper_path: '.*a_file' is not a folder"):
        validate_config(default_cfg, check_models=False)


def test_paper_path_resolves_against_the_working_directory(default_cfg, tmp_path, monkeypatch):
    """A relative datasets.paper_path is resolved against the current working directory."""
    _fake_paper_data(tmp_path / "workflow" / "paper_data")
    _paper_cfg(default_cfg, "paper_data")
    monkeypatch.chdir(tmp_path / "workflow")
    assert validate_config(default_cfg, check_models=False)["datasets"]["paper_path"] == "paper_data"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"datasets\.paper_path: 'paper_data' does not exist"):
        validate_config(default_cfg, check_models=False)


def test_paper_path_without_a_task_folder_is_named(default_cfg, tmp_path):
    """A paper data folder lacking a configured task's folder is named with that folder and task."""
    root = _fake_paper_data(tmp_path / "paper_data")
    (root / PAPER_FOLDERS["words"]).rmdir()
    _paper_cfg(default_cfg, str(root))
    with pytest.raises(ConfigError, match=r"paper_path: .* lacks .*NeedlesInHaystack_dataset \(task words"):
        validate_config(default_cfg, check_models=False)
    default_cfg["tasks"] = ["dna", "code"]  # words not needed
    default_cfg["interventions"]["tasks"] = []  # (the run's tasks)
    validate_config(default_cfg, check_models=False)


# -- names of registries (confidence functions, calibration methods, flavours, granularities) ---------------


def test_unknown_default_confidence_lists_the_registered_functions(default_cfg):
    """An unknown metrics.default_confidence is named and every registered token function is listed (the
    estimators of other sources are not selected by configuration: docs/confidence.md §Families)."""
    default_cfg["metrics"]["default_confidence"] = "bogus_function"
    with pytest.raises(ConfigError) as err:
        validate_config(default_cfg, check_models=False)
    message = str(err.value)
    assert message.startswith("invalid configuration: metrics.default_confidence: 'bogus_function' is not")
    assert all(repr(name) in message for name in TOKEN_FUNCTIONS) and "'agreement'" not in message


@pytest.mark.parametrize(
    "path, value, key",
    [
        (("metrics", "calibration_methods"), ["platt", "bogus"], r"metrics\.calibration_methods\.1"),
        (("analysis", "ece_calibration"), "bogus", r"analysis\.ece_calibration"),
        (("analysis", "flavour"), "bogus", r"analysis\.flavour"),
        (("analysis", "granularity"), "token", r"analysis\.granularity"),
        (("analysis", "reliability_granularity"), "token", r"analysis\.reliability_granularity"),
        (("analysis", "intervention_fit"), "probit", r"analysis\.intervention_fit"),
        (("analysis", "reasoning_level"), "model", r"analysis\.reasoning_level"),
        (("scoring", "flavours"), ["bogus"], r"scoring\.flavours\.0"),
        (("scoring", "granularities"), ["token"], r"scoring\.granularities\.0"),
    ],
)
def test_unknown_registry_names_are_named(default_cfg, path, value, key):
    """Unknown calibration methods, flavours, granularities and analysis choices are named."""
    _set(default_cfg, path, value)
    with pytest.raises(ConfigError, match=rf"{key}: .* is not one of \["):
        validate_config(default_cfg, check_models=False)


def test_schema_names_match_the_registries():
    """The schema's name lists equal the registries they stand for."""
    from saltbench.analysis._interventions import FitMethod

    props = load_schema()["properties"]
    metrics, analysis, scoring = (props[k]["properties"] for k in ("metrics", "analysis", "scoring"))
    assert metrics["default_confidence"]["$ref"] == "#/$defs/confidence_function"
    assert load_schema()["$defs"]["confidence_function"]["enum"] == list(TOKEN_FUNCTIONS)
    assert metrics["default_confidence"]["default"] in TOKEN_FUNCTIONS
    assert scoring["confidence_functions"]["default"] == list(PAPER_CONFIDENCE_NAMES)
    assert sorted(metrics["calibration_methods"]["items"]["enum"]) == sorted(CALIBRATION_METHODS)
    assert analysis["ece_calibration"]["enum"] == list(CALIBRATION_METHODS)
    assert scoring["flavours"]["items"]["enum"] == analysis["flavour"]["enum"] == list(FLAVOURS)
    granularities = [scoring["granularities"]["items"], analysis["granularity"]]
    for sub in (*granularities, analysis["reliability_granularity"]):
        assert sub["enum"] == list(GRANULARITIES)
    assert analysis["intervention_fit"]["enum"] == list(get_args(FitMethod))
    assert load_schema()["$defs"]["task"]["enum"] == list(TASK_SLUGS)


def test_analysis_schema_matches_the_analysis_defaults(default_cfg):
    """The analysis block's schema defaults equal ANALYSIS_DEFAULTS (and fill analysis_options)."""
    analysis = load_schema()["properties"]["analysis"]["properties"]
    assert {k: v["default"] for k, v in analysis.items()} == dict(ANALYSIS_DEFAULTS)
    filled = validate_config(default_cfg, check_models=False)
    assert analysis_options(filled) == {**ANALYSIS_DEFAULTS, **default_cfg.get("analysis", {})}


def test_unknown_analysis_key_is_named(default_cfg):
    """A typo in the analysis block is caught by the schema, with the allowed keys."""
    default_cfg["analysis"] = {"flavor": "full"}
    with pytest.raises(ConfigError, match=r"analysis: unknown key\(s\) 'flavor'; allowed: .*flavour"):
        validate_config(default_cfg, check_models=False)


def test_analysis_names_must_be_computed_upstream(default_cfg):
    """The analysis may only use calibrations, flavours and granularities the run computes."""
    bad = copy.deepcopy(default_cfg)
    bad["metrics"]["calibration_methods"] = ["isotonic"]
    bad["analysis"] = {"ece_calibration": "platt"}
    with pytest.raises(ConfigError, match=r"analysis\.ece_calibration: 'platt' is not computed .*add it to"):
        validate_config(bad, check_models=False)
    bad["analysis"] = {"ece_calibration": "none"}  # always computed for probability-valued functions
    validate_config(bad, check_models=False)
    bad = copy.deepcopy(default_cfg)
    bad["scoring"] = {"flavours": ["topk"]}
    bad["analysis"] = {"flavour": "full"}
    with pytest.raises(ConfigError, match=r"analysis\.flavour: 'full' is not scored; scoring\.flavours is"):
        validate_config(bad, check_models=False)
    bad = copy.deepcopy(default_cfg)
    bad["scoring"] = {"granularities": ["atom", "line"]}
    bad["analysis"] = {"reliability_granularity": "generation"}
    with pytest.raises(ConfigError, match=r"analysis\.reliability_granularity: 'generation' is not scored"):
        validate_config(bad, check_models=False)


# -- sizes: samples per task and inference jobs -----------------------------------------------------------


def test_huge_n_samples_names_the_key_and_the_bound(default_cfg):
    """n_samples above the bound (one integer or per task) is named with the bound."""
    default_cfg["datasets"]["n_samples"] = 1_000_000_000_000
    with pytest.raises(ConfigError) as err:
        validate_config(default_cfg, check_models=False)
    assert str(err.value) == (
        "invalid configuration: datasets.n_samples: 1000000000000 is greater than the maximum of 1000000 "
        "samples per task (a sanity bound; the paper uses at most 400)"
    )
    default_cfg["datasets"]["n_samples"] = {t: 10 for t in default_cfg["tasks"]} | {"logic": 10**12}
    expected = r"datasets\.n_samples\.logic: 1000000000000 is greater than the maximum of 1000000 samples"
    with pytest.raises(ConfigError, match=expected):
        validate_config(default_cfg, check_models=False)


def test_sample_bound_is_documented_in_the_schema():
    """The bound on n_samples is the schema's maximum and is stated in its description."""
    n_samples = load_schema()["properties"]["datasets"]["properties"]["n_samples"]
    assert n_samples["maximum"] == MAX_SAMPLES_PER_TASK == 1_000_000
    assert n_samples["additionalProperties"]["maximum"] == MAX_SAMPLES_PER_TASK
    assert "1000000" in n_samples["description"]


def test_the_bound_itself_is_allowed(default_cfg):
    """n_samples equal to the bound is valid (with a shard size keeping the job count low)."""
    default_cfg["datasets"]["n_samples"] = MAX_SAMPLES_PER_TASK
    default_cfg["inference"]["shard_size"] = 100_000
    assert validate_config(default_cfg, check_models=False)["datasets"]["n_samples"] == MAX_SAMPLES_PER_TASK


def test_too_many_inference_jobs_are_rejected(default_cfg):
    """A run with more than MAX_INFERENCE_JOBS inference shards is rejected with the count."""
    default_cfg["datasets"]["n_samples"] = 1_000_000  # within the per-task bound
    default_cfg["inference"]["shard_size"] = 8
    default_cfg["models"] = default_cfg["models"][:4]
    with pytest.raises(ConfigError) as err:
        validate_config(default_cfg, check_models=False)
    assert str(err.value).startswith(
        "datasets.n_samples / inference.shard_size: 6,000,000 inference jobs (750,000 shards over 6 task(s) "
        "x 4 model(s) x 2 prompt style(s)); at most 100,000"
    )
    assert MAX_INFERENCE_JOBS == 100_000


def test_generated_source_needs_a_count_for_every_task(default_cfg):
    """With generated data, every configured task needs a sample count."""
    default_cfg["datasets"]["n_samples"] = {"dna": 4, "code": 4}
    with pytest.raises(ConfigError, match=r"n_samples: a sample count is required .*missing for logic"):
        validate_config(default_cfg, check_models=False)
    default_cfg["tasks"] = ["dna", "code"]
    default_cfg["interventions"]["tasks"] = []  # (the run's tasks)
    validate_config(default_cfg, check_models=False)


# -- YAML files: syntax errors and duplicate keys ------------------------------------------------------------


GOOD_YAML = "seed: 1\ntasks: [dna]\ndatasets:\n  source: generated\n  n_samples: 3\n"


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    """A YAML syntax error is reported with the file, line and column."""
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD_YAML.replace("  n_samples: 3\n", "  n_samples: [3\nmodels: []\n"))
    with pytest.raises(ConfigError) as err:
        load_config(path, check_models=False)
    assert str(err.value) == (
        f"{path}, line 6, column 7: invalid YAML: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence at line 5)"
    )
    path.write_text(GOOD_YAML.replace("  source", "\tsource"))
    expected = rf"^{re.escape(str(path))}, line 4, column 1: invalid YAML: found character '\\t'"
    with pytest.raises(ConfigError, match=expected):
        load_config(path, check_models=False)


def test_duplicate_yaml_key_names_file_key_and_line(tmp_path):
    """A duplicate key is reported with the file, the key path and both lines."""
    path = tmp_path / "dup.yaml"
    path.write_text(GOOD_YAML + "  n_samples: 1000\n")
    with pytest.raises(ConfigError) as err:
        load_config(path, check_models=False)
    assert str(err.value) == (
        f"{path}, line 6: duplicate key 'datasets.n_samples' (first defined on line 5); "
        "YAML would silently keep only the last value"
    )
    path.write_text("seed: 1\n" + GOOD_YAML)
    with pytest.raises(ConfigError, match=r"line 2: duplicate key 'seed' \(first defined on line 1\)"):
        load_config(path, check_models=False)
    path.write_text(GOOD_YAML + "interventions:\n  placements: [random]\n  positions: [{a: 1, a: 2}]\n")
    with pytest.raises(ConfigError, match=r"line 8: duplicate key 'interventions\.positions\.0\.a'"):
        read_config_file(path)


def test_strict_loader_keeps_plain_yaml_features(tmp_path):
    """Merge keys, aliases and int/str keys still load; quoted and plain duplicates do not."""
    assert yaml.load("a: &x {k: 1, j: 2}\nb:\n  <<: *x\n  k: 3\nc: *x\n", Loader=StrictYAMLLoader) == {
        "a": {"k": 1, "j": 2},
        "b": {"k": 3, "j": 2},
        "c": {"k": 1, "j": 2},
    }  # a key overriding a merged one is not a duplicate
    assert yaml.load("1: a\n'1': b\n", Loader=StrictYAMLLoader) == {1: "a", "1": "b"}  # int and str keys
    with pytest.raises(DuplicateKeyError):
        yaml.load("'a': 1\na: 2\n", Loader=StrictYAMLLoader)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert read_config_file(empty) == {}


def test_check_config_files_rereads_what_snakemake_loaded(repo_root, tmp_path):
    """check_config_files accepts the shipped configs and names a file with a duplicate key."""
    check_config_files([repo_root / "config" / "config.yaml", str(repo_root / "config" / "paper.yaml")])
    dup = tmp_path / "dup.yaml"
    dup.write_text(GOOD_YAML + "seed: 2\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(dup))}, line 6: duplicate key 'seed'"):
        check_config_files([repo_root / "config" / "config.yaml", dup])
    with pytest.raises(ConfigError, match=r"missing\.yaml: cannot read the config file"):
        check_config_files([tmp_path / "missing.yaml"])


def test_command_line_checks_files(repo_root, tmp_path, monkeypatch, capsys):
    """python -m saltbench.config prints valid / the problem per file and sets the exit status."""
    monkeypatch.chdir(repo_root)
    dup = tmp_path / "dup.yaml"
    dup.write_text(GOOD_YAML + "seed: 2\n")
    assert main(["config/config.yaml"]) == 0
    assert main(["config/test.yaml", str(dup)]) == 1
    out, err = capsys.readouterr()
    assert "config/config.yaml: valid" in out and "config/test.yaml: valid" in out
    assert f"{dup}, line 6: duplicate key 'seed'" in err


# -- the configuration model: generated schema, resolved values, one bad value per block ---------------------


def test_committed_schema_is_what_the_model_generates(repo_root):
    """src/saltbench/schema/config.schema.json is generated output: regenerate it with
    ``python -m saltbench.config --write-schema`` after changing saltbench.config."""
    committed = (repo_root / "src" / "saltbench" / "schema" / "config.schema.json").read_text(
        encoding="utf-8"
    )
    assert committed == render_schema(), "stale schema: run python -m saltbench.config --write-schema"
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(json.loads(committed))


def test_the_key_table_of_configuration_md_is_what_the_model_generates(repo_root):
    """docs/configuration.md §3's table of every key is generated output (``python -m saltbench.config
    --write-schema``), one row per key of the schema, nested blocks included; a page without its markers
    is refused."""
    from saltbench.config.loading import CONFIG_DOCS, config_key_table, with_config_keys

    page = (repo_root / CONFIG_DOCS).read_text(encoding="utf-8")
    assert page == with_config_keys(page), "stale: run python -m saltbench.config --write-schema"
    rows = {line.split("`")[1] for line in config_key_table().splitlines() if line.startswith("| `")}
    keys = {path for path, _ in _walk_properties(load_schema()) if "*" not in path}
    assert rows == keys and len(rows) > 100
    with pytest.raises(ValueError, match="no generated table"):
        with_config_keys("# Configuration\n")


def test_write_schema_command(tmp_path, capsys):
    """``python -m saltbench.config --write-schema PATH`` writes the generated schema."""
    target = tmp_path / "schema.json"
    assert main(["--write-schema", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == render_schema()
    assert main(["--write-schema", "a", "b"]) == 2 and main(["--bogus"]) == 2
    assert "usage" in capsys.readouterr().err


def _walk_properties(schema: dict, path: str = ""):
    for key, sub in schema.get("properties", {}).items():
        yield f"{path}{key}", sub
        yield from _walk_properties(sub, f"{path}{key}.")
        items = sub.get("additionalProperties")
        if isinstance(items, dict):
            yield from _walk_properties(items, f"{path}{key}.*.")


def test_every_key_is_described_and_every_block_closed():
    """Each key of the schema has a description; each block rejects unknown keys."""
    schema = load_schema()
    for key, sub in _walk_properties(schema):
        assert sub.get("description"), key
        if "properties" in sub:
            assert sub["additionalProperties"] is False, key


def test_schema_defaults_are_the_model_defaults():
    """Each default of the schema is the model's field default (the schema states none of its own)."""
    props = load_schema()["properties"]
    for name, cls in config_model.BLOCKS.items():
        block = cls() if name != "datasets" else cls(source="generated")
        for field in dataclasses.fields(cls):
            sub = props[name]["properties"][field.name]
            value = getattr(block, field.name)
            if field.metadata["kind"] == "default" and config_schema.is_block(type(value)):
                assert sub["default"] == {}, (name, field.name)  # a nested block: its keys' defaults
            elif field.metadata["kind"] == "default":
                assert sub["default"] == config_schema.plain(value), (name, field.name)
            else:
                assert "default" not in sub, (name, field.name)


def test_resolved_mapping_keeps_the_given_keys_first(default_cfg):
    """The resolved mapping has the keys as written (same values, same order), then the defaults; a key
    without a default that is not given stays absent."""
    default_cfg["datasets"].pop("paper_path")
    resolved = validate_config(default_cfg, check_models=False)
    assert list(resolved)[: len(default_cfg)] == list(default_cfg)
    assert list(resolved["inference"])[: len(default_cfg["inference"])] == list(default_cfg["inference"])
    assert resolved["inference"]["backend"] is None and resolved["scoring"]["alignment"] == "strict"
    assert "paper_path" not in resolved["datasets"]
    assert resolved["training"] == default_cfg["training"]  # no TrainConfig default is restated
    assert validate_config(resolved, check_models=False) == resolved  # resolving is idempotent


def test_typed_values_for_the_snakefile(default_cfg):
    """resolve_config gives typed values: lists as tuples, training name/checkpoints/recipe, blocks."""
    settings = resolve_config(default_cfg, check_models=False)
    assert isinstance(settings, WorkflowConfig) and settings.tasks == tuple(default_cfg["tasks"])
    training = settings.training
    assert isinstance(training, TrainingConfig) and training.enabled and training.name == "salt-tiny"
    assert training.checkpoint_names == ("early", "mid", "final")
    expected = {k: v for k, v in default_cfg["training"].items() if k not in ("enabled", "name", "variants")}
    assert training.train_config() == expected
    assert TrainingConfig().checkpoint_names == () and TrainingConfig().train_config() == {}
    assert isinstance(settings.analysis, AnalysisConfig) and settings.analysis.reasoning_level == "sample"
    assert settings.analysis.flavour == AnalysisConfig().flavour  # a key not written takes its default
    assert isinstance(settings.interventions, InterventionsConfig) and settings.interventions.seed is None
    assert settings.to_dict() == validate_config(default_cfg, check_models=False)


def test_paper_source_without_n_samples_takes_all_rows(default_cfg, tmp_path):
    """``datasets.n_samples`` defaults to null (all rows of the paper data): the key is always resolved."""
    root = _fake_paper_data(tmp_path / "paper_data")
    default_cfg["datasets"] = {"source": "paper", "paper_path": str(root)}
    assert validate_config(default_cfg, check_models=False)["datasets"]["n_samples"] is None


def test_resolve_block_names_the_block(default_cfg):
    """One block alone is validated against its part of the schema, errors prefixed with its key."""
    assert resolve_block("analysis", None, AnalysisConfig) == AnalysisConfig()
    with pytest.raises(ConfigError, match=r"^invalid configuration: analysis\.position_bins: 0 is less"):
        resolve_block("analysis", {"position_bins": 0}, AnalysisConfig)
    with pytest.raises(TypeError, match="not the class of config block 'analysis'"):
        resolve_block("analysis", {}, TrainingConfig)


BAD_VALUE_PER_BLOCK = [
    (("seed",), -1, r"seed: -1 is less than the minimum of 0"),
    (("tasks",), ["dna", "dna"], r"tasks: \['dna', 'dna'\] has non-unique elements"),
    (("prompt_styles",), ["direct", "socratic"], r"prompt_styles\.1: 'socratic' is not one of"),
    (("datasets", "source"), "web", r"datasets\.source: 'web' is not one of"),
    (("model_registry",), 7, r"model_registry: 7 is not of type 'string'"),
    (("models",), ["bad name"], r"models\.0: 'bad name' does not match"),
    (("inference", "top_k"), 101, r"inference\.top_k: 101 is greater than the maximum of 100"),
    (("scoring", "alignment"), "fuzzy", r"scoring\.alignment: 'fuzzy' is not one of"),
    (("metrics", "ci_level"), 1.0, r"metrics\.ci_level: 1\.0 is greater than or equal to the maximum of 1"),
    (("training", "device"), "tpu", r"training\.device: 'tpu' is not one of"),
    (("training", "model", "d_modle"), 64, r"training\.model: unknown key\(s\) 'd_modle'"),
    (
        ("training", "checkpoints", "final"),
        99999,
        r"training: checkpoints\.final must be a step in 1\.\.4000",
    ),
    (("interventions", "boundary"), "line", r"interventions\.boundary: 'line' is not one of"),
    (("interventions", "positions"), [1], r"interventions\.positions\.0: 1 is less than the minimum of 2"),
    (("analysis", "reasoning_level"), "model", r"analysis\.reasoning_level: 'model' is not one of"),
    (("analysis", "label_noise_epsilons"), [0.6], r"analysis\.label_noise_epsilons\.0: 0\.6 is greater"),
]


@pytest.mark.parametrize(
    "path, value, message", BAD_VALUE_PER_BLOCK, ids=[".".join(p) for p, _, _ in BAD_VALUE_PER_BLOCK]
)
def test_one_bad_value_per_block_is_named(default_cfg, path, value, message):
    """A wrong value in any block stops validation with a message naming its key path."""
    _set(default_cfg, path, value)
    with pytest.raises(ConfigError, match=message):
        validate_config(default_cfg, check_models=False)


def test_every_block_has_a_bad_value_case():
    """BAD_VALUE_PER_BLOCK covers every top-level key of the model."""
    assert {p[0] for p, _, _ in BAD_VALUE_PER_BLOCK} == {f.name for f in dataclasses.fields(WorkflowConfig)}


def test_training_keys_are_those_of_the_training_recipe():
    """The training block's keys are TrainConfig's (plus enabled and name), its nested blocks
    ArchitectureSpec's,
    OptimSpec's and TaskMix's: the model types them, saltbench.training keeps their defaults."""
    from saltbench.training import ArchitectureSpec, OptimSpec, TaskMix, TrainConfig

    def names(cls: type) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}

    assert names(config_model.TrainingConfig) == names(TrainConfig) | {"enabled", "name", "variants"}
    assert names(config_model.TrainingVariantConfig) < names(TrainConfig)
    assert names(config_model.TrainModelConfig) == names(ArchitectureSpec)
    assert names(config_model.TrainOptimConfig) == names(OptimSpec)
    assert names(config_model.TrainTaskConfig) == names(TaskMix) - {"task"}


def test_training_block_is_checked_even_when_disabled(default_cfg):
    """Types and unknown keys of the training block are checked whether or not it is enabled."""
    default_cfg["training"] = {"enabled": False, "stpes": 10}
    with pytest.raises(ConfigError, match=r"training: unknown key\(s\) 'stpes'; allowed: .*steps"):
        validate_config(default_cfg, check_models=False)
    default_cfg["training"] = {"tasks": {"matmul": {"params": {"output_length": [4]}}}}
    with pytest.raises(ConfigError, match=r"training\.tasks\.matmul\.params: .*output_length"):
        validate_config(default_cfg, check_models=False)


def test_unknown_intervention_model_is_named(default_cfg, repo_root, monkeypatch):
    """interventions.models are checked against the registry when the stage is enabled."""
    monkeypatch.chdir(repo_root)
    default_cfg["interventions"]["models"] = ["no-such-model"]
    with pytest.raises(ConfigError, match=r"^interventions\.models: unknown model 'no-such-model'"):
        validate_config(default_cfg)
    default_cfg["interventions"]["enabled"] = False
    validate_config(default_cfg)


def test_config_model_imports_nothing_heavy():
    """The Snakefile imports saltbench.config on every invocation: no jsonschema, polars or torch then."""
    heavy = "{'jsonschema', 'polars', 'torch', 'numpy'}"
    code = f"import sys, saltbench.config; print(sorted({heavy} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.workflow
def test_bad_analysis_value_stops_a_dry_run(tmp_path, copy_workflow, repo_root):
    """A wrong value in the analysis block stops ``snakemake -n --configfile`` before any job, naming it."""
    (tmp_path / "workflow").mkdir()
    workdir = copy_workflow(tmp_path / "workflow")
    cfg = yaml.safe_load((repo_root / "config" / "test.yaml").read_text())
    cfg["analysis"] = {"reasoning_level": "model"}
    configfile = tmp_path / "bad.yaml"
    configfile.write_text(yaml.safe_dump(cfg))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--configfile", str(configfile)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "analysis.reasoning_level: 'model' is not one of ['task', 'sample']" in out
    assert "Job stats" not in out and not (workdir / "data").exists()


def test_training_variants_are_sibling_recipes(default_cfg):
    """A variant is the family's recipe with its own keys written over it; names and keys are checked."""
    cfg = copy.deepcopy(default_cfg)
    cfg["training"]["variants"] = {"salt-tiny-reason": {"scratchpad": "always"}}
    families = resolve_config(cfg, check_models=False).training.families()
    family, variant = families["salt-tiny"], families["salt-tiny-reason"]
    assert variant == {**family, "scratchpad": "always"}
    cfg["training"]["variants"] = {"salt-tiny": {"scratchpad": "always"}}
    with pytest.raises(ConfigError, match="training.variants.salt-tiny: a variant cannot take the family's"):
        validate_config(cfg, check_models=False)
    cfg["training"]["variants"] = {"salt-tiny-reason": {"steps": 10}}
    with pytest.raises(ConfigError, match=r"training\.variants\.salt-tiny-reason: unknown key\(s\) 'steps'"):
        validate_config(cfg, check_models=False)
    cfg["training"]["variants"] = {"salt-tiny-reason": {"styles": ["direct", "chatty"]}}
    with pytest.raises(ConfigError, match=r"training\.variants\.salt-tiny-reason\.styles\.1: 'chatty'"):
        validate_config(cfg, check_models=False)


def test_max_samples_names_models_of_the_run(default_cfg):
    cfg = copy.deepcopy(default_cfg)
    cfg["inference"]["max_samples"] = {"smollm2-135m": 4}
    assert resolve_config(cfg, check_models=False).inference.rows_for("smollm2-135m", 8) == 4
    cfg["inference"]["max_samples"] = {"smollm2-13m": 4}
    with pytest.raises(ConfigError, match=r"inference\.max_samples: 'smollm2-13m' not in models"):
        validate_config(cfg, check_models=False)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda cfg: cfg["inference"].update(cot_factor=float("nan")), r"^inference\.cot_factor: nan is not"),
        (lambda cfg: cfg["metrics"].update(ci_level=float("inf")), r"^metrics\.ci_level: inf is not a"),
        (lambda cfg: cfg.update(tasks=["dna", "words"]), r"^interventions\.tasks: logic, matmul, k"),
        (lambda cfg: cfg.update(models=[]), r"^models: the run names no model"),
    ],
)
def test_configurations_that_were_accepted_in_silence_are_refused(
    default_cfg, repo_root, monkeypatch, change, message
):
    """NaN/inf numbers, intervention tasks outside `tasks`, and a run without models stop before any job."""
    monkeypatch.chdir(repo_root)
    default_cfg.setdefault("inference", {})
    default_cfg.setdefault("metrics", {})
    change(default_cfg)
    with pytest.raises(ConfigError, match=message):
        resolve_config(default_cfg)


def test_intervention_models_outside_models_are_a_feature(default_cfg, repo_root, monkeypatch):
    """interventions.models may name a registry model the run does not generate with."""
    monkeypatch.chdir(repo_root)
    default_cfg["interventions"]["models"] = ["smollm2-135m"]
    default_cfg["models"] = ["salt-tiny@final"]
    default_cfg["inference"]["max_samples"] = {}
    assert resolve_config(default_cfg).interventions.models == ("smollm2-135m",)


def test_a_model_defined_twice_in_the_registry_is_refused(tmp_path):
    from saltbench.inference import load_model_registry

    path = tmp_path / "models.yaml"
    entry = "    source: {kind: local, path: x}\n"
    path.write_text(f"models:\n  m:\n{entry}  other:\n{entry}  m:\n{entry}")
    with pytest.raises(
        ValueError, match=r"models.yaml, line 6: duplicate key 'models.m' \(first defined on line 2\)"
    ):
        load_model_registry(path)


def test_a_key_written_twice_in_a_registry_entry_is_refused(tmp_path):
    from saltbench.inference import load_model_registry

    path = tmp_path / "models.yaml"
    path.write_text(
        "models:\n  m:\n    source: {kind: local, path: x}\n    dtype: float32\n    dtype: float16\n"
    )
    with pytest.raises(
        ValueError, match=rf"{path}, line 5: duplicate key 'models.m.dtype' \(first defined on line 4\)"
    ):
        load_model_registry(path)


def test_an_imported_model_is_refused_in_the_interventions(default_cfg, tmp_path, monkeypatch):
    """An imported model (source kind generations) has only its generations: no interventions."""
    registry = tmp_path / "models.yaml"
    entry = {"source": {"kind": "generations", "format": "jsonl", "path": "mine.jsonl"}}
    registry.write_text(yaml.safe_dump({"models": {"mine": entry}}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    default_cfg.update(model_registry=str(registry), models=["mine"])
    default_cfg["inference"]["max_samples"] = {}
    default_cfg["inference"]["backend"] = "vllm"  # an override does not apply to an imported model
    default_cfg["training"]["enabled"] = False
    default_cfg["interventions"].update(enabled=True, models=["mine"])
    with pytest.raises(
        ConfigError, match=r"^interventions\.models: mine imported \(source kind generations\)"
    ):
        validate_config(default_cfg)
    default_cfg["interventions"]["enabled"] = False
    validate_config(default_cfg)


def test_draws_are_refused_where_a_model_cannot_sample_with_a_seed(default_cfg, tmp_path, monkeypatch):
    """``inference.samples.n > 0`` needs seeded sampling from every model of the run: a model imported from
    the authors' cache (no draws) and a served API without ``n`` and ``seed`` are refused before any job,
    naming the key and the model; a JSONL import takes the draws its file carries."""
    served = {"kind": "api", "base_url": "http://localhost:1/v1", "model": "m"}
    entries = {
        "mine": {"source": {"kind": "generations", "format": "jsonl", "path": "mine.jsonl"}},
        "cache": {"source": {"kind": "generations", "format": "salt_cache", "path": "cache.json"}},
        "api-seeded": {"source": served, "backend": "openai"},
        "api-unseeded": {"source": served, "backend": "openai", "backend_options": {"draws": "unseeded"}},
        "api-none": {"source": served, "backend": "openai", "backend_options": {"draws": "none"}},
    }
    registry = tmp_path / "models.yaml"
    registry.write_text(yaml.safe_dump({"models": entries}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    default_cfg.update(model_registry=str(registry))
    default_cfg["inference"]["max_samples"] = {}
    default_cfg["training"]["enabled"] = False
    default_cfg["interventions"]["enabled"] = False
    default_cfg["inference"]["samples"] = {"n": 2}
    expected = {
        "cache": r"model 'cache' is imported from the authors' cache, which carries no draws",
        "api-unseeded": r"model 'api-unseeded' on backend 'openai' samples without a seed",
        "api-none": r"model 'api-none' on backend 'openai' cannot sample",
    }
    for name, message in expected.items():
        default_cfg["models"] = [name]
        with pytest.raises(ConfigError, match=rf"^inference\.samples: {message}"):
            validate_config(default_cfg)
    for name in ("api-seeded", "mine"):
        default_cfg["models"] = [name]
        assert validate_config(default_cfg)["inference"]["samples"]["n"] == 2
    default_cfg["models"] = ["api-none"]
    default_cfg["inference"]["samples"] = {"n": 0}
    validate_config(default_cfg)  # no draws asked: nothing to refuse


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        ({"n": -1}, r"inference\.samples\.n: -1 is less than the minimum of 0"),
        ({"n": 2, "temperature": 0}, r"inference\.samples\.temperature: 0 is less than or equal to"),
        ({"n": 2, "top_p": 1.5}, r"inference\.samples\.top_p: 1\.5 is greater than the maximum of 1"),
        ({"n": 2, "seeds": 3}, r"inference\.samples: unknown key\(s\) 'seeds'"),
    ],
)
def test_a_bad_samples_block_is_named(default_cfg, samples, message):
    default_cfg["inference"]["samples"] = samples
    with pytest.raises(ConfigError, match=message):
        validate_config(default_cfg, check_models=False)


def test_every_built_in_backend_declares_seeded_draws():
    from saltbench.inference.backends import builtin_backends, draw_support

    assert {name: draw_support(name) for name in builtin_backends()} == dict.fromkeys(
        builtin_backends(), "seeded"
    )


@pytest.mark.parametrize(
    ("second_pass", "message"),
    [
        ({"kinds": ["verbal"]}, r"inference\.second_pass\.kinds\.0: 'verbal' is not one of"),
        ({"kinds": ["p_true", "p_true"]}, r"inference\.second_pass\.kinds: .* non-unique"),
        (
            {"kinds": ["p_true"], "granularities": ["sentence"]},
            r"inference\.second_pass\.granularities\.0: 'sentence'",
        ),
        ({"kinds": ["p_true"], "atom_max": 0}, r"inference\.second_pass\.atom_max: 0 is less than"),
        ({"kind": ["p_true"]}, r"inference\.second_pass: unknown key\(s\) 'kind'"),
    ],
)
def test_a_bad_second_pass_block_is_named(default_cfg, second_pass, message):
    default_cfg["inference"]["second_pass"] = second_pass
    with pytest.raises(ConfigError, match=message):
        validate_config(default_cfg, check_models=False)


def test_a_second_pass_no_model_can_answer_is_refused_before_any_job(default_cfg, tmp_path, monkeypatch):
    """An imported model has no model to ask; P(True) needs vocabulary ids a served API without
    ``backend_options.token_ids`` does not return; an unscored granularity would join no unit
    (docs/confidence.md §8)."""
    served = {"kind": "api", "base_url": "http://localhost:1/v1", "model": "m"}
    entries = {
        "mine": {"source": {"kind": "generations", "format": "jsonl", "path": "mine.jsonl"}},
        "api": {"source": served, "backend": "openai"},
    }
    registry = tmp_path / "models.yaml"
    registry.write_text(yaml.safe_dump({"models": entries}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    default_cfg.update(model_registry=str(registry), models=["mine"])
    default_cfg["inference"]["max_samples"] = {}
    default_cfg["training"]["enabled"] = False
    default_cfg["interventions"]["enabled"] = False
    default_cfg["inference"]["second_pass"] = {"kinds": ["verbalized", "p_true"]}
    validate_config(default_cfg)  # by default an imported model is left out of the second pass
    default_cfg["inference"]["second_pass"]["models"] = ["mine"]
    with pytest.raises(ConfigError, match=r"^inference\.second_pass\.models: model 'mine' is imported"):
        validate_config(default_cfg)
    default_cfg["inference"]["second_pass"] = {"kinds": ["verbalized", "p_true"]}
    default_cfg["models"] = ["api"]
    with pytest.raises(
        ConfigError, match=r"^inference\.second_pass\.kinds: p_true for model 'api' on backend"
    ):
        validate_config(default_cfg)
    default_cfg["inference"]["second_pass"] = {"kinds": ["verbalized"]}
    assert validate_config(default_cfg)["inference"]["second_pass"]["kinds"] == ["verbalized"]
    default_cfg["scoring"] = {"granularities": ["atom", "generation"]}
    with pytest.raises(ConfigError, match=r"^inference\.second_pass\.granularities: line not in scoring"):
        validate_config(default_cfg)


def test_draws_and_the_second_pass_ask_the_models_they_name_and_ignore_others(default_cfg, caplog):
    """``inference.samples.models`` and ``inference.second_pass.models`` narrow the models that draw or are
    asked (default: all; the second pass leaves imported models out); a name outside the run's models is
    ignored with a warning, so that a run narrowing ``models`` keeps the default configuration valid."""
    settings = resolve_config(default_cfg)
    samples, second = settings.inference.samples, settings.inference.second_pass
    assert samples.n > 0 and samples.models is not None
    assert samples.drawn(settings.models) == tuple(m for m in settings.models if m in samples.models)
    assert "smollm2-135m" in settings.models and "smollm2-135m" not in samples.drawn(settings.models)
    assert second.asked(settings.models) == tuple(m for m in settings.models if m in (second.models or ()))
    every = dataclasses.replace(second, models=None)
    assert every.asked(settings.models, ["salt-tiny@mid"]) == tuple(
        m for m in settings.models if m != "salt-tiny@mid"
    )
    assert dataclasses.replace(samples, n=0).drawn(settings.models) == ()
    default_cfg["models"] = ["smollm2-135m"]
    with caplog.at_level("WARNING"):
        narrowed = resolve_config(default_cfg)
    assert narrowed.inference.samples.drawn(narrowed.models) == ()
    assert "inference.samples.models: salt-tiny@early" in caplog.text
