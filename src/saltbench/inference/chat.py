"""Chat-template rendering and prompt tokenisation (docs/generation.md §1), and the tokenizer every backend
that renders prompts here loads (:func:`load_tokenizer`).

Rendering rule (compatible with the authors' ``render_hf_prompts``):

* ``chat_template="none"`` → the instructions are used verbatim;
* otherwise the template is the tokenizer's own (``"auto"``), the text of a jinja file (a path), or
  a literal jinja string (anything containing ``{{`` or ``{%``);
* a system message with ``system_prompt`` is added iff the template text contains ``system``
  (case-insensitive), followed by one user message with the instruction;
* rendered with ``add_generation_prompt=True`` and the registry entry's template arguments
  (``ModelSpec.template_kwargs``: ``enable_thinking`` from ``thinking``, then ``chat_template_kwargs`` such
  as ``reasoning_effort``); if rendering raises, it is retried with the user message only, and if that
  fails too the raw instruction is used (a warning is logged).

Unlike the authors' code, a tokenizer without a chat template under ``"auto"`` is an error unless
``allow_raw=True``: a silently untemplated instruct model produces very different output. Models
meant to be prompted raw say ``chat_template: none`` in the registry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant."
"""The system text used when a chat template mentions ``system`` (docs/generation.md §1.2); a registry
entry's default ``system_prompt``."""


class MissingChatTemplateError(ValueError):
    """The tokenizer has no chat template and raw prompting was not allowed."""


def resolve_chat_template(
    tokenizer: Any, chat_template: str = "auto", *, allow_raw: bool = False
) -> str | None:
    """The jinja template text to render with, or ``None`` for raw prompts (see module docstring)."""
    if chat_template == "none":
        return None
    if chat_template == "auto":
        template = getattr(tokenizer, "chat_template", None)
        if isinstance(template, dict):  # named templates: use the default one
            template = template.get("default")
        if isinstance(template, str) and template.strip():
            return template
        if allow_raw:
            logger.warning("tokenizer has no chat template; using raw instructions as prompts")
            return None
        name = getattr(tokenizer, "name_or_path", "?")
        raise MissingChatTemplateError(
            f"chat_template='auto' but the tokenizer of {name!r} has no chat template; "
            "set chat_template: none in the model registry to prompt it with raw text, "
            "or give a jinja template file"
        )
    if "{{" in chat_template or "{%" in chat_template:
        return chat_template
    path = Path(chat_template)
    if not path.is_file():
        raise FileNotFoundError(
            f"chat_template {chat_template!r} is neither 'auto', 'none' nor an existing file"
        )
    return path.read_text(encoding="utf-8")


def render_prompts(
    tokenizer: Any,
    instructions: Sequence[str],
    *,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    chat_template: str = "auto",
    template_kwargs: Mapping[str, Any] | None = None,
    allow_raw: bool = False,
) -> list[str]:
    """Render each instruction into a prompt string (rules in the module docstring); ``template_kwargs`` go to
    the template (``enable_thinking``, ``reasoning_effort``, ...)."""
    if isinstance(instructions, str):
        raise TypeError("instructions must be a sequence of strings, not a single string")
    template = resolve_chat_template(tokenizer, chat_template, allow_raw=allow_raw)
    if template is None:
        return list(instructions)
    with_system = "system" in template.lower()
    kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": True}
    if template is not getattr(tokenizer, "chat_template", None):
        kwargs["chat_template"] = template
    kwargs.update(template_kwargs or {})
    prompts = []
    failures: dict[str, str] = {}  # layout -> first error, logged once per call
    for instruction in instructions:
        user = [{"role": "user", "content": instruction}]
        chats = (
            [("system+user", [{"role": "system", "content": system_prompt}, *user])] if with_system else []
        )
        chats.append(("user", user))
        for layout, chat in chats:
            try:
                prompts.append(tokenizer.apply_chat_template(chat, **kwargs))
                break
            except Exception as exc:  # noqa: BLE001 - any template failure falls through
                # (docs/generation.md §1.3)
                failures.setdefault(layout, f"{type(exc).__name__}: {exc}")
        else:
            prompts.append(instruction)
    for layout, error in failures.items():
        logger.warning(
            "chat template failed with %s messages (%s); fell back to %s",
            layout,
            error,
            "user-only messages" if layout == "system+user" else "the raw instruction",
        )
    return prompts


HARMONY_FINAL = "<|channel|>final<|message|>"
"""Where a harmony (gpt-oss) answer's text starts, after the generation prompt's ``<|start|>assistant``."""


def render_for_spec(tokenizer: Any, instructions: Sequence[str], spec: Any) -> list[str]:
    """:func:`render_prompts` with a registry entry's system prompt, chat template and template arguments
    (``spec``: a :class:`~saltbench.inference.registry.ModelSpec`), as every backend renders them."""
    return render_prompts(
        tokenizer,
        instructions,
        system_prompt=spec.system_prompt,
        chat_template=spec.chat_template,
        template_kwargs=spec.template_kwargs,
    )


def answer_start(prompt: str, reasoning_format: str | None) -> str:
    """``prompt`` (rendered) followed by what puts the next token where the model's answer starts
    (docs/reasoning.md §5): for ``think``, a closed, empty reasoning block — ``</think>`` when the template
    opened ``<think>`` itself, else ``<think>`` and ``</think>``; for ``harmony``, the final channel's
    header; without a format, nothing. The interventions force their answer prefix after it.

    Examples:
        >>> answer_start("<|user|>Q<|assistant|><think>\\n", "think")
        '<|user|>Q<|assistant|><think>\\n\\n</think>\\n\\n'
        >>> answer_start("<|im_start|>assistant\\n", "think")
        '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n'
        >>> answer_start("<|start|>assistant", "harmony")
        '<|start|>assistant<|channel|>final<|message|>'
    """
    if reasoning_format == "think":
        return prompt + (
            "\n</think>\n\n" if prompt.rstrip().endswith("<think>") else "<think>\n\n</think>\n\n"
        )
    if reasoning_format == "harmony":
        return prompt + HARMONY_FINAL
    return prompt


def encode_prompt(tokenizer: Any, prompt: str) -> list[int]:
    """Token ids of a rendered prompt, without doubling the BOS token.

    Special tokens (e.g. a BOS) are added by the tokenizer unless the text already starts with
    the tokenizer's BOS string — chat templates of Llama, Gemma or Mistral write it themselves.
    """
    bos = getattr(tokenizer, "bos_token", None)
    add_special = not (isinstance(bos, str) and bos and prompt.startswith(bos))
    return list(tokenizer(prompt, add_special_tokens=add_special)["input_ids"])


def load_tokenizer(path: str | Path, *, revision: str | None = None) -> Any:
    """The model's tokenizer, padding on the left, with EOS as pad token when it has none."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, revision=revision)
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer
