"""The ``openai`` backend: a served or hosted model through its OpenAI-compatible API (docs/backends.md §8).

One request per prompt, greedy (``temperature 0``), with per-token log-probabilities and the top ``k``
alternatives (``k`` <= 20, the OpenAI limit SALT chose its top-20 for). The generations table is the one the
``hf`` and ``vllm`` backends write, built from the response:

* ``chat`` endpoint: messages are sent (the system prompt of the registry entry when it is not empty, then
  the instruction) and the server applies the chat template; the ``prompt`` column records the messages
  as JSON. Token texts come from each token's ``bytes`` through an incremental UTF-8 decoder (a character
  split over several byte tokens belongs to the token that completes it, the earlier ones get ``""``), so
  they concatenate to the generated text;
* ``completions`` endpoint: the prompt is rendered here with the chat template of ``api.tokenizer`` and sent
  raw; token texts are the slices of the returned text at the returned ``text_offset``.

Token ids: with ``api.token_ids`` (vLLM's ``return_tokens_as_token_ids``) the server's ids are recorded and
the token texts decoded from them with ``api.tokenizer`` (from the prompt's last tokens, as the offline
engines do; vLLM's offsets and byte lists then describe the ``token_id:N`` strings). Otherwise the API returns
only token strings, and ids are recorded as *negative string ids*: within one generation, equal token strings
get the same id ``-(n + 1)``, ``n`` their order of first appearance — so the scoring stage still recognises
the chosen token among its alternatives (``topk_ids == token_ids``, docs/confidence.md §2.1), and nothing
takes them for vocabulary ids; what needs real ids (teacher forcing, the interventions) is refused for such a
model before any job runs.

Fewer than ``k`` alternatives ("may be fewer than requested") are padded with id :data:`PAD_ID` and
log-probability NaN: the confidence functions treat NaN alternatives as absent (the ``topk`` flavour
renormalises over the alternatives that were returned; the chosen token's own log-probability and every
``full``-flavour function are unaffected). The full-vocabulary entropy is not returned: NaN, as for vLLM.

Reliability: the ``openai`` client retries 429 (honouring ``Retry-After``), 5xx, timeouts and dropped
connections with backoff (``api.max_retries``; its machinery is used as is); a response without the
log-probabilities it must carry, or whose texts do not add up, is requested again up to ``max_retries``
times and then becomes an error row (``finish_reason = "error"``), never a shortened generation. Every
completed response is kept in an on-disk cache (:class:`RequestCache`; key: base URL, endpoint and the whole
request body), so a killed shard, when rerun, sends only the requests that had not completed. The API key is
read from the environment variable ``api.api_key_env`` when the client is made and is never logged, hashed
or written; error messages are scrubbed of it.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from tqdm.auto import tqdm

from saltbench.core.vocabulary import Backend, FinishReason
from saltbench.inference.records import GenerationRecord, TokenScores
from saltbench.io import write_atomic

T = TypeVar("T")

if TYPE_CHECKING:
    from saltbench.inference.forced import FinishReason as ForcedFinish
    from saltbench.inference.forced import ForcedContinuation, StopRule
    from saltbench.inference.registry import ApiSettings, ModelSpec

log = logging.getLogger(__name__)

PAD_ID = -(2**31)
"""The id of a padding alternative (fewer than ``k`` returned); its log-probability is NaN."""

MAX_TOP_LOGPROBS = 20
"""The most alternatives per token the OpenAI API returns."""


class MalformedResponse(ValueError):
    """A response lacks what a generation record needs (log-probabilities, texts that add up)."""


class NoLogprobs(MalformedResponse):
    """A response carries no log-probabilities at all: the server or the model does not return them, and
    asking again would cost as much and give the same."""


class RequestRefused(RuntimeError):
    """The server refused a request for good (a 4xx other than 408/409/429, or no log-probabilities): the
    model's job fails naming it and the reason, and no further request is sent (docs/backends.md §8.8)."""


RETRYABLE_STATUS = frozenset({408, 409, 429})
"""4xx answers worth asking again (timeout, conflict, rate limit); every other 4xx is a refusal."""


