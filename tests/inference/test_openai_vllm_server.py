"""The ``openai`` backend against a real OpenAI-compatible server: vLLM's (the venv's CPU build) serving
SmolLM2 on 127.0.0.1, compared with the offline ``vllm`` backend on the same prompts (docs/backends.md §8)."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from saltbench.inference import get_model_spec, load_model_registry, parse_model_registry, records_to_frame
from saltbench.inference.backends import LoadSettings, load_backend
from saltbench.inference.server.serving import ServerProcess
from saltbench.inference.vllm import VllmModel, VllmOptions
from saltbench.stages.scoring import score_generations
from saltbench.tasks import get_task

pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.vllm]

REPO = Path(__file__).resolve().parents[2]
BUDGET = 24


@pytest.fixture(scope="module")
def server(smollm2_dir: Path, tmp_path_factory):
    """vLLM's OpenAI-compatible server (:class:`ServerProcess`, the workflow's own) on a free port."""
    pytest.importorskip("vllm", reason="vLLM is not installed")
    local = get_model_spec(load_model_registry(REPO / "config" / "models.yaml"), "smollm2-135m")
    spec = dataclasses.replace(
        local, name="smollm2", max_context=2048, backend_options=VllmOptions(enforce_eager=True)
    )
    log = tmp_path_factory.mktemp("server") / "vllm-serve.log"
    with ServerProcess(smollm2_dir, spec, log, num_threads=1, startup_timeout_s=600) as process:
        yield process.base_url


def _entry(base_url: str, smollm2_dir: Path, endpoint: str, **api) -> dict:
    """A registry entry of SmolLM2 served at ``base_url`` (prompts rendered here, token ids)."""
    local = get_model_spec(load_model_registry(REPO / "config" / "models.yaml"), "smollm2-135m")
    return {
        "source": {"kind": "api", "base_url": base_url, "model": "smollm2"},
        "backend": "openai",
        "system_prompt": local.system_prompt,
        "chat_template": local.chat_template,
        "backend_options": {
            "endpoint": endpoint,
            "token_ids": True,
            "tokenizer": str(smollm2_dir),
            "concurrency": 4,
            **api,
        },
    }


def _served_spec(base_url: str, smollm2_dir: Path, endpoint: str, **api):
    entry = _entry(base_url, smollm2_dir, endpoint, **api)
    return parse_model_registry({"models": {"smollm2-served": entry}})["smollm2-served"]


@pytest.fixture(scope="module")
def rows():
    return get_task("dna").generate(3, seed=5, max_codons=4)


def test_completions_through_the_server_match_the_offline_engine(server, smollm2_dir, smollm2_vllm, rows):
    served = load_backend(server, _served_spec(server, smollm2_dir, "completions"), settings=LoadSettings())
    prompts = served.render([get_task("dna").prompt(text, n_shots=1) for text in rows["input"]])
    offline = VllmModel(served.spec, smollm2_vllm.tokenizer, smollm2_vllm, 16, 20)
    assert offline.render([get_task("dna").prompt(text, n_shots=1) for text in rows["input"]]) == prompts
    online = served.generate(prompts, [BUDGET] * len(prompts), progress=False)
    local = offline.generate(prompts, [BUDGET] * len(prompts), progress=False)
    for a, b in zip(online, local):
        n = a.num_generated_tokens
        assert n > 0 and a.finish_reason == b.finish_reason
        # the offline record keeps the final EOS token (text ""); the server's stops before it
        assert b.token_ids[:n].tolist() == a.token_ids.tolist() and b.num_generated_tokens - n in (0, 1)
        assert a.token_texts == b.token_texts[:n] and a.text == b.text
        np.testing.assert_allclose(a.chosen_logprobs, b.chosen_logprobs[:n], atol=1e-3)
        np.testing.assert_allclose(
            np.sort(a.topk_logprobs, axis=1), np.sort(b.topk_logprobs[:n], axis=1), atol=1e-3
        )
    frame = records_to_frame(
        online,
        {
            "sample_id": rows["sample_id"].to_list(),
            "task": ["dna"] * rows.height,
            "variant": [None] * rows.height,
            "model": ["smollm2-served"] * rows.height,
            "style": ["direct"] * rows.height,
            "prompt": prompts,
        },
    )
    units = score_generations(frame, rows, "dna")
    assert units.height > 0


def test_chat_through_the_server_gives_texts_that_add_up(server, smollm2_dir, rows):
    served = load_backend(server, _served_spec(server, smollm2_dir, "chat"), settings=LoadSettings())
    prompts = served.render([get_task("dna").prompt(text, n_shots=1) for text in rows["input"]])
    records = served.generate(prompts, [BUDGET] * len(prompts), progress=False)
    for record in records:
        assert record.finish_reason in ("eos", "length") and record.num_generated_tokens > 0
        assert "".join(record.token_texts) == record.text
        assert (record.token_ids >= 0).all() and np.isfinite(record.topk_logprobs).all()


def test_an_intervention_shard_through_the_completions_endpoint_matches_the_offline_engine(
    server, smollm2_dir, smollm2_vllm, tmp_path
):
    """The interventions of two samples (clean and corrupted prefixes) through the server's completions
    endpoint with prompt log-probabilities: the same rows as the offline vLLM runner, continuations identical,
    teacher-forced log-probabilities within 1e-3; a rerun is served from the request cache."""
    from saltbench.interventions import InterventionOptions
    from saltbench.stages.interventions import run_interventions

    rows = get_task("dna").generate(2, seed=11, min_codons=4, max_codons=5)
    options = InterventionOptions(
        position_fractions=(0.5, 1.0),
        corruption_counts=(0, 1),
        placements=("local",),
        max_new_tokens=8,
        seed=3,
        next_atoms=2,
    )
    spec = _served_spec(server, smollm2_dir, "completions", prompt_logprobs=True)
    cache = tmp_path / "requests"
    served = load_backend(server, spec, settings=LoadSettings(cache_dir=cache))
    offline = VllmModel(spec, smollm2_vllm.tokenizer, smollm2_vllm, 16, 20)
    online = run_interventions(served, rows, options, model_name="smollm2", n_shots=1)
    local = run_interventions(offline, rows, options, model_name="smollm2", n_shots=1)
    assert online.height == local.height >= 4
    same = [
        "sample_id",
        "position",
        "placement",
        "corrupted_positions",
        "prefix",
        "continuation",
        "next_atom",
        "next_status",
        "next_correct",
        "finish_reason",
        "tf_n_tokens",
    ]
    assert online.select(same).equals(local.select(same))
    for column in ("tf_logprob_correct", "tf_logprob_with_gap", "next_confidence"):
        np.testing.assert_allclose(
            online[column].to_numpy(), local[column].to_numpy(), atol=1e-3, equal_nan=True
        )
    sent = served.usage.requests
    again = load_backend(server, spec, settings=LoadSettings(cache_dir=cache))
    rerun = run_interventions(again, rows, options, model_name="smollm2", n_shots=1)
    assert again.usage.requests == 0 and again.usage.cached == sent  # nothing sent twice
    assert rerun.equals(online)


def _fields(record) -> tuple:
    return (record.token_ids.tolist(), record.token_texts, record.finish_reason, record.num_prompt_tokens)


def test_faults_between_client_and_server_leave_the_records_unchanged(server, smollm2_dir, rows, caplog):
    """A fault-injecting proxy in front of the real server: 429 with Retry-After, 500, a connection reset, a
    truncated body and a response stalled past the timeout. Every prompt's record equals the fault-free
    run's (same proxy, one request in flight), one retry is counted per fault, nothing is lost or repeated."""
    import logging

    from helpers.fault_proxy import FaultProxy

    faults = ["429", "500", "reset", "truncated", "stall"]
    with FaultProxy(server, stall_s=12.0) as proxy:
        spec = _served_spec(proxy.base_url, smollm2_dir, "completions", concurrency=1, timeout_s=8.0)
        clean = load_backend(proxy.base_url, spec, settings=LoadSettings())
        prompts = clean.render([get_task("dna").prompt(text, n_shots=1) for text in rows["input"]])
        reference = clean.generate(prompts, [BUDGET] * len(prompts), progress=False)
        assert proxy.requests == len(prompts) and clean.usage.retries == 0
        proxy.faults = list(faults)
        faulty = load_backend(proxy.base_url, spec, settings=LoadSettings())
        with caplog.at_level(logging.INFO, logger="saltbench.inference.openai.client"):
            records = faulty.generate(prompts, [BUDGET] * len(prompts), progress=False)
        assert proxy.requests == 2 * len(prompts) + len(faults)  # each fault cost one more request
    assert faulty.usage.retries == len(faults) and faulty.usage.failed == 0
    assert f"{len(prompts)} requests ({len(faults)} retries)" in caplog.text
    assert len(records) == len(prompts)
    for a, b in zip(records, reference):
        assert _fields(a) == _fields(b) and a.text == b.text
        np.testing.assert_allclose(a.chosen_logprobs, b.chosen_logprobs, atol=1e-6)
        np.testing.assert_allclose(a.topk_logprobs, b.topk_logprobs, atol=1e-6)


