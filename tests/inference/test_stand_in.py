"""Simulated stand-ins for the paper roster (docs/simulation.md §6): a valid registry and configuration with
the roster's names, reasoning flags and pairs, at a fraction of the samples."""

from pathlib import Path

import pytest
import yaml

from saltbench.config.loading import validate_config
from saltbench.inference import parse_model_registry
from saltbench.inference.simulated.stand_in import scaled_config, stand_in_registry

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def paper() -> tuple[dict, dict]:
    config = yaml.safe_load((REPO / "config/paper.yaml").read_text(encoding="utf-8"))
    registry = yaml.safe_load((REPO / config["model_registry"]).read_text(encoding="utf-8"))["models"]
    return config, registry


def test_every_paper_model_has_a_simulated_stand_in_with_its_reasoning_and_pair(paper, tmp_path):
    config, raw = paper
    specs = parse_model_registry(stand_in_registry(raw, config["models"], reasoning_tokens=500))
    assert list(specs) == config["models"]
    assert {spec.backend for spec in specs.values()} == {"simulated"}
    for name, spec in specs.items():
        assert spec.reasoning == bool(raw[name].get("reasoning"))
        assert spec.pair_with == raw[name].get("pair_with")
        params = spec.source.parameters
        assert params.reasoning_rate == (1.0 if spec.reasoning else 0.0)
        assert params.reasoning_tokens == (500 if spec.reasoning else 200)
        assert params.shape_rates == {"insertion": 0.1, "deletion": 0.1, "reorder": 0.1}
    seeds = {spec.source.parameters.seed for spec in specs.values()}
    assert len(seeds) == len(specs)
    first, last = specs[config["models"][0]], specs[config["models"][-1]]
    assert first.source.parameters.separation < last.source.parameters.separation


@pytest.mark.parametrize("fraction", [1 / 64, 1 / 2, 1.0])
def test_a_scaled_configuration_keeps_the_shape_and_scales_the_samples(paper, fraction):
    config, _ = paper
    scaled = scaled_config(config, fraction, "config/stand-ins.yaml")
    validate_config(scaled, check_models=False)
    for task, n in config["datasets"]["n_samples"].items():
        assert scaled["datasets"]["n_samples"][task] == max(2, -(-n * fraction // 1))
    assert scaled["models"] == config["models"] and scaled["tasks"] == config["tasks"]
    assert scaled["interventions"]["models"] == config["interventions"]["models"]
    assert scaled["inference"]["jobs"] == "per_model" and scaled["training"] == {"enabled": False}


def test_a_subset_of_the_roster_keeps_its_intervention_models_only(paper):
    config, _ = paper
    scaled = scaled_config(config, 1.0, "r.yaml", ["phi-4", "phi-4-reasoning", "qwen3-8b"])
    assert scaled["interventions"]["models"] == ["qwen3-8b", "phi-4"]  # the configuration's order
    assert scaled_config(config, 1.0, "r.yaml", ["phi-4-reasoning"])["interventions"]["enabled"] is False
    with pytest.raises(ValueError, match="not in the configuration"):
        scaled_config(config, 1.0, "r.yaml", ["no-such-model"])
    with pytest.raises(ValueError, match="fraction"):
        scaled_config(config, 0.0, "r.yaml")