def refusal(exc: BaseException) -> str | None:
    """Why ``exc`` is a refusal that asking again cannot fix (a :class:`NoLogprobs`, or an API status error
    4xx outside :data:`RETRYABLE_STATUS`), else ``None``."""
    if isinstance(exc, NoLogprobs):
        return str(exc)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and 400 <= status < 500 and status not in RETRYABLE_STATUS:
        return f"HTTP {status}: {exc}"
    return None


class ApiKeyMissing(RuntimeError):
    """``api.api_key_env`` names an environment variable that is not set."""


def api_key(settings: ApiSettings, model: str) -> str | None:
    """The key from the environment variable ``settings.api_key_env`` (``None`` when no variable is named).

    Raises:
        ApiKeyMissing: naming the variable (never a value).
    """
    if settings.api_key_env is None:
        return None
    key = os.environ.get(settings.api_key_env)
    if not key:
        raise ApiKeyMissing(
            f"model {model!r}: the environment variable {settings.api_key_env} (api.api_key_env) is not set"
        )
    return key


def scrub(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***`` (error messages, logs)."""
    return text.replace(secret, "***") if secret else text


@dataclass
class RequestCache:
    """Completed responses on disk, one JSON file per request: ``{root}/{key[:2]}/{key}.json``.

    ``key`` is the sha256 of the base URL, the endpoint and the request body (sorted JSON); the API key is
    not part of it. Files are written atomically (temporary file, then rename), so a kill leaves either the
    whole response or nothing; an unreadable file is ignored (and overwritten by the next response).
    """

    root: Path

    @staticmethod
    def key(base_url: str, endpoint: str, body: Mapping[str, Any]) -> str:
        """The cache key of one request."""
        blob = json.dumps({"base_url": base_url, "endpoint": endpoint, "body": body}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached response of ``key``, or ``None``."""
        try:
            value = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, response: Mapping[str, Any]) -> None:
        """Keep ``response`` under ``key`` (atomically)."""
        # temporary ".{name}.*.tmp": what saltbench.workflow.runlock removes after a kill
        write_atomic(self._path(key), json.dumps(response))


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
        raise MalformedResponse(f"token {token!r} is not of the form 'token_id:N' (api.token_ids is set)")
    return int(number)


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


def parse_chat(response: Mapping[str, Any], *, token_ids: bool, detokenize: Any = None) -> ParsedChoice:
    """A chat-completions response as a :class:`ParsedChoice` (``detokenize(ids)``: token texts, needed when
    ``token_ids``; module docstring).

    Raises:
        MalformedResponse: no choice, no log-probabilities, or texts that do not add up to the content.
    """
    choice = _first_choice(response)
    content = (choice.get("logprobs") or {}).get("content")
    text = (choice.get("message") or {}).get("content") or ""
    if content is None:
        raise NoLogprobs(
            "the response carries no logprobs.content (the server does not return log-probabilities)"
        )
    tokens = [str(c["token"]) for c in content]
    alternatives = [[str(a["token"]) for a in c.get("top_logprobs") or []] for c in content]
    if token_ids:
        ids = [_server_id(t) for t in tokens]
        alt_ids = [[_server_id(a) for a in row] for row in alternatives]
        texts = list(detokenize(ids)) if ids else []
    else:
        ids, alt_ids = _string_ids(tokens, alternatives)
        texts = byte_token_texts([c.get("bytes") for c in content], tokens)
    if "".join(texts) != text:
        raise MalformedResponse(f"token texts join to {''.join(texts)[:60]!r}, the content is {text[:60]!r}")
    return ParsedChoice(
        ids,
        texts,
        [float(c["logprob"]) for c in content],
        alt_ids,
        [[float(a["logprob"]) for a in c.get("top_logprobs") or []] for c in content],
        str(choice.get("finish_reason")),
        *_usage(response, len(tokens)),
    )


