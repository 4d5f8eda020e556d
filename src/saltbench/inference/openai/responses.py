"""Responses of an OpenAI-compatible API into generation records (the ``openai`` backend, docs/backends.md
§8.1): :func:`parse_chat` and :func:`parse_completion` check one response and give its
:class:`ParsedChoice`; :func:`record_from` and :func:`scores_from` turn that into the generations table's
record; :func:`prompt_target_logprobs` reads the teacher-forced log-probabilities of vLLM's
``prompt_logprobs`` (docs/backends.md §8.5).

Token texts:

* ``chat`` endpoint: from each token's ``bytes`` through an incremental UTF-8 decoder
  (:func:`~saltbench.inference.detokenize.byte_token_texts`: a character split over several byte tokens
  belongs to the token that completes it, the earlier ones get ``""``), so they concatenate to the generated
  text;
* ``completions`` endpoint: the slices of the returned text at the returned ``text_offset``.

Token ids: with ``backend_options.token_ids`` (vLLM's ``return_tokens_as_token_ids``) the server's ids are
recorded and the token texts decoded from them with ``backend_options.tokenizer`` (from the prompt's last
tokens, as the offline engines do; vLLM's offsets and byte lists then describe the ``token_id:N`` strings).
Otherwise the API returns only token strings, and ids are recorded as *negative string ids*: within one
generation, equal token strings get the same id ``-(n + 1)``, ``n`` their order of first appearance — so the
scoring stage still recognises the chosen token among its alternatives (``topk_ids == token_ids``,
docs/confidence.md §2.1), and nothing takes them for vocabulary ids; what needs real ids (teacher forcing, the
interventions) is refused for such a model before any job runs.

Fewer than ``k`` alternatives ("may be fewer than requested") are padded with id
:data:`~saltbench.inference.records.PAD_ID` and log-probability NaN: the confidence functions treat NaN
alternatives as absent (the ``topk`` flavour renormalises over the alternatives that were returned; the chosen
token's own log-probability and every ``full``-flavour function are unaffected). The full-vocabulary entropy
is not returned: NaN, as for vLLM. Finish reasons map through :data:`FINISH` (``stop`` -> ``eos``, ``length``;
any other is an error row).

Reasoning (docs/reasoning.md §4): a chat response of a reasoning model may bring its reasoning apart from the
answer (``message.reasoning`` or ``message.reasoning_content``); :mod:`saltbench.inference.reasoning_apart`
puts it back in front of the answer in the model's ``reasoning_format``. With token ids, the server's text is
only a check of our decoding: it may hold the special tokens or not, and omit the stop token.

A response that lacks what a record needs raises :class:`MalformedResponse` (that prompt's error row: asking
again would give the same, docs/backends.md §8.2); one that shows the route cannot work for the model at all —
no log-probabilities (:class:`NoLogprobs`), reasoning apart from a model without a reasoning format — raises
:class:`WrongRoute`, a refusal that stops the model (docs/backends.md §8.8).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from saltbench.core.vocabulary import FinishReason, ReasoningFormat
from saltbench.inference.detokenize import byte_token_texts
from saltbench.inference.reasoning_apart import place_reasoning
from saltbench.inference.records import PAD_ID, GenerationRecord, TokenScores

FINISH: Mapping[str, FinishReason] = {"stop": "eos", "length": "length"}
"""API finish reasons -> the generations table's (any other reason is an error row naming it)."""


class MalformedResponse(ValueError):
    """A response lacks what a generation record needs (log-probabilities, texts that add up)."""


class WrongRoute(MalformedResponse):
    """A response shows that this route cannot serve the model as its registry entry says: every request
    would get the same answer, so the model is stopped (docs/backends.md §8.8)."""


class NoLogprobs(WrongRoute):
    """A response carries no log-probabilities at all: the server or the model does not return them, and
    asking again would cost as much and give the same."""


@dataclass(frozen=True)
class TokenDecoder:
    """The token texts of server token ids (``backend_options.token_ids``), decoded here with
    ``backend_options.tokenizer``:
    ``texts(ids)`` — one text per token, as the record keeps them (special tokens kept for a harmony model);
    ``plain(ids)`` — the ids decoded without special tokens, which is what a server's text holds by default;
    ``encode(text)`` — ids and texts of a text this side writes (reasoning returned apart), or ``None`` when
    its tokens do not give the text back."""

    texts: Callable[[Sequence[int]], list[str]]
    plain: Callable[[Sequence[int]], str]
    encode: Callable[[str], tuple[list[int], list[str]] | None]


