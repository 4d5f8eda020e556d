"""The workflow-managed server's contract without starting vLLM (docs/backends.md §8.6): the endpoint file,
waiting for and refusing servers, the client spec, the command, and a server gone mid-run failing the job.
Real servers: tests/workflow/test_managed_server.py, tests/inference/test_openai_vllm_server.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.fake_openai import FakeOpenAI

from saltbench.inference import parse_model_registry
from saltbench.inference.openai import ApiSettings
from saltbench.inference.server.serving import (
    Endpoint,
    ServerError,
    connect,
    load,
    serve_command,
    served_spec,
)

LOCAL = parse_model_registry(
    {
        "models": {
            "m": {
                "source": {"kind": "local", "path": "models/m"},
                "backend": "vllm_server",
                "dtype": "bfloat16",
                "max_context": 4096,
                "backend_options": {"enforce_eager": True},
                "resources": {"gpus": 2},
            }
        }
    }
)["m"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_endpoint_file_round_trips_and_a_placeholder_reads(tmp_path):
    path = tmp_path / "m.json"
    endpoint = Endpoint("m", 42, "http://127.0.0.1:1/v1", "node1", "logs/servers/m.log")
    endpoint.write(path)
    assert Endpoint.read(path) == endpoint
    path.write_text('{"model": "m", "pid": 7}\n')  # what the rule's shell writes at once
    placeholder = Endpoint.read(path)
    assert placeholder.starting and not placeholder.alive()
    path.write_text("{not json")
    with pytest.raises(ServerError, match="not a server endpoint file"):
        Endpoint.read(path)


def test_connect_waits_for_a_live_server_and_names_what_went_wrong(tmp_path, monkeypatch):
    from saltbench.inference.server import serving

    path = tmp_path / "m.json"
    with FakeOpenAI() as fake:
        Endpoint("m", os.getpid(), fake.base_url, log="L").write(path)
        assert connect(path, "m", timeout_s=5).base_url == fake.base_url
        with pytest.raises(ServerError, match="endpoint of model 'm', not 'other'"):
            connect(path, "other", timeout_s=1)
        fake.healthy = False
        with pytest.raises(
            ServerError, match=r"no live vLLM server for model 'm' after 1 s .* see its log L"
        ):
            connect(path, "m", timeout_s=1)
    Endpoint("m", _dead_pid(), log="L").write(path)
    with pytest.raises(
        ServerError, match="is no longer running before its vLLM server came up; see its log L"
    ):
        connect(path, "m", timeout_s=30)  # at once, not after the timeout
    Endpoint("m", os.getpid(), log="L", error="the vLLM server of model 'm' exited with code 1").write(path)
    with pytest.raises(ServerError, match="exited with code 1"):
        connect(path, "m", timeout_s=30)
    monkeypatch.setattr(serving, "ENDPOINT_GRACE_S", 0.5)
    with pytest.raises(ServerError, match="the service job of model 'm' is gone"):
        connect(tmp_path / "missing.json", "m", timeout_s=30)


def test_the_client_spec_and_the_server_command():
    spec = served_spec(LOCAL, Endpoint("m", 1, "http://127.0.0.1:5/v1"), "models/m")
    assert spec.backend == "openai" and spec.source.base_url == "http://127.0.0.1:5/v1"
    api = spec.backend_options
    assert spec.source.model == "m" and isinstance(api, ApiSettings) and api.api_key_env is None
    assert (api.endpoint, api.token_ids, api.prompt_logprobs) == ("completions", True, True)
    assert api.tokenizer == "models/m" and spec.system_prompt == LOCAL.system_prompt
    cmd = serve_command("models/m", LOCAL, 8123)
    flags = dict(zip(cmd[3::2], cmd[4::2]))
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert flags["--model"] == "models/m" and flags["--port"] == "8123" and flags["--host"] == "127.0.0.1"
    assert flags["--served-model-name"] == "m" and flags["--dtype"] == "bfloat16"
    assert flags["--tensor-parallel-size"] == "2" and flags["--max-logprobs"] == "20"
    assert "--enforce-eager" in cmd and cmd[cmd.index("--max-model-len") + 1] == "4096"


def test_the_managed_client_fails_the_job_when_its_server_is_gone(tmp_path, monkeypatch):
    import saltbench.inference.chat as chat

    monkeypatch.setattr(chat, "load_tokenizer", lambda name: None)
    options = LOCAL.backend_options
    with pytest.raises(ServerError, match="needs the server the workflow's rule serve_model starts"):
        load("models/m", LOCAL, batch_size=1, top_k=20, cache_dir=None, server=None, options=options)
    path = tmp_path / "m.json"
    with FakeOpenAI() as fake:
        Endpoint("m", os.getpid(), fake.base_url, log="logs/servers/m.log").write(path)
        model = load(
            "models/m",
            LOCAL,
            batch_size=1,
            top_k=20,
            cache_dir=tmp_path / "cache",
            server=path,
            options=options,
        )
        assert model.backend == "vllm_server" and model.cache_origin == "vllm_server:m"
        fake.faults = ["500"] * 10
        fake.healthy = False
        with pytest.raises(
            ServerError, match=r"stopped during 1 generations: 1 request\(s\) failed; see its log"
        ):
            model.generate(["another prompt"], [100], progress=False)
