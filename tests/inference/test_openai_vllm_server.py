"""The ``openai`` backend against a real OpenAI-compatible server: vLLM's (the venv's CPU build) serving
SmolLM2 on 127.0.0.1, compared with the offline ``vllm`` backend on the same prompts (docs/backends.md §8)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from saltbench.inference import get_model_spec, load_model_registry, parse_model_registry, records_to_frame
from saltbench.inference.backends import LoadSettings, VllmModel, load_backend
from saltbench.stages.scoring import score_generations
from saltbench.tasks import get_task

pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.vllm]

REPO = Path(__file__).resolve().parents[2]
BUDGET = 24


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(smollm2_dir: Path, tmp_path_factory):
    """``vllm.entrypoints.openai.api_server`` (the ``vllm serve`` of the CPU build) on a free port."""
    pytest.importorskip("vllm", reason="vLLM is not installed")
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "vllm-serve.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "2", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(smollm2_dir),
           "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--enforce-eager",
           "--max-model-len", "2048", "--served-model-name", "smollm2", "--max-logprobs", "20"]  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"vLLM server did not come up:\n{log.read_text()[-3000:]}")
            time.sleep(2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _served_spec(base_url: str, smollm2_dir: Path, endpoint: str, **api):
    local = get_model_spec(load_model_registry(REPO / "config" / "models.yaml"), "smollm2-135m")
    entry = {
        "source": {"kind": "api", "base_url": base_url, "model": "smollm2"},
        "backend": "openai",
        "system_prompt": local.system_prompt,
        "chat_template": local.chat_template,
        "api": {
            "endpoint": endpoint,
            "token_ids": True,
            "tokenizer": str(smollm2_dir),
            "concurrency": 4,
            **api,
        },
    }
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
    frame = records_to_frame(online, {
        "sample_id": rows["sample_id"].to_list(), "task": ["dna"] * rows.height,
        "variant": [None] * rows.height, "model": ["smollm2-served"] * rows.height,
        "style": ["direct"] * rows.height, "prompt": prompts,
    })  # fmt: skip
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
    options = InterventionOptions(position_fractions=(0.5, 1.0), corruption_counts=(0, 1),
                                  placements=("local",), max_new_tokens=8, seed=3, next_atoms=2)  # fmt: skip
    spec = _served_spec(server, smollm2_dir, "completions", prompt_logprobs=True)
    cache = tmp_path / "requests"
    served = load_backend(server, spec, settings=LoadSettings(cache_dir=cache))
    offline = VllmModel(spec, smollm2_vllm.tokenizer, smollm2_vllm, 16, 20)
    online = run_interventions(served, rows, options, model_name="smollm2", n_shots=1)
    local = run_interventions(offline, rows, options, model_name="smollm2", n_shots=1)
    assert online.height == local.height >= 4
    same = ["sample_id", "position", "placement", "corrupted_positions", "prefix", "continuation",
            "next_atom", "next_status", "next_correct", "finish_reason", "tf_n_tokens"]  # fmt: skip
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
