"""The ``openai`` backend against a local fake OpenAI-compatible server: records, padding, faults, the
request cache and the API key's hygiene (docs/backends.md §8)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.fake_openai import ANSWER, N_ALTERNATIVES, FakeOpenAI

from saltbench.inference import parse_model_registry
from saltbench.inference.backends import LoadSettings, load_backend
from saltbench.inference.openai.client import RequestRefused
from saltbench.inference.openai.responses import (
    PAD_ID,
    MalformedResponse,
    byte_token_texts,
    parse_chat,
    prompt_target_logprobs,
)

KEY_ENV = "SALTBENCH_TEST_API_KEY"
SECRET = "sk-test-5a1t-never-written"


def _spec(base_url: str, **api: object):
    entry = {
        "source": {"kind": "api", "base_url": base_url, "model": "served"},
        "backend": "openai",
        "backend_options": {
            "api_key_env": KEY_ENV,
            "max_retries": 4,
            "timeout_s": 1.0,
            "concurrency": 2,
            **api,
        },
    }
    return parse_model_registry({"models": {"served": entry}})["served"]


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeOpenAI(stall_s=2.5) as fake:
        yield fake


def _load(server, tmp_path=None, **api):
    settings = LoadSettings(top_k=20, cache_dir=None if tmp_path is None else tmp_path / "requests")
    return load_backend(server.base_url, _spec(server.base_url, **api), settings=settings)


def test_a_chat_generation_becomes_a_record(server):
    model = _load(server)
    prompts = model.render(["say it"])
    (record,) = model.generate(prompts, [100], progress=False)
    assert record.finish_reason == "eos" and record.text == ANSWER
    assert "".join(record.token_texts) == record.text
    assert record.token_texts[11:13] == ("", "é")  # the split character belongs to the completing token
    assert record.topk_ids.shape == (record.num_generated_tokens, 20)
    assert (record.topk_ids[:, N_ALTERNATIVES:] == PAD_ID).all()
    assert np.isnan(record.topk_logprobs[:, N_ALTERNATIVES:]).all()
    assert (record.topk_ids[:, 0] == record.token_ids).all()  # string ids: the chosen token is recognised
    assert (record.token_ids < 0).all() and np.isnan(record.entropy).all()
    assert record.chosen_logprobs[2] == pytest.approx(-0.3)
    assert record.num_prompt_tokens == 7
    assert server.auth == [f"Bearer {SECRET}"]


def test_budget_cut_is_length_and_the_budget_is_sent(server):
    model = _load(server)
    (record,) = model.generate(model.render(["x"]), [5], progress=False)
    assert record.finish_reason == "length" and record.num_generated_tokens == 5


def test_completions_endpoint_slices_the_text_at_the_offsets(server, monkeypatch):
    import saltbench.inference.chat as chat

    monkeypatch.setattr(chat, "load_tokenizer", lambda name: None)
    model = _load(server, endpoint="completions", tokenizer="unused")
    model.render = lambda instructions: list(instructions)  # type: ignore[method-assign]
    (record,) = model.generate(["raw prompt"], [100], progress=False)
    assert record.text == ANSWER and record.token_texts[0] == "*"
    assert (record.topk_ids[:, 0] == record.token_ids).all()


@pytest.mark.parametrize("fault", ["429", "500", "reset", "truncated", "stall"])
def test_faults_are_retried_and_give_the_same_record(server, fault):
    model = _load(server)
    prompts = model.render(["a", "b"])
    clean = model.generate(prompts, [100, 100], progress=False)
    server.faults = [fault]
    retried = model.generate(prompts, [100, 100], progress=False)
    for a, b in zip(clean, retried):
        assert a.text == b.text and a.token_texts == b.token_texts
        np.testing.assert_array_equal(a.chosen_logprobs, b.chosen_logprobs)
    assert model.usage.retries == 1 and model.usage.failed == 0


def test_a_response_without_logprobs_stops_the_model_at_once(server):
    """A server that answers without log-probabilities would answer every retry the same, at the same
    price: the first such answer fails the model's job, naming it and the reason, and nothing more is sent."""
    model = _load(server, max_retries=3, concurrency=1)  # one in flight: an exact count under any load
    server.faults = ["nologprobs"] * 3  # a server without log-probabilities answers every request so
    with pytest.raises(RequestRefused, match=r"model 'served': the server refused a request.*no logprobs"):
        model.generate(model.render(["a", "b", "c"]), [100] * 3, progress=False)
    assert server.requests == 1


