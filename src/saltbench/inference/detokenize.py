"""Incremental detokenisation: the text of each generated token.

The texts of the tokens concatenate to the generation.

Rule (the one vLLM and TGI use for streaming, written afresh): keep a short window of already
emitted tokens as context; after appending token ``i``, decode the window with and without the
not-yet-emitted tokens; if the longer decode grew and does not end in an incomplete character
(U+FFFD, the replacement character the decoder puts for a partial UTF-8 sequence), the new
characters become token ``i``'s text, otherwise token ``i`` gets ``""`` and its bytes are carried to the
token that completes the character. Special tokens decode to ``""`` (``skip_special_tokens``) — except for
a tokenizer marked with :func:`keep_special_tokens` (a model whose reasoning format, gpt-oss's harmony,
lives in special tokens: docs/reasoning.md §1) — and no ``clean_up_tokenization_spaces`` is applied.
Characters still pending after the last token (a generation cut inside a character) go to the last token.

Decoding starts from the last few prompt tokens (``context_ids``), so SentencePiece tokenizers keep
the leading space of the first generated word, as in vLLM. For byte-level BPE tokenizers the
result equals ``tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)``.

Where a server or an imported file gives each token's UTF-8 bytes instead of ids, :func:`byte_token_texts`
applies the same rule to the bytes.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

REPLACEMENT_CHAR = "\ufffd"
CONTEXT_TOKENS = 6
"""How many prompt tokens precede the generation in the first decoding window."""


KEEP_SPECIAL = "_saltbench_keep_special_tokens"
"""The attribute :func:`keep_special_tokens` sets on a tokenizer."""


def keep_special_tokens(tokenizer: Any) -> Any:
    """Mark ``tokenizer`` so that :func:`token_texts` keeps its special tokens' texts; returns it."""
    setattr(tokenizer, KEEP_SPECIAL, True)
    return tokenizer


def _decoder(tokenizer: Any, keep_special: bool | None = None) -> Callable[[list[int]], str]:
    skip = not (getattr(tokenizer, KEEP_SPECIAL, False) if keep_special is None else keep_special)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # fast tokenizer: call Rust directly (no Python-side cleanup)
        return lambda ids: backend.decode(ids, skip_special_tokens=skip)
    return lambda ids: tokenizer.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=False)


def token_texts(
    tokenizer: Any,
    token_ids: Sequence[int] | np.ndarray,
    context_ids: Sequence[int] | np.ndarray = (),
    *,
    keep_special: bool | None = None,
) -> list[str]:
    """The text of each token of ``token_ids`` (rule in the module docstring); ``"".join`` gives the text.
    ``keep_special``: keep the special tokens' texts (``None``: as :func:`keep_special_tokens` marked the
    tokenizer)."""
    decode = _decoder(tokenizer, keep_special)
    context = [int(t) for t in context_ids[-CONTEXT_TOKENS:]] if len(context_ids) else []
    ids = context + [int(t) for t in token_ids]
    prefix_offset = 0
    read_offset = len(context)
    prefix_text = decode(ids[prefix_offset:read_offset]) if read_offset else ""
    texts: list[str] = []
    for i in range(len(context), len(ids)):
        new_text = decode(ids[prefix_offset : i + 1])
        if len(new_text) > len(prefix_text) and not new_text.endswith(REPLACEMENT_CHAR):
            texts.append(new_text[len(prefix_text) :])
            prefix_offset, read_offset = read_offset, i + 1
            prefix_text = decode(ids[prefix_offset:read_offset])
        else:
            texts.append("")
    if texts and read_offset < len(ids):  # pending characters at the end (e.g. cut inside a character)
        tail = decode(ids[prefix_offset:])
        texts[-1] += tail[len(prefix_text) :] if tail.startswith(prefix_text) else tail
    return texts


def encode_exactly(tokenizer: Any, text: str) -> tuple[list[int], list[str]] | None:
    """The token ids of ``text`` (no special tokens added) and their texts (:func:`token_texts`), or
    ``None`` when those texts do not join back to ``text`` (a tokenizer that normalises it)."""
    ids = [int(t) for t in tokenizer(text, add_special_tokens=False)["input_ids"]]
    texts = token_texts(tokenizer, ids)
    return (ids, texts) if "".join(texts) == text else None


def byte_token_texts(byte_lists: Sequence[Sequence[int] | None], tokens: Sequence[str]) -> list[str]:
    """The text of each token from its UTF-8 ``bytes`` (the token string where a server sends none): a
    character split over several tokens belongs to the one that completes it; bytes still pending after the
    last token (a generation cut inside a character) go to the last token, as U+FFFD."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    texts = [
        decoder.decode(bytes(raw)) if raw is not None else token for raw, token in zip(byte_lists, tokens)
    ]
    tail = decoder.decode(b"", final=True)
    if tail and texts:
        texts[-1] += tail
    return texts
