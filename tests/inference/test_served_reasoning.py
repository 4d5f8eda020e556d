"""Served reasoning models through the ``openai`` backend, in every shape a reasoning server returns
(docs/reasoning.md §4): the record is the model's whole output in its reasoning format, the answer scores as
written, the reasoning is kept and counted, and what asking again cannot change is asked once."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.fake_reasoning_server import (
    ANSWERING,
    THOUGHT,
    ReasoningServer,
    harmony_tokenizer,
    registry_entry,
)

from saltbench.evaluation import evaluate, response_status
from saltbench.inference import parse_model_registry
from saltbench.inference.backends import LoadSettings, load_backend
from saltbench.inference.openai.client import RequestRefused
from saltbench.tasks import FENCE

ANSWERS = {f"Complement of AGA GCT, number {i}.": f"{FENCE}\nTCT CGA\n{FENCE}" for i in range(3)}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("harmony-tokenizer")
    harmony_tokenizer(str(path))
    return path


def _model(server, shape: str, tokenizer_dir=None, budget: int = 4096, max_context=None, **api):
    entry = registry_entry(
        shape, server.base_url, str(tokenizer_dir), max_new_tokens=budget, max_context=max_context
    )
    entry["backend_options"] |= api
    spec = parse_model_registry({"models": {shape: entry}})[shape]
    return load_backend(server.base_url, spec, settings=LoadSettings(top_k=20))


def _scored(model, record) -> tuple[str, float]:
    reasoning = model.spec.reasoning_format
    status = response_status(record.text, record.finish_reason, reasoning=reasoning, fence_rule="line")
    precision = evaluate(record.text, "TCT CGA", "dna", reasoning=reasoning, fence_rule="line").metrics
    return status, precision["precision"]


@pytest.mark.parametrize("shape", ANSWERING)
def test_every_reasoning_shape_scores_its_answer_and_keeps_its_reasoning(shape, tokenizer_dir):
    with ReasoningServer(ANSWERS, harmony_tokenizer(str(tokenizer_dir))) as server:
        model = _model(server, shape, tokenizer_dir)
        records = model.generate(model.render(list(ANSWERS)), [4096] * len(ANSWERS), progress=False)
        assert set(server.requests.values()) == {1}  # one request per prompt
    for record in records:
        assert _scored(model, record) == ("answered", 1.0)
        assert THOUGHT in record.text  # the reasoning is kept in the record
        assert "".join(record.token_texts) == record.text
        answer = record.text.rindex("TCT CGA")
        offsets = np.cumsum([0, *map(len, record.token_texts)])
        answer_tokens = (offsets[:-1] >= answer - len(FENCE) - 1).nonzero()[0]
        assert np.isfinite(record.chosen_logprobs[answer_tokens]).all()  # the answer keeps its logprobs


def test_reasoning_apart_without_its_logprobs_is_one_token_in_front(tokenizer_dir):
    """A hosted API's reasoning comes without log-probabilities: one token in front (NaN), the answer's
    tokens with theirs; the usage that counts the reasoning too is accepted."""
    with ReasoningServer(ANSWERS) as server:
        model = _model(server, "think-apart-hosted")
        (record,) = model.generate(model.render(list(ANSWERS)[:1]), [4096], progress=False)
    assert record.token_texts[0] == f"<think>{THOUGHT}</think>\n\n" and np.isnan(record.chosen_logprobs[0])
    assert np.isfinite(record.chosen_logprobs[1:]).all()


def test_a_trace_cut_inside_its_reasoning_is_truncated():
    with ReasoningServer(ANSWERS) as server:
        model = _model(server, "think-apart", budget=30)
        (record,) = model.generate(model.render(list(ANSWERS)[:1]), [30], progress=False)
    assert record.finish_reason == "length" and _scored(model, record) == ("truncated", 0.0)


def test_a_prompt_beyond_the_context_is_its_own_error_row_asked_once():
    too_long = list(ANSWERS)[0]
    with ReasoningServer(ANSWERS, too_long=frozenset({too_long})) as server:
        model = _model(server, "too-long")
        records = model.generate(model.render(list(ANSWERS)), [4096] * 3, progress=False)
        assert set(server.requests.values()) == {1}
    assert records[0].finish_reason == "error" and "maximum context length" in (records[0].error or "")
    assert [r.finish_reason for r in records[1:]] == ["eos", "eos"]


@pytest.mark.parametrize(("shape", "why"), [("refused", "HTTP 400"), ("no-logprobs", "no logprobs")])
def test_a_refusal_stops_the_model_after_one_request(shape, why):
    with ReasoningServer(ANSWERS) as server:
        model = _model(server, shape, concurrency=1)
        with pytest.raises(RequestRefused, match=why):
            model.generate(model.render(list(ANSWERS)), [4096] * 3, progress=False)
        assert sum(server.requests.values()) == 1


def test_reasoning_apart_from_a_model_without_a_format_is_refused():
    with ReasoningServer(ANSWERS) as server:
        entry = {
            "source": {"kind": "api", "base_url": server.base_url, "model": "think-apart"},
            "backend": "openai",
        }
        spec = parse_model_registry({"models": {"m": entry}})["m"]
        model = load_backend(server.base_url, spec, settings=LoadSettings(top_k=20))
        with pytest.raises(RequestRefused, match="declares no reasoning_format"):
            model.generate(model.render(list(ANSWERS)[:1]), [64], progress=False)


def test_a_refused_connection_fails_at_once_naming_the_url():
    """Nothing listens at the URL: no retry with back-off (the client's six would take ~22 s), the model
    stops naming the address, and the attempt is counted."""
    from saltbench.inference.server.serving import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    entry = {
        "source": {"kind": "api", "base_url": url, "model": "m"},
        "backend": "openai",
        "backend_options": {"max_retries": 6},
    }
    model = load_backend(
        url, parse_model_registry({"models": {"m": entry}})["m"], settings=LoadSettings(top_k=20)
    )
    with pytest.raises(RequestRefused, match=r"connection refused by http://127\.0\.0\.1:\d+/"):
        model.generate(model.render(["a", "b"]), [8, 8], progress=False)
    assert model.usage.requests >= 1 and model.usage.retries == 0
    probe = model.probe()
    assert not probe.ok and "connection refused by http://127.0.0.1" in probe.detail


def test_a_prompt_that_cannot_fit_is_an_error_row_without_a_request(tokenizer_dir):
    with ReasoningServer(ANSWERS, harmony_tokenizer(str(tokenizer_dir))) as server:
        model = _model(server, "harmony-ids", tokenizer_dir, budget=30, max_context=40)
        records = model.generate(model.render(list(ANSWERS)), [30] * 3, progress=False)
        assert not server.requests
    assert all(r.finish_reason == "error" and "max_context 40" in (r.error or "") for r in records)


def test_a_connection_refused_after_the_clients_retries_stops_the_model_too():
    """An openai version that retries the transport's refusal ends with an ``APIConnectionError`` caused by
    it: a refusal of the model all the same, naming the URL; the HTTP library is openai's own."""
    import openai

    from saltbench.inference.openai.client import refusal
    from saltbench.inference.openai.transport import http_library

    http = http_library()
    assert issubclass(openai.DefaultHttpxClient, http.Client)
    request = http.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as exc:
            raise openai.APIConnectionError(request=request) from exc
    except openai.APIConnectionError as error:
        assert refusal(error) == "connection refused by http://127.0.0.1:9/v1/chat/completions"
    assert refusal(openai.APIConnectionError(request=request)) is None  # a reset: retried, not a refusal