def _string_ids(
    tokens: Sequence[str], alternatives: Sequence[Sequence[str]]
) -> tuple[list[int], list[list[int]]]:
    """Negative string ids (module docstring): equal strings in one generation share ``-(n + 1)``."""
    table: dict[str, int] = {}

    def sid(token: str) -> int:
        return table.setdefault(token, -(len(table) + 1))

    return [sid(t) for t in tokens], [[sid(a) for a in row] for row in alternatives]


def _server_id(token: str) -> int:
    """The id of vLLM's ``token_id:N`` token strings (``return_tokens_as_token_ids``)."""
    prefix, _, number = token.partition(":")
    if prefix != "token_id" or not number.lstrip("-").isdigit():
        raise MalformedResponse(
            f"token {token!r} is not of the form 'token_id:N' (backend_options.token_ids is set)"
        )
    return int(number)


def _pad(rows: list[list[int]], values: list[list[float]], k: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.full((len(rows), k), PAD_ID, dtype=np.int32)
    lps = np.full((len(rows), k), np.nan, dtype=np.float32)
    for t, (r, v) in enumerate(zip(rows, values)):
        n = min(len(r), k)
        ids[t, :n], lps[t, :n] = r[:n], v[:n]
    return ids, lps


@dataclass(frozen=True)
class ParsedChoice:
    """What one response gives a record: tokens, texts, log-probabilities, finish reason, token counts."""

    token_ids: list[int]
    texts: list[str]
    chosen: list[float]
    alt_ids: list[list[int]]
    alt_logprobs: list[list[float]]
    finish: str
    prompt_tokens: int
    completion_tokens: int


def parse_chat(
    response: Mapping[str, Any],
    *,
    token_ids: bool,
    decoder: TokenDecoder | None = None,
    reasoning: ReasoningFormat | None = None,
) -> ParsedChoice:
    """A chat-completions response as a :class:`ParsedChoice` (``decoder``: needed when ``token_ids``;
    ``reasoning``: the model's reasoning format, which a reasoning returned apart needs; module docstring).

    Raises:
        WrongRoute: no log-probabilities, or reasoning returned apart for a model without a reasoning format.
        MalformedResponse: no choice, or texts that do not add up to the content.
    """
    choice = _first_choice(response)
    message = choice.get("message") or {}
    content = message.get("content") or ""
    apart = _reasoning_apart(message)
    entries = (choice.get("logprobs") or {}).get("content")
    if entries is None:
        raise NoLogprobs(
            "the response carries no logprobs.content (the server does not return log-probabilities)"
        )
    tokens = [str(c["token"]) for c in entries]
    alternatives = [[str(a["token"]) for a in c.get("top_logprobs") or []] for c in entries]
    if token_ids:
        assert decoder is not None, "token ids need a decoder"
        ids = [_server_id(t) for t in tokens]
        alt_ids = [[_server_id(a) for a in row] for row in alternatives]
        texts = decoder.texts(ids) if ids else []
    else:
        ids, alt_ids = _string_ids(tokens, alternatives)
        texts = byte_token_texts([c.get("bytes") for c in entries], tokens)
    parsed = ParsedChoice(
        ids,
        texts,
        [float(c["logprob"]) for c in entries],
        alt_ids,
        [[float(a["logprob"]) for a in c.get("top_logprobs") or []] for c in entries],
        str(choice.get("finish_reason")),
        *_usage(response, len(tokens), answer_only=apart is not None),
    )
    if apart is None:
        if "".join(texts) != content:
            raise MalformedResponse(
                f"token texts join to {''.join(texts)[:60]!r}, the content is {content[:60]!r}"
            )
        return parsed
    return _with_reasoning(parsed, content, apart, reasoning, decoder)


def _reasoning_apart(message: Mapping[str, Any]) -> str | None:
    """The reasoning a chat response returned apart from its content (``reasoning``, vLLM's field, or
    ``reasoning_content``, older vLLM's and DeepSeek's), ``None`` when there is none."""
    for key in ("reasoning", "reasoning_content"):
        value = message.get(key)
        if isinstance(value, str):
            return value
    return None


def _with_reasoning(
    parsed: ParsedChoice,
    content: str,
    apart: str,
    reasoning: ReasoningFormat | None,
    decoder: TokenDecoder | None,
) -> ParsedChoice:
    """``parsed`` made the model's whole output: the reasoning returned apart put back in front of the answer
    in the ``reasoning`` format (:func:`saltbench.inference.reasoning_apart.place_reasoning`), as tokens
    without log-probabilities where the response has none for it."""
    if reasoning is None:
        raise WrongRoute(
            "the server returned reasoning apart from the answer (a reasoning parser), but the model "
            "declares no reasoning_format: set think or harmony in the model registry"
        )
    placed = place_reasoning(parsed.texts, content, apart, reasoning)
    if placed is None:
        raise MalformedResponse(
            f"token texts join to {''.join(parsed.texts)[:60]!r}…, which is neither the content "
            f"{content[:60]!r} nor reasoning then the content"
        )
    parsed = replace(parsed, texts=placed.texts)
    if placed.prefix is None:
        return parsed
    encoded = decoder.encode(placed.prefix) if decoder is not None else None
    prefix_ids, prefix_texts = encoded if encoded is not None else ([PAD_ID], [placed.prefix])
    n = len(prefix_ids)
    return replace(
        parsed,
        token_ids=[*prefix_ids, *parsed.token_ids],
        texts=[*prefix_texts, *parsed.texts],
        chosen=[float("nan")] * n + parsed.chosen,
        alt_ids=[[] for _ in range(n)] + parsed.alt_ids,
        alt_logprobs=[[] for _ in range(n)] + parsed.alt_logprobs,
    )


def parse_completion(
    response: Mapping[str, Any], *, token_ids: bool, decoder: TokenDecoder | None = None
) -> ParsedChoice:
    """A (legacy) completions response as a :class:`ParsedChoice`; texts are the slices of the returned text
    at ``text_offset`` — or, with ``token_ids``, ``decoder.texts(ids)`` (vLLM counts its offsets over the
    ``token_id:N`` strings then), checked against the returned text (:func:`_decoded_as_served`).

    Raises:
        NoLogprobs: no log-probabilities.
        MalformedResponse: no choice, lists of different lengths, or texts that do not add up to the returned
            text.
    """
    choice = _first_choice(response)
    lp = choice.get("logprobs") or {}
    tokens, chosen = lp.get("tokens"), lp.get("token_logprobs")
    offsets, tops = lp.get("text_offset"), lp.get("top_logprobs")
    if not lp:
        raise NoLogprobs("the response carries no logprobs (the server does not return log-probabilities)")
    if tokens is None or chosen is None or offsets is None or tops is None:
        raise MalformedResponse(
            "the response lacks logprobs.tokens / token_logprobs / text_offset / top_logprobs"
        )
    if not len(tokens) == len(chosen) == len(offsets) == len(tops):
        raise MalformedResponse("logprobs lists of different lengths")
    text = choice.get("text") or ""
    ranked = [sorted((row or {}).items(), key=lambda kv: -kv[1]) for row in tops]
    alternatives = [[k for k, _ in row] for row in ranked]
    if token_ids:
        assert decoder is not None, "token ids need a decoder"
        ids = [_server_id(str(t)) for t in tokens]
        alt_ids = [[_server_id(a) for a in row] for row in alternatives]
        texts = decoder.texts(ids) if ids else []
        _decoded_as_served(texts, ids, text, decoder)
    else:
        base = offsets[0] if offsets else 0  # servers that echo count offsets from the prompt's start
        bounds = [o - base for o in offsets] + [len(text)]
        texts = [text[a:b] for a, b in zip(bounds, bounds[1:])]
        ids, alt_ids = _string_ids([str(t) for t in tokens], alternatives)
        if "".join(texts) != text:
            raise MalformedResponse(f"token texts join to {''.join(texts)[:60]!r}, the text is {text[:60]!r}")
    return ParsedChoice(
        ids,
        texts,
        [float(c) for c in chosen],
        alt_ids,
        [[float(v) for _, v in row] for row in ranked],
        str(choice.get("finish_reason")),
        *_usage(response, len(tokens)),
    )


def _decoded_as_served(texts: Sequence[str], ids: Sequence[int], text: str, decoder: TokenDecoder) -> None:
    """Check our decoding of the server's token ids against the text it returned, which holds the special
    tokens or not (vLLM's ``skip_special_tokens``, on by default) and omits the stop token: the text must be
    our texts joined, or without the last token, or the ids decoded without special tokens.

    Raises:
        MalformedResponse: none of these is the server's text (the tokenizer is not the served model's).
    """
    joined = "".join(texts)
    if text in (joined, "".join(texts[:-1])) or text == decoder.plain(ids):
        return
    raise MalformedResponse(
        f"the token ids decode to {joined[:60]!r} with backend_options.tokenizer, the server's text is "
        f"{text[:60]!r}: is backend_options.tokenizer the served model's?"
    )


def _first_choice(response: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise MalformedResponse("the response has no choice")
    return choices[0]


def _usage(response: Mapping[str, Any], n_tokens: int, *, answer_only: bool = False) -> tuple[int, int]:
    """Prompt and completion tokens of ``usage``, checked against the ``n_tokens`` log-probability entries:
    equal, or — where the reasoning came apart (``answer_only``) and the entries may cover the answer only —
    the completion tokens less the reasoning tokens (``completion_tokens_details.reasoning_tokens``), or at
    most the completion tokens when those are not given."""
    usage = response.get("usage") or {}
    completion = usage.get("completion_tokens")
    if completion is not None and int(completion) != n_tokens:
        details = usage.get("completion_tokens_details") or {}
        hidden = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
        fits = answer_only and (
            n_tokens == int(completion) - int(hidden) if hidden is not None else n_tokens < int(completion)
        )
        if not fits:
            raise MalformedResponse(f"{n_tokens} log-probability entries for {completion} completion tokens")
    return int(usage.get("prompt_tokens") or 0), int(completion if completion is not None else n_tokens)


def record_from(parsed: ParsedChoice, k: int) -> GenerationRecord:
    """The generation record of a parsed response (alternatives padded to ``k``, entropy NaN)."""
    finish: FinishReason | None = FINISH.get(parsed.finish)
    if finish is None:
        return GenerationRecord.failed(
            f"finish_reason {parsed.finish!r} from the API", num_prompt_tokens=parsed.prompt_tokens, k=k
        )
    return GenerationRecord.from_scores(
        scores_from(parsed, k), parsed.texts, finish_reason=finish, num_prompt_tokens=parsed.prompt_tokens
    )


def scores_from(parsed: ParsedChoice, k: int) -> TokenScores:
    """The per-token scores of a parsed response (alternatives padded to ``k``, entropy NaN)."""
    alt_ids, alt_lps = _pad(parsed.alt_ids, parsed.alt_logprobs, k)
    return TokenScores(
        token_ids=np.asarray(parsed.token_ids, dtype=np.int32),
        chosen_logprobs=np.asarray(parsed.chosen, dtype=np.float32),
        topk_ids=alt_ids,
        topk_logprobs=alt_lps,
        entropy=np.full(len(parsed.token_ids), np.nan, dtype=np.float32),
    )


def prompt_target_logprobs(response: Mapping[str, Any], start: int, target: Sequence[int]) -> np.ndarray:
    """``log p(y_j | prompt, y_<j)`` of the target tokens at prompt positions ``start …`` from a completions
    response with vLLM's ``prompt_logprobs`` (one entry per prompt token, the first ``None``; each a mapping
    from token id to ``{"logprob", ...}``).

    Raises:
        MalformedResponse: no prompt log-probabilities, too few, or none for a target token.
    """
    entries = _first_choice(response).get("prompt_logprobs")
    if not isinstance(entries, list) or len(entries) < start + len(target):
        raise MalformedResponse(
            f"the response has no prompt log-probabilities for positions {start}..{start + len(target) - 1}"
        )
    values = []
    for j, token in enumerate(target):
        entry = entries[start + j] or {}
        found = entry.get(str(int(token))) if isinstance(entry, Mapping) else None
        if not isinstance(found, Mapping) or "logprob" not in found:
            raise MalformedResponse(
                f"no prompt log-probability of token {int(token)} at position {start + j}"
            )
        values.append(float(found["logprob"]))
    return np.asarray(values, dtype=np.float64)


__all__ = [
    "FINISH",
    "PAD_ID",
    "MalformedResponse",
    "NoLogprobs",
    "ParsedChoice",
    "TokenDecoder",
    "WrongRoute",
    "parse_chat",
    "parse_completion",
    "prompt_target_logprobs",
    "record_from",
    "scores_from",
]