def parse_completion(response: Mapping[str, Any], *, token_ids: bool, detokenize: Any = None) -> ParsedChoice:
    """A (legacy) completions response as a :class:`ParsedChoice`; texts are the slices of the returned text
    at ``text_offset`` — or, with ``token_ids``, ``detokenize(ids)`` (vLLM counts its offsets over the
    ``token_id:N`` strings then).

    Raises:
        MalformedResponse: no choice, no log-probabilities, lists of different lengths, or texts that do not
            add up to the returned text.
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
    base = offsets[0] if offsets else 0  # servers that echo count offsets from the prompt's start
    bounds = [o - base for o in offsets] + [len(text)]
    texts = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    ranked = [sorted((row or {}).items(), key=lambda kv: -kv[1]) for row in tops]
    alternatives = [[k for k, _ in row] for row in ranked]
    if token_ids:
        ids = [_server_id(str(t)) for t in tokens]
        alt_ids = [[_server_id(a) for a in row] for row in alternatives]
        texts = list(detokenize(ids)) if ids else []
    else:
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


def _first_choice(response: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise MalformedResponse("the response has no choice")
    return choices[0]


def _usage(response: Mapping[str, Any], n_tokens: int) -> tuple[int, int]:
    usage = response.get("usage") or {}
    completion = usage.get("completion_tokens")
    if completion is not None and int(completion) != n_tokens:
        raise MalformedResponse(f"{n_tokens} log-probability entries for {completion} completion tokens")
    return int(usage.get("prompt_tokens") or 0), int(completion if completion is not None else n_tokens)


EXTRA_BODY = frozenset({"return_tokens_as_token_ids", "prompt_logprobs", "chat_template_kwargs"})
"""Request keys of vLLM's server beyond the OpenAI API, sent in the client's ``extra_body``."""

FINISH: Mapping[str, FinishReason] = {"stop": "eos", "length": "length"}
"""API finish reasons -> the generations table's (any other reason is an error row naming it)."""


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


