"""Chat-template arguments per registry entry (``thinking``, ``chat_template_kwargs``; docs/reasoning.md §4),
honoured by every route: the in-process backends and the ``completions`` route render with them, the ``chat``
route sends them as ``chat_template_kwargs``. Three templates written for these tests have the structure of
the reasoning families' own: one that opens ``<think>`` itself (the DeepSeek-R1 distills, Qwen3-2507
thinking), one that takes ``enable_thinking`` (Qwen3), one with a reasoning-effort argument (gpt-oss)."""

from __future__ import annotations

import copy
import json

import pytest

from saltbench.inference import parse_model_registry, render_prompts
from saltbench.inference.openai.client import EXTRA_BODY, OpenAIModel

OPENS_THINK = (  # the generation prompt ends inside an opened <think>: the output starts in the reasoning
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|><think>\n{% endif %}"
)
ENABLE_THINKING = (  # thinking off: an empty, closed thinking block in the prompt (Qwen3's layout)
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}"
    "{% endif %}"
)
REASONING_EFFORT = (  # the effort goes into the system turn (gpt-oss's harmony layout)
    "<|start|>system<|message|>Reasoning: {{ reasoning_effort | default('medium') }}<|end|>"
    "{% for m in messages %}<|start|>{{ m['role'] }}<|message|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|start|>assistant{% endif %}"
)


def _spec(**entry: object):
    base = {"source": {"kind": "local", "path": "x"}, "chat_template": "auto", "system_prompt": ""}
    return parse_model_registry({"models": {"m": {**base, **entry}}})["m"]


@pytest.fixture()
def tok(byte_bpe_tokenizer):
    return copy.deepcopy(byte_bpe_tokenizer)


def _render(tok, template: str, spec) -> str:
    tok.chat_template = template
    (prompt,) = render_prompts(
        tok,
        ["Q"],
        system_prompt=spec.system_prompt,
        chat_template=spec.chat_template,
        template_kwargs=spec.template_kwargs,
    )
    return prompt


def test_a_template_that_opens_think_itself(tok) -> None:
    assert _render(tok, OPENS_THINK, _spec()) == "<|user|>Q<|assistant|><think>\n"


def test_thinking_maps_to_enable_thinking(tok) -> None:
    off = _render(tok, ENABLE_THINKING, _spec(thinking=False))
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert _render(tok, ENABLE_THINKING, _spec(thinking=True, reasoning_format="think")).endswith(
        "<|im_start|>assistant\n"
    )
    assert _render(tok, ENABLE_THINKING, _spec(chat_template_kwargs={"enable_thinking": False})) == off


def test_any_template_argument_reaches_the_template(tok) -> None:
    assert "Reasoning: high" in _render(
        tok, REASONING_EFFORT, _spec(chat_template_kwargs={"reasoning_effort": "high"})
    )
    assert "Reasoning: medium" in _render(tok, REASONING_EFFORT, _spec())


def test_the_chat_route_sends_the_template_arguments_to_the_server() -> None:
    entry = {
        "source": {"kind": "api", "base_url": "http://127.0.0.1:9/v1", "model": "served"},
        "backend": "openai",
        "thinking": True,
        "reasoning_format": "think",
        "chat_template_kwargs": {"reasoning_effort": "low"},
        "backend_options": {"api_key_env": "UNUSED_KEY", "endpoint": "chat"},
    }
    spec = parse_model_registry({"models": {"served": entry}})["served"]
    model = OpenAIModel(spec, None, None, 1, 20)
    body = model.request(json.dumps([{"role": "user", "content": "Q"}]), 16)
    assert body["chat_template_kwargs"] == {"enable_thinking": True, "reasoning_effort": "low"}
    assert "chat_template_kwargs" in EXTRA_BODY  # sent as a server extension, beside the OpenAI keys


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"chat_template_kwargs": ["reasoning_effort"]},
            r"chat_template_kwargs: \['reasoning_effort'\] is not of type 'object'",
        ),
        (
            {"thinking": True, "chat_template_kwargs": {"enable_thinking": False}},
            r"enable_thinking is given twice",
        ),
        ({"reasoning_format": "xml"}, r"reasoning_format: 'xml' is not one of \['think', 'harmony', None\]"),
        ({"max_new_tokens": 0}, r"max_new_tokens: 0 is less than the minimum of 1"),
    ],
)
def test_bad_reasoning_keys_are_named(entry, message) -> None:
    with pytest.raises(ValueError, match=message):
        _spec(**entry)


def test_a_registry_budget_replaces_the_configs() -> None:
    assert _spec(max_new_tokens=16384).generation_budget(2048) == 16384
    assert _spec(max_new_tokens_scale=2.0).generation_budget(2048) == 4096


SERVED = {"kind": "api", "base_url": "http://127.0.0.1:9/v1", "model": "served"}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"reasoning_format": "think", "thinking": False},
            r"models\.m\.thinking: thinking turned off: the output has no </think>",
        ),
        (
            {"reasoning_format": "think", "chat_template_kwargs": {"enable_thinking": False}},
            r"models\.m\.chat_template_kwargs\.enable_thinking: thinking turned off",
        ),
        ({"thinking": True}, r"models\.m\.reasoning_format: thinking turned on"),
        (
            {
                "source": SERVED,
                "backend": "openai",
                "reasoning_format": "harmony",
                "backend_options": {"endpoint": "completions", "tokenizer": "x"},
            },
            r"models\.m\.backend_options\.token_ids: gpt-oss's harmony channels are special tokens",
        ),
    ],
)
def test_reasoning_settings_that_cannot_work_are_refused(entry, message) -> None:
    """Qwen3 non-thinking output has no tags, so ``think`` would find no answer; thinking without a format
    would be scored as the answer; harmony's markers are lost in a server's completions text."""
    with pytest.raises(ValueError, match=message):
        parse_model_registry({"models": {"m": {"source": {"kind": "hub", "id": "o/n"}, **entry}}})


@pytest.mark.parametrize(
    "api",
    [
        {"endpoint": "chat"},  # the server returns the reasoning apart (docs/reasoning.md §4)
        {"endpoint": "completions", "token_ids": True, "tokenizer": "x"},
    ],
)
def test_a_served_reasoning_model_takes_both_routes(api) -> None:
    entry = {"source": SERVED, "backend": "openai", "reasoning_format": "think", "backend_options": api}
    assert parse_model_registry({"models": {"served": entry}})["served"].reasoning_format == "think"


def test_every_reasoning_model_of_the_paper_config_declares_its_format_and_a_budget_that_fits(
    repo_root,
) -> None:
    import yaml

    from saltbench.inference import load_model_registry

    registry = load_model_registry(repo_root / "config" / "models.yaml")
    models = yaml.safe_load((repo_root / "config" / "paper.yaml").read_text())["models"]
    reasoning = [registry[name] for name in models if registry[name].reasoning]
    assert len(reasoning) == 17
    for spec in reasoning:
        expected = "harmony" if spec.name.startswith("gpt-oss") else "think"
        assert spec.reasoning_format == expected, spec.name
        assert spec.max_new_tokens is not None and spec.max_context is not None
        assert spec.generation_budget(2048) <= spec.max_context // 2, spec.name  # room for any SALT prompt
