"""The preflight of served models (python -m saltbench.stages.preflight; docs/backends.md §8.8): one short
request each, and whether log-probabilities with enough alternatives come back."""

from __future__ import annotations

import yaml
from helpers.fake_openai import N_ALTERNATIVES, FakeOpenAI

from saltbench.stages.preflight import main

KEY_ENV = "SALTBENCH_PREFLIGHT_TEST_KEY"


def _config(tmp_path, base_url: str, top_k: int):
    registry = tmp_path / "models.yaml"
    registry.write_text(
        yaml.safe_dump(
            {
                "models": {
                    "served": {
                        "source": {"kind": "api", "base_url": base_url, "model": "fake"},
                        "backend": "openai",
                        "backend_options": {"api_key_env": KEY_ENV, "max_retries": 0, "timeout_s": 5},
                    }
                }
            }
        )
    )
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "seed": 1,
                "tasks": ["dna"],
                "prompt_styles": ["direct"],
                "models": ["served"],
                "model_registry": str(registry),
                "datasets": {"source": "generated", "n_samples": 2},
                "inference": {"top_k": top_k},
            }
        )
    )
    return str(config)


def test_a_served_model_with_enough_alternatives_passes_with_one_request(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, "sk-x")
    with FakeOpenAI() as server:
        assert main([_config(tmp_path, server.base_url, N_ALTERNATIVES)]) == 0
        assert server.requests == 1
    assert f"served: ok: 4 tokens, {N_ALTERNATIVES} alternatives per token" in capsys.readouterr().out


def test_too_few_alternatives_no_logprobs_or_a_refusal_fail(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, "sk-x")
    with FakeOpenAI() as server:
        config = _config(tmp_path, server.base_url, 20)
        assert main([config]) == 1
        assert f"served: FAILED: 4 tokens, {N_ALTERNATIVES} alternatives per token: fewer than the 20" in (
            capsys.readouterr().out
        )
        server.faults = ["nologprobs"]
        assert main([config]) == 1
        assert "served: FAILED: NoLogprobs: the response carries no logprobs" in capsys.readouterr().out
        server.faults = ["400"]
        assert main([config]) == 1
        assert "served: FAILED: BadRequestError" in capsys.readouterr().out