KILLED_SHARD = """
import json, sys
from saltbench.inference import parse_model_registry
from saltbench.inference.backends import LoadSettings, load_backend
entry, cache, prompts, budget = json.loads(sys.argv[1])
spec = parse_model_registry({"models": {"smollm2-served": entry}})["smollm2-served"]
model = load_backend(entry["source"]["base_url"], spec, settings=LoadSettings(cache_dir=cache))
model.generate(prompts, [budget] * len(prompts), progress=False)
"""


def test_a_shard_killed_mid_way_sends_only_its_unfinished_requests_when_rerun(server, smollm2_dir, tmp_path):
    """A shard process is SIGKILLed while its third request hangs at the proxy (two completed and cached);
    the rerun sends exactly the requests that had not completed (counted at the proxy) and its records equal
    an uninterrupted run's."""
    from helpers.fault_proxy import FaultProxy

    rows = get_task("dna").generate(5, seed=9, max_codons=4)
    cache = tmp_path / "requests"
    with FaultProxy(server) as proxy:
        entry = _entry(proxy.base_url, smollm2_dir, "completions", concurrency=1)
        spec = _served_spec(proxy.base_url, smollm2_dir, "completions", concurrency=1)
        model = load_backend(proxy.base_url, spec, settings=LoadSettings(cache_dir=cache))
        prompts = model.render([get_task("dna").prompt(text, n_shots=1) for text in rows["input"]])
        proxy.faults = [None, None, "hang"]  # type: ignore[list-item]
        argument = json.dumps([entry, str(cache), prompts, BUDGET])
        shard = subprocess.Popen([sys.executable, "-c", KILLED_SHARD, argument])
        deadline = time.monotonic() + 300
        while proxy.requests < 3 and time.monotonic() < deadline and shard.poll() is None:
            time.sleep(0.2)
        assert proxy.requests == 3 and shard.poll() is None
        shard.send_signal(signal.SIGKILL)
        shard.wait()
        proxy.release()
        assert len(list(cache.rglob("*.json"))) == 2
        before = proxy.requests
        rerun = model.generate(prompts, [BUDGET] * len(prompts), progress=False)
        assert proxy.requests - before == len(prompts) - 2  # only the unfinished requests
        assert model.usage.cached == 2
    direct = load_backend(server, _served_spec(server, smollm2_dir, "completions"), settings=LoadSettings())
    fresh = direct.generate(prompts, [BUDGET] * len(prompts), progress=False)
    assert [_fields(r) for r in rerun] == [_fields(r) for r in fresh]
