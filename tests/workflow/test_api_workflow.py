"""A served model through the workflow: ``backend: openai`` against a local fake server, the key in an
environment variable and nowhere on disk afterwards; the configuration's refusals (docs/backends.md §8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.fake_openai import FakeOpenAI

from saltbench.config import ConfigError, resolve_config

pytestmark = pytest.mark.workflow

KEY_ENV = "SALTBENCH_WORKFLOW_TEST_KEY"
SECRET = "sk-workflow-test-key-0042"


def _registry(path: Path, base_url: str, **api) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "models": {
                    "served": {
                        "source": {"kind": "api", "base_url": base_url, "model": "fake"},
                        "backend": "openai",
                        "backend_options": {
                            "api_key_env": KEY_ENV,
                            "concurrency": 2,
                            "timeout_s": 5,
                            "max_retries": 2,
                            "price_prompt_per_mtok": 1.0,
                            "price_completion_per_mtok": 2.0,
                            **api,
                        },
                    }
                }
            }
        )
    )
    return path


def _config(repo_root: Path, registry: Path, **changes) -> dict:
    cfg = yaml.safe_load((repo_root / "config" / "test.yaml").read_text())
    cfg.update(model_registry=str(registry), models=["served"], **changes)
    cfg["inference"].pop("backend")
    return cfg


def test_a_served_model_runs_and_its_key_is_written_nowhere(tmp_path, copy_workflow, repo_root):
    (tmp_path / "workflow").mkdir()
    workdir = copy_workflow(tmp_path / "workflow")
    with FakeOpenAI() as server:
        registry = _registry(workdir / "config" / "served.yaml", server.base_url)
        configfile = workdir / "config" / "served-run.yaml"
        configfile.write_text(yaml.safe_dump(_config(repo_root, registry)))
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "results/metrics/served/direct/dna.parquet",
                "--cores",
                "2",
                "--configfile",
                str(configfile),
            ],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, KEY_ENV: SECRET},
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert server.requests == 6 and set(server.auth) == {f"Bearer {SECRET}"}
    logs = "".join(p.read_text() for p in (workdir / "logs" / "generations" / "served").rglob("*.log"))
    assert logs.count("requests (0 retries)") == 4 and "cost" in logs  # two shards of each task
    assert not (workdir / "data" / "generations" / "served" / ".requests").exists() or not any(
        p.is_file() for p in (workdir / "data" / "generations" / "served" / ".requests").rglob("*")
    )
    for path in workdir.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in proc.stdout + proc.stderr


def test_an_unreachable_server_fails_the_shard_naming_the_model_and_the_url(
    tmp_path, copy_workflow, repo_root
):
    """Nothing listens at the URL: the shard's job fails at once naming the model and the address — no
    retries with back-off (backend_options.max_retries is 6 here), no shard of error rows."""
    from saltbench.inference.server.serving import free_port

    (tmp_path / "workflow").mkdir()
    workdir = copy_workflow(tmp_path / "workflow")
    port = free_port()
    registry = _registry(workdir / "config" / "served.yaml", f"http://127.0.0.1:{port}/v1", max_retries=6)
    configfile = workdir / "config" / "served-run.yaml"
    configfile.write_text(yaml.safe_dump(_config(repo_root, registry)))
    target = "data/generations/served/direct/dna/shard-0.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", target, "--cores", "1", "--configfile", str(configfile)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, KEY_ENV: SECRET},
    )
    assert proc.returncode != 0
    assert not (workdir / target).exists()
    log = (workdir / "logs/generations/served/direct/dna/shard-0.log").read_text()
    assert "RequestRefused: model 'served': the server refused a request" in log
    assert f"connection refused by http://127.0.0.1:{port}/" in log
    assert "(0 retries)" in log and "Retrying request" not in log


def test_the_cost_estimate_names_tokens_and_cost(tmp_path, repo_root):
    from saltbench.stages.cost import estimate, report

    registry = _registry(tmp_path / "served.yaml", "http://127.0.0.1:9/v1")
    estimates = estimate(resolve_config(_config(repo_root, registry)))
    assert {(e.task, e.requests) for e in estimates} == {("dna", 3), ("matmul", 3)}
    assert all(e.max_completion_tokens == 3 * 24 and e.cost is not None and not e.counted for e in estimates)
    assert "**served**" in report(estimates)


def test_interventions_and_backend_overrides_are_refused_for_a_served_model(tmp_path, repo_root):
    registry = _registry(tmp_path / "served.yaml", "http://127.0.0.1:9/v1")
    cfg = _config(repo_root, registry, interventions={"enabled": True, "tasks": ["dna"]})
    with pytest.raises(ConfigError, match=r"^interventions\.models: served run\(s\) on backend openai"):
        resolve_config(cfg)
    cfg = _config(repo_root, registry)
    cfg["inference"]["backend"] = "vllm"
    with pytest.raises(ConfigError, match=r"^inference\.backend: 'vllm' cannot run model 'served'"):
        resolve_config(cfg)


def test_a_server_with_prompt_log_probabilities_runs_the_interventions(tmp_path, repo_root):
    """backend_options.prompt_logprobs (completions endpoint, token ids) admits a served model to the
    interventions; without the completions endpoint and token ids the registry refuses the key, naming what it
    needs."""
    tokenizer = str(repo_root / "data" / "models" / "converted" / "smollm2-135m")
    api = {"endpoint": "completions", "token_ids": True, "tokenizer": tokenizer, "prompt_logprobs": True}
    registry = _registry(tmp_path / "served.yaml", "http://127.0.0.1:9/v1", **api)
    cfg = _config(repo_root, registry, interventions={"enabled": True, "tasks": ["dna"]})
    assert resolve_config(cfg).interventions.enabled
    registry = _registry(tmp_path / "chat.yaml", "http://127.0.0.1:9/v1", prompt_logprobs=True)
    message = r"models\.served\.backend_options\.prompt_logprobs: teacher-forcing through the server sends"
    with pytest.raises(ValueError, match=message):
        resolve_config(_config(repo_root, registry))