def test_a_client_error_is_not_retried_and_stops_the_model(server):
    """One request in flight at a time, so the count is exact on a loaded machine: the refused request is not
    asked again and no other prompt is sent after it (with two in flight, the second could finish and let a
    third start before the refusal is handled)."""
    model = _load(server, max_retries=3, concurrency=1)
    server.faults = ["400"]
    with pytest.raises(RequestRefused, match=r"HTTP 400"):
        model.generate(model.render(["a", "b", "c"]), [100] * 3, progress=False)
    assert server.requests == 1


def test_a_rerun_sends_only_the_unfinished_requests(server, tmp_path):
    first = _load(server, tmp_path)
    prompts = first.render([f"q{i}" for i in range(6)])
    first.generate(prompts[:4], [100] * 4, progress=False)  # the job was killed after four
    assert server.requests == 4
    again = _load(server, tmp_path)
    records = again.generate(prompts, [100] * 6, progress=False)
    assert server.requests == 6 and again.usage.cached == 4 and len(records) == 6
    assert all(r.text == ANSWER for r in records)


def test_the_key_is_in_no_file_and_no_error(server, tmp_path, caplog):
    model = _load(server, tmp_path)
    server.faults = ["500"] * 6  # more than the retries: the client gives up
    with caplog.at_level("DEBUG"):
        (record,) = model.generate(model.render(["a"]), [100], progress=False)
    assert record.finish_reason == "error" and SECRET not in (record.error or "")
    assert SECRET not in caplog.text
    model.generate(model.render(["b"]), [100], progress=False)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_missing_key_variable_is_named(monkeypatch):
    from saltbench.inference.openai.cache import ApiKeyMissing

    monkeypatch.delenv(KEY_ENV, raising=False)
    spec = _spec("http://127.0.0.1:9/v1")
    with pytest.raises(ApiKeyMissing, match=KEY_ENV):
        load_backend("unused", spec)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"source": {"kind": "api", "base_url": "http://h/v1", "model": "m"}}, "needs backend: openai"),
        ({"source": {"kind": "local", "path": "x"}, "backend": "openai"}, "needs backend: openai"),
        ({"source": {"kind": "api", "base_url": "h/v1", "model": "m"}, "backend": "openai"}, "http"),
        (
            {
                "source": {"kind": "api", "base_url": "http://h/v1", "model": "m"},
                "backend": "openai",
                "backend_options": {"api_key_env": "sk-abc def"},
            },
            r"models\.m\.backend_options\.api_key_env: expected the name of an environment variable that "
            r"holds the API key, not the key itself$",
        ),
        (
            {
                "source": {"kind": "api", "base_url": "http://h/v1", "model": "m"},
                "backend": "openai",
                "backend_options": {"endpoint": "completions"},
            },
            "backend_options.tokenizer",
        ),
        (
            {
                "source": {"kind": "api", "base_url": "http://h/v1", "model": "m"},
                "backend": "openai",
                "backend_options": {"secret": 1},
            },
            r"models\.m\.backend_options: unknown key\(s\) 'secret'; allowed: api_key_env, ",
        ),
        (
            {
                "source": {"kind": "api", "base_url": "http://h/v1", "model": "m"},
                "backend": "openai",
                "backend_options": {"token_ids": True},
            },
            "decoded from the ids",
        ),
    ],
)
def test_registry_refuses_bad_api_entries(entry, message):
    with pytest.raises(ValueError, match=message):
        parse_model_registry({"models": {"m": entry}})


