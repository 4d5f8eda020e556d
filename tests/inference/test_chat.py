"""Chat rendering (docs/generation.md §1.1–1.4) and prompt encoding, on a real in-memory tokenizer."""

from __future__ import annotations

import copy

import pytest

from saltbench.inference import MissingChatTemplateError, encode_prompt, render_prompts

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
NO_SYSTEM_WORD = (  # renders roles but never spells the word s-y-s-t-e-m in the template text
    "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)
REJECTS_SYSTEM = (
    "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}<assistant>"
)
ALWAYS_FAILS = "{{ raise_exception('broken template') }} system"
THINKING = (
    "{% for m in messages %}{{ m['content'] }}{% endfor %}|think={{ enable_thinking | default('unset') }}"
)


@pytest.fixture()
def tok(byte_bpe_tokenizer):
    return copy.deepcopy(byte_bpe_tokenizer)


def test_system_message_when_template_mentions_system(tok):
    tok.chat_template = CHATML + "{# accepts a system message #}"
    (prompt,) = render_prompts(tok, ["Hi there"], system_prompt="Be brief.")
    assert prompt == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"
    )


def test_no_system_message_when_template_does_not_mention_it(tok):
    tok.chat_template = NO_SYSTEM_WORD
    assert render_prompts(tok, ["a", "b"]) == ["[user] a\n[assistant]", "[user] b\n[assistant]"]


def test_template_rejecting_system_retries_user_only(tok):
    tok.chat_template = REJECTS_SYSTEM
    assert render_prompts(tok, ["x"]) == ["<user>x<assistant>"]


def test_template_failing_twice_falls_back_to_raw(tok):
    tok.chat_template = ALWAYS_FAILS
    assert render_prompts(tok, ["raw instruction"]) == ["raw instruction"]


def test_missing_template_is_an_error_unless_allowed(tok):
    tok.chat_template = None
    with pytest.raises(MissingChatTemplateError, match="chat_template: none"):
        render_prompts(tok, ["x"])
    assert render_prompts(tok, ["x"], allow_raw=True) == ["x"]
    assert render_prompts(tok, ["x"], chat_template="none") == ["x"]
    tok.chat_template = "   "
    with pytest.raises(MissingChatTemplateError):
        render_prompts(tok, ["x"])


def test_template_from_file_and_literal(tok, tmp_path):
    tok.chat_template = None
    path = tmp_path / "t.jinja"
    path.write_text(NO_SYSTEM_WORD)
    assert render_prompts(tok, ["q"], chat_template=str(path)) == ["[user] q\n[assistant]"]
    assert render_prompts(tok, ["q"], chat_template=NO_SYSTEM_WORD) == ["[user] q\n[assistant]"]
    with pytest.raises(FileNotFoundError, match="nowhere.jinja"):
        render_prompts(tok, ["q"], chat_template=str(tmp_path / "nowhere.jinja"))


def test_thinking_flag_is_passed_only_when_set(tok):
    tok.chat_template = THINKING
    assert render_prompts(tok, ["q"]) == ["q|think=unset"]
    assert render_prompts(tok, ["q"], template_kwargs={"enable_thinking": False}) == ["q|think=False"]
    assert render_prompts(tok, ["q"], template_kwargs={"enable_thinking": True}) == ["q|think=True"]


def test_single_string_rejected(tok):
    with pytest.raises(TypeError):
        render_prompts(tok, "one string")


def test_encode_prompt_does_not_double_bos(tok):
    bos = tok.bos_token_id
    tok._tokenizer.post_processor = __import__("tokenizers").processors.TemplateProcessing(
        single=f"{tok.bos_token} $A", special_tokens=[(tok.bos_token, bos)]
    )
    assert tok("hi")["input_ids"][0] == bos  # this tokenizer adds a BOS by itself
    assert encode_prompt(tok, "hi")[0] == bos
    with_bos = encode_prompt(tok, f"{tok.bos_token}hi")
    assert with_bos[0] == bos and with_bos[1] != bos
    assert encode_prompt(tok, "hi") == with_bos
