"""Config validation: defaults validate, wrong keys and values are named in the error."""

from __future__ import annotations

import copy

import pytest
import yaml

from saltbench.config import ConfigError, load_config, validate_config


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
        "dna": 300, "code": 148, "logic": 400, "matmul": 300, "kronecker": 300, "words": 300
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
    with pytest.raises(ConfigError, match=r"inference.backend: 'tgi' is not one of \['hf', 'vllm', None\]"):
        validate_config(default_cfg, check_models=False)
