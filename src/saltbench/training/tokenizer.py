"""Character-level tokenizer with a chat template that keeps only the prompt's test block.

The tokenizer maps every character to one token (a ``tokenizers`` WordLevel model over single
characters, a pre-tokenizer that isolates each character and a ``Fuse`` decoder that concatenates
them back), so ``decode(encode(s)) == s`` for every string over the vocabulary. Special tokens come
first, in this order (ids 0..5): ``<pad>``, ``<s>`` (BOS), ``</s>`` (EOS), ``<unk>``, ``<sep>``, ``<cot>``.
No post-processor is installed: ``add_special_tokens=True`` adds nothing, the chat template writes
``<s>`` itself, so tokenising a rendered prompt gives the same ids with or without special tokens.

Chat template (what inference sees and what training is rendered through)::

    <s>[<cot>]{test block of the last user message}<sep>   (``<sep>`` only with add_generation_prompt)
    [{worked solution}\\n]********\\n{answer}\\n********</s>   (what the model is trained to write)

``<cot>`` stands for the prompt's style line: it is written when the user message holds the ``cot`` style
instruction (:data:`saltbench.tasks.base.STYLE_INSTRUCTIONS`), so the two prompt styles reach the model as
two different inputs; a family trained on both styles learns to answer each its own way
(docs/tiny-models.md §2).

The *test block* is the part of the user message after the last occurrence of
``"Now, solve for the test Input.\\n"`` (Code prompts) or, when that marker is absent, after the last
``"Please answer the following as demonstrated before:\\n"`` (every other task); a message with
neither marker is used whole. The template never mentions a system role, so SALT-style renderers do
not add a system prompt (docs/generation.md §1.2).
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from saltbench.tasks.base import STYLE_INSTRUCTIONS

PAD_TOKEN = "<pad>"
BOS_TOKEN = "<s>"
EOS_TOKEN = "</s>"
UNK_TOKEN = "<unk>"
SEP_TOKEN = "<sep>"
COT_TOKEN = "<cot>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, UNK_TOKEN, SEP_TOKEN, COT_TOKEN)
"""Special tokens, in id order (``<pad>`` = 0 ... ``<cot>`` = 5)."""
COT_INSTRUCTION = STYLE_INSTRUCTIONS["cot"]
"""The style line whose presence in a prompt the template marks with :data:`COT_TOKEN`."""

CODE_TEST_MARKER = "Now, solve for the test Input.\n"
"""Line that introduces the test block of Code prompts (docs/tasks.md §3.4)."""
TEST_MARKER = "Please answer the following as demonstrated before:\n"
"""Line that introduces the test block of every non-Code prompt."""

BASE_ALPHABET: str = "".join(c for c in string.printable if c not in "\r\x0b\x0c")
"""Printable ASCII (letters, digits, punctuation, space, tab, newline): always in the vocabulary."""

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}"
    "{%- set text = message['content'] -%}"
    f"{{%- if {CODE_TEST_MARKER!r} in text -%}}"
    f"{{%- set text = text.split({CODE_TEST_MARKER!r}) | last -%}}"
    "{%- else -%}"
    f"{{%- set text = text.split({TEST_MARKER!r}) | last -%}}"
    "{%- endif -%}"
    f"{{%- set style = {COT_TOKEN!r} if {COT_INSTRUCTION!r} in message['content'] else '' -%}}"
    "{{- bos_token + style + text -}}"
    "{%- elif message['role'] == 'assistant' -%}"
    f"{{{{- {SEP_TOKEN!r} + message['content'] + eos_token -}}}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    f"{{%- if add_generation_prompt -%}}{{{{- {SEP_TOKEN!r} -}}}}{{%- endif -%}}"
)
"""Jinja chat template: ``<s>`` (``<cot>``) + test block of each user turn; ``<sep>`` opens the answer."""


def extract_test_block(prompt: str) -> str:
    """Python twin of the template's cut: the text after the last test marker (whole text if none)."""
    marker = CODE_TEST_MARKER if CODE_TEST_MARKER in prompt else TEST_MARKER
    return prompt.split(marker)[-1]


def model_input(prompt: str) -> str:
    """Python twin of the whole user turn: ``<cot>`` for a ``cot`` prompt, then :func:`extract_test_block`."""
    return (COT_TOKEN if COT_INSTRUCTION in prompt else "") + extract_test_block(prompt)


def build_char_tokenizer(corpus: Iterable[str], extra_chars: str = BASE_ALPHABET) -> PreTrainedTokenizerFast:
    """A character tokenizer whose vocabulary is ``extra_chars`` plus every character of ``corpus``.

    Ids: the :data:`SPECIAL_TOKENS` first, then the characters in code-point order, so the same
    character set always gives the same ids. Characters outside the vocabulary encode to ``<unk>``.
    """
    chars: set[str] = set(extra_chars)
    for text in corpus:
        chars.update(text)
    chars.discard("")
    vocab = {tok: i for i, tok in enumerate([*SPECIAL_TOKENS, *sorted(chars)])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK_TOKEN))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    backend.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        unk_token=UNK_TOKEN,
        additional_special_tokens=[SEP_TOKEN, COT_TOKEN],
        clean_up_tokenization_spaces=False,
        padding_side="left",
        model_max_length=1_000_000,
        model_input_names=["input_ids", "attention_mask"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def render_prompt(tokenizer: PreTrainedTokenizerFast, prompt: str) -> str:
    """The model input for ``prompt`` exactly as inference renders it (one user turn + generation prompt)."""
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
    )
    assert isinstance(rendered, str)
    return rendered


def render_prompts(tokenizer: PreTrainedTokenizerFast, prompts: Iterable[str]) -> list[str]:
    """:func:`render_prompt` for many prompts (one batched ``apply_chat_template`` call)."""
    chats = [[{"role": "user", "content": p}] for p in prompts]
    if not chats:
        return []
    rendered = tokenizer.apply_chat_template(chats, add_generation_prompt=True, tokenize=False)
    return list(rendered)


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerFast:
    """Load a saved tokenizer directory through ``AutoTokenizer`` (the generic inference path)."""
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if not isinstance(tokenizer, PreTrainedTokenizerFast):
        raise TypeError(f"expected a PreTrainedTokenizerFast in {path}, got {type(tokenizer).__name__}")
    return tokenizer


__all__ = [
    "BASE_ALPHABET",
    "BOS_TOKEN",
    "CHAT_TEMPLATE",
    "CODE_TEST_MARKER",
    "COT_INSTRUCTION",
    "COT_TOKEN",
    "EOS_TOKEN",
    "PAD_TOKEN",
    "SEP_TOKEN",
    "SPECIAL_TOKENS",
    "TEST_MARKER",
    "UNK_TOKEN",
    "build_char_tokenizer",
    "load_tokenizer",
    "model_input",
    "render_prompt",
    "render_prompts",
    "extract_test_block",
]
