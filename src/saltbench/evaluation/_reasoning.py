"""Where a reasoning model's answer is: the final content after its reasoning (docs/reasoning.md §1).

A response is the decoded text a backend records. With a reasoning format, the fenced answer is looked for
only in the *final content*, and the text before it — the reasoning — is never scored:

* ``think`` (Qwen3 in thinking mode, the DeepSeek-R1 distills, Phi-4-reasoning, ...): the reasoning is
  closed by the first ``</think>`` after the first ``<think>`` (or from the start, when the chat template
  opened ``<think>`` itself and the output begins inside it); the final content runs from there to the end.
  No ``</think>``: the reasoning never ended, and there is no final content. These are the rules of vLLM's
  ``<think>`` reasoning parsers (``extract_reasoning``), applied to the text.
* ``harmony`` (gpt-oss): the final content is the message of the last ``final`` channel,
  ``<|channel|>final[ <|constrain|>…]<|message|>`` up to ``<|return|>``, ``<|end|>`` or ``<|call|>`` (or the
  end of the text); every other channel (``analysis``, ``commentary``) is reasoning. No ``final`` channel:
  no final content. The markers are special tokens, kept in the decoded text of a harmony model. Text
  decoded *without* them — what most harness logs hold — reads ``analysis…assistantfinal…``: a text without
  any ``<|channel|>`` marker that starts with a channel name is read in that form, the final content
  running from the last ``assistantfinal`` (or from the leading ``final``, when the text is only the final
  channel) to the end.

Why not vLLM's parsers themselves: they need vLLM (an optional, 3 GB dependency), a tokenizer object and a
request; the rules above are theirs, on text, and the tests check them against vLLM's ``<think>`` parsers
on the corpus of reasoning shapes where vLLM is installed.
"""

from __future__ import annotations

import re

from saltbench.core.vocabulary import REASONING_FORMATS, ReasoningFormat

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_HARMONY_FINAL = re.compile(r"<\|channel\|>final(?:[^<]*<\|constrain\|>[^<]*)?[^<]*<\|message\|>")
_HARMONY_ENDS = ("<|return|>", "<|end|>", "<|call|>")
_HARMONY_CHANNELS = ("analysis", "commentary", "final")
_STRIPPED_FINAL = "assistantfinal"
"""``<|start|>assistant<|channel|>final<|message|>`` with its special tokens decoded to nothing."""


def check_reasoning_format(reasoning: object) -> ReasoningFormat | None:
    """``reasoning`` if it is ``None`` or one of :data:`~saltbench.core.vocabulary.REASONING_FORMATS`."""
    if reasoning is not None and reasoning not in REASONING_FORMATS:
        raise ValueError(
            f"reasoning must be None or one of {', '.join(REASONING_FORMATS)}, got {reasoning!r}"
        )
    return reasoning


def final_content(text: str, reasoning: ReasoningFormat | None) -> tuple[int, int] | None:
    """``(start, end)`` of the final content of ``text`` (module docstring); ``None`` when the reasoning
    never ends. Without a format the whole text is the final content.

    Examples:
        >>> final_content("<think>quote '********'</think>\\n********\\nTCT\\n********", "think")
        (31, 53)
        >>> final_content("A pairs with T", "think") is None
        True
        >>> text = "<|channel|>analysis<|message|>ok<|end|><|start|>assistant"
        >>> text += "<|channel|>final<|message|>TCT<|return|>"
        >>> start, end = final_content(text, "harmony"); text[start:end]
        'TCT'
        >>> text = "analysisWe need TCT.assistantfinalTCT"  # decoded without special tokens
        >>> start, end = final_content(text, "harmony"); text[start:end]
        'TCT'
    """
    if reasoning is None:
        return 0, len(text)
    if reasoning == "think":
        opened = text.find(THINK_OPEN)
        closed = text.find(THINK_CLOSE, opened + len(THINK_OPEN) if opened >= 0 else 0)
        return None if closed < 0 else (closed + len(THINK_CLOSE), len(text))
    if reasoning == "harmony":
        return _harmony_final(text)
    check_reasoning_format(reasoning)
    raise AssertionError("unreachable")


def _harmony_final(text: str) -> tuple[int, int] | None:
    """The final content of a harmony text, with its special tokens or without them (module docstring)."""
    if "<|channel|>" not in text:
        return _stripped_harmony_final(text)
    last = None
    for last in _HARMONY_FINAL.finditer(text):  # noqa: B007 - the last match is wanted
        pass
    if last is None:
        return None
    start = last.end()
    ends = [i for i in (text.find(marker, start) for marker in _HARMONY_ENDS) if i >= 0]
    return start, min(ends, default=len(text))


def _stripped_harmony_final(text: str) -> tuple[int, int] | None:
    """The final content of a harmony text decoded without its special tokens (``analysis…assistantfinal…``);
    ``None`` when the text does not start with a channel name or has no final channel."""
    lead = len(text) - len(text.lstrip())
    channel = next((c for c in _HARMONY_CHANNELS if text.startswith(c, lead)), None)
    if channel is None:
        return None
    final = text.rfind(_STRIPPED_FINAL)
    if final >= 0:
        return final + len(_STRIPPED_FINAL), len(text)
    return (lead + len(channel), len(text)) if channel == "final" else None


__all__ = ["THINK_CLOSE", "THINK_OPEN", "check_reasoning_format", "final_content"]