def test_byte_texts_keep_a_cut_character_on_the_last_token():
    assert byte_token_texts([[0xC3]], ["x"]) == ["\ufffd"]
    assert byte_token_texts([[0x61], None], ["a", "b"]) == ["a", "b"]


def test_parse_chat_refuses_texts_that_do_not_add_up():
    from saltbench.inference.openai.responses import MalformedResponse

    content = [{"token": "a", "logprob": -1.0, "bytes": [97], "top_logprobs": []}]
    response = {
        "choices": [{"message": {"content": "ab"}, "finish_reason": "stop", "logprobs": {"content": content}}]
    }
    with pytest.raises(MalformedResponse, match="join to"):
        parse_chat(response, token_ids=False)


def test_prompt_log_probabilities_of_a_target_are_read_by_token_id() -> None:
    """vLLM's ``prompt_logprobs``: one entry per prompt token (the first ``None``), keyed by token id."""
    entries = [
        None,
        {"7": {"logprob": -1.5, "rank": 2}},
        {"9": {"logprob": -0.25, "rank": 1}, "4": {"logprob": -2.0}},
    ]
    response = {"choices": [{"text": "", "prompt_logprobs": entries}]}
    assert prompt_target_logprobs(response, 1, [7, 9]).tolist() == [-1.5, -0.25]
    with pytest.raises(MalformedResponse, match="no prompt log-probability of token 8 at position 2"):
        prompt_target_logprobs(response, 1, [7, 8])
    with pytest.raises(MalformedResponse, match="no prompt log-probabilities for positions 2..3"):
        prompt_target_logprobs(response, 2, [9, 9])
    with pytest.raises(MalformedResponse, match="no prompt log-probabilities"):
        prompt_target_logprobs({"choices": [{"text": ""}]}, 0, [1])


def test_a_model_without_prompt_logprobs_cannot_teacher_force() -> None:
    from saltbench.inference.openai.client import OpenAIModel

    model = OpenAIModel(_spec("http://127.0.0.1:9/v1"), None, None, 1, 20)
    with pytest.raises(
        NotImplementedError, match=r"need a completions endpoint with prompt log-probabilities"
    ):
        model.force_and_continue([1, 2], [([3], [4])], max_new_tokens=2)


def test_draws_are_the_choices_of_one_request_with_n_and_seed(server, tmp_path):
    """One request per prompt with ``n``, ``seed``, ``temperature`` and ``top_p``; its choices in ``index``
    order are the draws; a rerun takes them from the request cache; a response with another number of
    choices is the prompt's ``n`` error rows."""
    from saltbench.inference.base import DrawSettings

    model = _load(server, tmp_path)
    prompts = model.render(["say it", "again"])
    settings = DrawSettings(3, temperature=0.7, top_p=0.9)
    drawn = model.sample(prompts, [12, 12], [2**40 + 1, 5], settings, progress=False)
    assert server.requests == 2
    body = server.bodies[0]
    assert (body["n"], body["temperature"], body["top_p"]) == (3, 0.7, 0.9)
    assert {b["seed"] for b in server.bodies} == {(2**40 + 1) % 2**31, 5}
    assert [r.num_generated_tokens for r in drawn[0]] == [11, 10, 9]  # seed 2**40 + 1 shifts the cut by 1
    assert [r.num_generated_tokens for r in drawn[1]] == [10, 9, 8]
    assert all(r.text == ANSWER[: r.num_generated_tokens] for r in drawn[0])
    again = model.sample(prompts, [12, 12], [2**40 + 1, 5], settings, progress=False)
    assert server.requests == 2 and [r.text for r in again[1]] == [r.text for r in drawn[1]]
    server.faults = ["ignore_n"]
    (rows,) = _load(server).sample(prompts[:1], [12], [0], DrawSettings(2), progress=False)
    assert [r.finish_reason for r in rows] == ["error", "error"]
    assert "1 choices for n = 2" in (rows[0].error or "")