@dataclass
class Usage:
    """What a batch of requests used: tokens, retries, cache hits, failures, and the cost when priced."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    retries: int = 0
    cached: int = 0
    failed: int = 0

    def cost(self, settings: ApiSettings) -> float | None:
        """Prompt and completion tokens times their prices per million (``None`` when a price is unknown)."""
        if settings.price_prompt_per_mtok is None or settings.price_completion_per_mtok is None:
            return None
        return (
            self.prompt_tokens * settings.price_prompt_per_mtok
            + self.completion_tokens * settings.price_completion_per_mtok
        ) / 1e6


@dataclass(frozen=True)
class Probe:
    """What one short request to a served model gave: ``ok`` when log-probabilities with at least ``top_k``
    alternatives per token came back; ``detail`` says what came back or what went wrong."""

    model: str
    ok: bool
    alternatives: int
    detail: str


@dataclass
class OpenAIModel:
    """A registry model behind an OpenAI-compatible API: the
    :class:`~saltbench.inference.backends.LoadedModel` of ``backend: openai`` (module docstring)."""

    backend: ClassVar[Backend] = "openai"
    continuous_batching: ClassVar[bool] = True
    full_entropy: ClassVar[bool] = False

    spec: ModelSpec
    tokenizer: Any
    client: Any
    batch_size: int
    top_k: int
    cache: RequestCache | None = None
    secret: str | None = None
    usage: Usage = field(default_factory=Usage)
    eos_ids: list[int] | None = None
    cache_origin: str | None = None
    """What the request cache keys on besides the request (default: the base URL); a workflow-managed
    server, whose port changes from run to run, keys on the model instead (docs/backends.md §8.6)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _refused: str | None = field(default=None, repr=False)
    """Why the server refused a request for good; set, no further request is sent."""

    def _add(self, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                setattr(self.usage, name, getattr(self.usage, name) + n)

    @property
    def settings(self) -> ApiSettings:
        assert self.spec.api is not None  # a backend: openai entry always has its api block
        return self.spec.api

    def render(self, instructions: Sequence[str]) -> list[str]:
        """``chat``: the messages as JSON (the server renders them, the registry's template arguments sent as
        ``chat_template_kwargs``); ``completions``: the prompt rendered with ``api.tokenizer``'s chat template
        (the registry's system prompt, template and template arguments)."""
        if self.settings.endpoint == "completions":
            from saltbench.inference.chat import render_prompts

            return render_prompts(
                self.tokenizer,
                instructions,
                system_prompt=self.spec.system_prompt,
                chat_template=self.spec.chat_template,
                template_kwargs=self.spec.template_kwargs,
            )
        system = [{"role": "system", "content": self.spec.system_prompt}] if self.spec.system_prompt else []
        return [
            json.dumps([*system, {"role": "user", "content": text}], ensure_ascii=False)
            for text in instructions
        ]

    def request(self, prompt: str, budget: int) -> dict[str, Any]:
        """The request body of one rendered prompt (greedy, ``top_k`` alternatives per token)."""
        source = self.spec.source
        body: dict[str, Any] = {"model": source.model, "max_tokens": budget, "temperature": 0.0}  # type: ignore[union-attr]
        if self.settings.endpoint == "chat":
            body.update(messages=json.loads(prompt), logprobs=True, top_logprobs=self.top_k)
            if self.spec.template_kwargs:  # the server renders the template (vLLM, SGLang take these)
                body["chat_template_kwargs"] = self.spec.template_kwargs
        else:
            body.update(prompt=prompt, logprobs=self.top_k)
        if self.settings.token_ids:
            body["return_tokens_as_token_ids"] = True
        return body

    def _send(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
        """One request through the client (its retries): the response as plain data, and retries taken."""
        standard = {k: v for k, v in body.items() if k not in EXTRA_BODY}
        extra = {k: v for k, v in body.items() if k in EXTRA_BODY}
        api = self.client.chat.completions if self.settings.endpoint == "chat" else self.client.completions
        raw = api.with_raw_response.create(**standard, extra_body=extra or None)
        return raw.parse().model_dump(), int(getattr(raw, "retries_taken", 0))

    def _parse(self, response: Mapping[str, Any], prompt: str) -> ParsedChoice:
        detok = None
        if self.settings.token_ids:
            from saltbench.inference.chat import encode_prompt
            from saltbench.inference.detokenize import token_texts

            # decoding starts from the prompt's last tokens (leading spaces), as for the offline engines
            context = encode_prompt(self.tokenizer, prompt) if self.settings.endpoint == "completions" else []

            def detok(ids: Sequence[int]) -> list[str]:
                return token_texts(self.tokenizer, ids, context_ids=context)

        if self.settings.endpoint == "chat":
            return parse_chat(response, token_ids=self.settings.token_ids, detokenize=detok)
        return parse_completion(response, token_ids=self.settings.token_ids, detokenize=detok)

    def _fetch(self, body: Mapping[str, Any], parse: Callable[[Mapping[str, Any]], T]) -> T | str:
        """``parse(response)`` of one request: from the request cache, else sent (the client's retries for
        429/5xx/timeouts/dropped connections, then ``max_retries`` more for a malformed response); what went
        wrong, key scrubbed, when no attempt gave a parsable response."""
        origin = self.cache_origin or self.spec.source.base_url  # type: ignore[union-attr]
        key = RequestCache.key(origin, self.settings.endpoint, body)
        response = self.cache.get(key) if self.cache is not None else None
        if response is not None:
            try:
                parsed = parse(response)
                self._add(cached=1)
                return parsed
            except MalformedResponse:
                pass  # a damaged cache entry: ask again
        error = ""
        for attempt in range(self.settings.max_retries + 1):
            if self._refused is not None:
                raise RequestRefused(self._refused)
            try:
                response, retries = self._send(body)
                self._add(requests=1, retries=retries)
                parsed = parse(response)
            except Exception as exc:  # malformed, refused, or the client gave up (its own retries are spent)
                why = refusal(exc)
                if why is not None:
                    self._refuse(why)
                if isinstance(exc, MalformedResponse):
                    error = f"malformed response ({exc})"
                    log.warning(
                        "%s: %s; attempt %d of %d",
                        self.spec.name,
                        error,
                        attempt + 1,
                        self.settings.max_retries + 1,
                    )
                    continue
                error = scrub(f"{type(exc).__name__}: {exc}", self.secret)
                break
            if self.cache is not None:
                self.cache.put(key, response)
            return parsed
        self._add(failed=1)
        log.error("%s: request failed: %s", self.spec.name, error)
        return error

    def _refuse(self, why: str) -> None:
        """Stop every request of this model: the server refused one for good (:func:`refusal`)."""
        with self._lock:
            if self._refused is None:
                self._refused = scrub(
                    f"model {self.spec.name!r}: the server refused a request, which asking again cannot "
                    f"change ({why}); no further request is sent — check the model name and its API's "
                    "support for log-probabilities (python -m saltbench.stages.preflight CONFIG), then rerun",
                    self.secret,
                )
                log.error("%s", self._refused)
        raise RequestRefused(self._refused)

    def probe(self, instruction: str = "Reply with the word OK.", budget: int = 4) -> Probe:
        """One short request, not cached and not retried beyond the client's own retries, and what came back
        (:class:`Probe`): the preflight of a served model before any large spend (docs/backends.md §8.8)."""
        try:
            (prompt,) = self.render([instruction])
            response, _ = self._send(self.request(prompt, budget))
            parsed = self._parse(response, prompt)
        except Exception as exc:  # the probe reports every failure instead of raising it
            return Probe(self.spec.name, False, 0, scrub(f"{type(exc).__name__}: {exc}", self.secret))
        alternatives = min((len(row) for row in parsed.alt_ids), default=0)
        ok = bool(parsed.chosen) and alternatives >= self.top_k
        detail = f"{len(parsed.chosen)} tokens, {alternatives} alternatives per token" + (
            "" if ok else f": fewer than the {self.top_k} the study needs"
        )
        return Probe(self.spec.name, ok, alternatives, detail)

    def _one(self, prompt: str, budget: int) -> GenerationRecord:
        parsed = self._fetch(self.request(prompt, budget), lambda response: self._parse(response, prompt))
        if isinstance(parsed, str):
            return GenerationRecord.failed(parsed, num_prompt_tokens=0, k=self.top_k)
        return self._count(parsed)

    def _count(self, parsed: ParsedChoice) -> GenerationRecord:
        self._add(prompt_tokens=parsed.prompt_tokens, completion_tokens=parsed.completion_tokens)
        return record_from(parsed, self.top_k)

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]:
        """One greedy record per prompt, in order: ``api.concurrency`` requests in flight; budgets capped by
        the registry's ``max_new_tokens`` rule. Logs the tokens, retries, cache hits and cost used."""
        if len(budgets) != len(prompts):
            raise ValueError(f"{len(budgets)} budgets for {len(prompts)} prompts")
        capped = [self.spec.max_new_tokens(b) for b in budgets]
        with self._lock:
            before = Usage(**vars(self.usage))
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            futures = [pool.submit(self._one, p, b) for p, b in zip(prompts, capped)]
            records = [f.result() for f in tqdm(futures, desc=self.spec.name, disable=not progress)]
        used = Usage(**{k: v - getattr(before, k) for k, v in vars(self.usage).items()})
        cost = used.cost(self.settings)
        log.info(
            "%s: %d prompts in %.1f s: %d requests (%d retries), %d from the cache, %d failed; %d prompt "
            "+ %d completion tokens%s",
            self.spec.name,
            len(prompts),
            time.perf_counter() - started,
            used.requests,
            used.retries,
            used.cached,
            used.failed,
            used.prompt_tokens,
            used.completion_tokens,
            "" if cost is None else f", cost {cost:.4f}",
        )
        return records

    def prompt_cache(self, prompt_ids: Sequence[int]) -> None:
        """Nothing to prepare (the server caches prefixes itself, if it does)."""
        return None

    def force_and_continue(
        self,
        prompt_ids: Sequence[int],
        rows: Sequence[tuple[Sequence[int], Sequence[int]]],
        *,
        max_new_tokens: int,
        cache: Any = None,
        stop: StopRule | None = None,
    ) -> list[ForcedContinuation]:
        """:func:`saltbench.inference.forced.force_and_continue` through the completions endpoint of a server
        with prompt log-probabilities (``api.prompt_logprobs``; docs/backends.md §8.5): per row, the
        continuation of ``prompt + x`` (token-id prompt, greedy, top-k, cut by ``stop`` afterwards as for
        vLLM) and the target's teacher-forced log-probabilities, the prompt log-probabilities of
        ``prompt + x + y`` (``max_tokens`` 1). ``api.concurrency`` requests in flight; the request cache lets
        a rerun skip the finished ones.

        Raises:
            NotImplementedError: the entry does not declare ``api.prompt_logprobs`` (the configuration
                refuses such a model for the interventions before any job runs).
            RuntimeError: a request failed after its retries (naming it): an intervention shard is all or
                nothing, and a rerun sends only the requests that had not completed.
        """
        from saltbench.inference.detokenize import token_texts
        from saltbench.inference.forced import ForcedContinuation

        self._require_prompt_logprobs(max_new_tokens)
        prompt = [int(token) for token in prompt_ids]
        model = self.spec.source.model  # type: ignore[union-attr]
        base = {"model": model, "temperature": 0.0, "return_tokens_as_token_ids": True}
        contexts = [[*prompt, *map(int, prefix)] for prefix, _ in rows]
        continued, forced = self._forced_requests(base, contexts, rows, max_new_tokens, stop)
        results = []
        for row, (continuation, target_logprobs) in enumerate(zip(continued, forced)):
            for outcome in (continuation, target_logprobs):
                if isinstance(outcome, str):
                    raise RuntimeError(f"model {self.spec.name!r}: a request of row {row} failed: {outcome}")
            assert not isinstance(continuation, str) and not isinstance(target_logprobs, str)
            scores, finish, _ = continuation
            texts = (
                token_texts(self.tokenizer, scores.token_ids, context_ids=contexts[row])
                if len(scores)
                else []
            )
            record = GenerationRecord.from_scores(
                scores,
                texts,
                finish_reason="eos" if finish == "eos" else "length",
                num_prompt_tokens=len(contexts[row]),
            )
            results.append(ForcedContinuation(np.asarray(target_logprobs, dtype=np.float64), record, finish))
        return results

    def _require_prompt_logprobs(self, max_new_tokens: int) -> None:
        """Refuse teacher forcing when the entry does not declare ``api.prompt_logprobs``, or for a negative
        budget."""
        if not self.settings.prompt_logprobs:
            raise NotImplementedError(
                f"model {self.spec.name!r} (backend openai): teacher-forced prefixes need a completions "
                "endpoint with prompt log-probabilities (api.prompt_logprobs)"
            )
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")

    def _forced_requests(
        self,
        base: Mapping[str, Any],
        contexts: Sequence[list[int]],
        rows: Sequence[tuple[Sequence[int], Sequence[int]]],
        max_new_tokens: int,
        stop: StopRule | None,
    ) -> tuple[list[tuple[TokenScores, ForcedFinish, int] | str], list[np.ndarray | str]]:
        """Every row's continuation (:meth:`_continue_row`), then every row's target log-probabilities
        (:meth:`_target_logprobs`), ``api.concurrency`` requests in flight."""
        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            continued = list(
                pool.map(
                    lambda row: self._continue_row(base, contexts[row], row, max_new_tokens, stop),
                    range(len(rows)),
                )
            )
            forced = list(
                pool.map(
                    lambda row: self._target_logprobs(base, contexts[row], rows[row][1]), range(len(rows))
                )
            )
        return continued, forced

    def _continue_row(
        self,
        base: Mapping[str, Any],
        context: list[int],
        row: int,
        max_new_tokens: int,
        stop: StopRule | None,
    ) -> tuple[TokenScores, ForcedFinish, int] | str:
        """The greedy continuation of one row's ``context`` (cut by EOS or ``stop``), its finish reason and
        prompt tokens; what went wrong when the request failed."""
        from saltbench.inference.detokenize import token_texts
        from saltbench.inference.forced import cut_continuation

        if not max_new_tokens:
            return TokenScores.empty(self.top_k), "length", 0
        body = {**base, "prompt": context, "max_tokens": max_new_tokens, "logprobs": self.top_k}

        def detokenize(ids: Sequence[int]) -> list[str]:
            return token_texts(self.tokenizer, ids, context_ids=context)

        parsed = self._fetch(
            body, lambda response: parse_completion(response, token_ids=True, detokenize=detokenize)
        )
        if isinstance(parsed, str):
            return parsed
        self._add(prompt_tokens=parsed.prompt_tokens, completion_tokens=parsed.completion_tokens)
        scores = scores_from(parsed, self.top_k)
        length, finish = cut_continuation(scores, self._eos_ids(), row, stop)
        if finish == "length" and length == len(scores) and FINISH.get(parsed.finish) == "eos":
            finish = "eos"  # the server stopped at an EOS it does not return
        return scores.slice(0, length), finish, parsed.prompt_tokens

    def _target_logprobs(
        self, base: Mapping[str, Any], context: list[int], target: Sequence[int]
    ) -> np.ndarray | str:
        """The teacher-forced log-probabilities of ``target`` after ``context`` (the prompt log-probabilities
        of ``context + target``, ``max_tokens`` 1); what went wrong when the request failed."""
        target_ids = [int(token) for token in target]
        if not target_ids:
            return np.zeros(0)
        body = {**base, "prompt": [*context, *target_ids], "max_tokens": 1, "prompt_logprobs": 0}
        return self._fetch(body, lambda response: prompt_target_logprobs(response, len(context), target_ids))

    def _eos_ids(self) -> list[int]:
        """The EOS ids of ``api.tokenizer``'s generation config (its tokenizer's EOS when it has none)."""
        if self.eos_ids is None:
            from saltbench.inference.generation import generation_config_eos_ids

            config = None
            try:
                from transformers import GenerationConfig

                config = GenerationConfig.from_pretrained(str(self.settings.tokenizer))
            except (OSError, ValueError):
                pass  # no generation_config.json beside the tokenizer
            self.eos_ids = generation_config_eos_ids(config, self.tokenizer)
        return self.eos_ids


def load_openai(spec: ModelSpec, *, batch_size: int, top_k: int, cache_dir: str | Path | None) -> OpenAIModel:
    """The client of a ``backend: openai`` entry (no request is sent): the key from ``api.api_key_env``, the
    client's retries and timeout, the tokenizer of ``api.tokenizer`` when named, the request cache.

    Raises:
        ApiKeyMissing: the named environment variable is not set.
        ValueError: ``top_k`` above the API's 20.
    """
    from openai import OpenAI

    settings = spec.api
    if settings is None:
        raise ValueError(f"model {spec.name!r}: backend openai needs a source of kind 'api'")
    if not 1 <= top_k <= MAX_TOP_LOGPROBS:
        raise ValueError(f"top_k {top_k} outside 1..{MAX_TOP_LOGPROBS} (the OpenAI API's top_logprobs limit)")
    secret = api_key(settings, spec.name)
    client = OpenAI(
        base_url=spec.source.base_url,  # type: ignore[union-attr]
        api_key=secret or "not-needed",
        max_retries=settings.max_retries,
        timeout=settings.timeout_s,
    )
    tokenizer = None
    if settings.tokenizer is not None:
        from saltbench.inference.loading import load_tokenizer

        tokenizer = load_tokenizer(settings.tokenizer)
    cache = RequestCache(Path(cache_dir)) if cache_dir is not None else None
    log.info(
        "%s: %s endpoint of %s, %d in flight, timeout %.0f s, %d retries",
        spec.name,
        settings.endpoint,
        spec.source.base_url,  # type: ignore[union-attr]
        settings.concurrency,
        settings.timeout_s,
        settings.max_retries,
    )
    return OpenAIModel(spec, tokenizer, client, batch_size, top_k, cache, secret)


__all__ = [
    "FINISH",
    "MAX_TOP_LOGPROBS",
    "PAD_ID",
    "ApiKeyMissing",
    "MalformedResponse",
    "NoLogprobs",
    "Probe",
    "RequestRefused",
    "OpenAIModel",
    "ParsedChoice",
    "RequestCache",
    "Usage",
    "api_key",
    "byte_token_texts",
    "load_openai",
    "parse_chat",
    "parse_completion",
    "prompt_target_logprobs",
    "record_from",
    "scores_from",
    "scrub",
]
