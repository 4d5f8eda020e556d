"""The ``openai`` backend: a served or hosted model through its OpenAI-compatible API (docs/backends.md §8).

One request per prompt, greedy (``temperature 0``), with per-token log-probabilities and the top ``k``
alternatives (``k`` <= 20, the OpenAI limit SALT chose its top-20 for). The generations table is the one the
``hf`` and ``vllm`` backends write, built from the response (:mod:`saltbench.inference.openai.responses`:
token texts, server or negative string ids, padding; docs/backends.md §8.1):

* ``chat`` endpoint: messages are sent (the system prompt of the registry entry when it is not empty, then
  the instruction) and the server applies the chat template; the ``prompt`` column records the messages
  as JSON;
* ``completions`` endpoint: the prompt is rendered here with the chat template of
  ``backend_options.tokenizer`` and sent raw.

This module holds the client, :class:`OpenAIModel` (made by :func:`load_openai`), and the preflight's
:class:`Probe`. Reliability (docs/backends.md §8.2, §8.8): the ``openai`` client retries 429 (honouring
``Retry-After``), 5xx, timeouts and dropped connections with backoff (``backend_options.max_retries``; its
machinery is used as is, under the HTTP client of :mod:`saltbench.inference.openai.transport`, which fails a
refused connection at once and counts every attempt). What asking again cannot change is asked once: a
response without what a record needs, or whose texts do not add up (:class:`MalformedResponse`), and a request
the server refuses for this prompt alone (:func:`prompt_error`: a prompt beyond the model's context) become
that prompt's error row (``finish_reason = "error"``), never a shortened generation; a refusal of the model
itself (:func:`refusal`) stops every request of the model. A prompt that cannot fit ``max_context`` with its
budget is an error row before any request, where the entry names a tokenizer. Every completed response is kept
in the on-disk request cache (:class:`saltbench.inference.openai.cache.RequestCache`), so a killed shard, when
rerun, sends only the requests that had not completed. The API key is read from the environment variable
``backend_options.api_key_env`` when the client is made and is never logged, hashed or written; error messages
are scrubbed of it (:mod:`saltbench.inference.openai.cache`). Tokens, requests, attempts, cache hits and cost
are counted in :class:`saltbench.inference.openai.usage.Usage` (docs/backends.md §8.3).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from tqdm.auto import tqdm

from saltbench.inference.base import (
    DrawSettings,
    ForcedContinuation,
    StopRule,
    cut_continuation,
    generation_config_eos_ids,
)
from saltbench.inference.openai.cache import RequestCache, api_key, scrub
from saltbench.inference.openai.options import ApiSettings, api_settings
from saltbench.inference.openai.responses import (
    FINISH,
    MalformedResponse,
    ParsedChoice,
    TokenDecoder,
    WrongRoute,
    parse_chat,
    parse_completion,
    prompt_target_logprobs,
    record_from,
    scores_from,
)
from saltbench.inference.openai.usage import Usage
from saltbench.inference.records import GenerationRecord, TokenScores
from saltbench.inference.sources import ApiSource

T = TypeVar("T")

if TYPE_CHECKING:
    from saltbench.core.vocabulary import DrawSupport
    from saltbench.inference.base import FinishReason as ForcedFinish
    from saltbench.inference.registry import ModelSpec

log = logging.getLogger(__name__)

MAX_TOP_LOGPROBS = 20
"""The most alternatives per token the OpenAI API returns."""


class RequestRefused(RuntimeError):
    """The server refused a request for good (a 4xx other than 408/409/429 that is not about the prompt, a
    response showing the route cannot work, a refused connection): the model's job fails naming it and the
    reason, and no further request is sent (docs/backends.md §8.8)."""


RETRYABLE_STATUS = frozenset({408, 409, 429})
"""4xx answers worth asking again (timeout, conflict, rate limit); every other 4xx is a refusal."""

PROMPT_TOO_LONG = re.compile(r"context.length|prompt is too long|too many (input )?tokens", re.IGNORECASE)
"""What a server says when one prompt does not fit the model's context: vLLM's "This model's maximum context
length is …" and "… exceeds model's maximum context length", OpenAI's code ``context_length_exceeded``."""


def prompt_error(exc: BaseException) -> str | None:
    """Why the server refused ``exc``'s request for its prompt alone (a 400/413/422 saying the prompt does
    not fit the context, :data:`PROMPT_TOO_LONG`): that prompt's error row, not a refusal of the model."""
    status = getattr(exc, "status_code", None)
    said = f"{getattr(exc, 'code', None) or ''} {exc}"
    if status in (400, 413, 422) and PROMPT_TOO_LONG.search(said):
        return f"HTTP {status}: {exc}"
    return None


def refusal(exc: BaseException) -> str | None:
    """Why ``exc`` is a refusal of the model that asking again cannot fix — a :class:`WrongRoute` response
    (no log-probabilities, …), a refused connection, or an API status error 4xx outside
    :data:`RETRYABLE_STATUS` that is not about one prompt (:func:`prompt_error`) — else ``None``."""
    from saltbench.inference.openai.transport import refused_connection

    if isinstance(exc, WrongRoute):
        return str(exc)
    if refused_connection(exc):
        url = getattr(getattr(exc, "request", None), "url", "the server")
        return str(exc) if "connection refused" in str(exc) else f"connection refused by {url}"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and 400 <= status < 500 and status not in RETRYABLE_STATUS:
        return None if prompt_error(exc) else f"HTTP {status}: {exc}"
    return None


EXTRA_BODY = frozenset({"return_tokens_as_token_ids", "prompt_logprobs", "chat_template_kwargs"})
"""Request keys of vLLM's server beyond the OpenAI API, sent in the client's ``extra_body``."""


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
    :class:`~saltbench.inference.base.LoadedModel` of ``backend: openai`` (module docstring)."""

    backend: ClassVar[str] = "openai"
    continuous_batching: ClassVar[bool] = True
    full_entropy: ClassVar[bool] = False
    draws: ClassVar[DrawSupport] = "seeded"

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

    @property
    def settings(self) -> ApiSettings:
        """The client settings: the entry's ``backend_options`` (:class:`ApiSettings`)."""
        return api_settings(self.spec)

    @property
    def api_source(self) -> ApiSource:
        """The entry's source: its base URL and served model name."""
        assert isinstance(self.spec.source, ApiSource)  # a backend: openai entry always has an api source
        return self.spec.source

    def render(self, instructions: Sequence[str]) -> list[str]:
        """``chat``: the messages as JSON (the server renders them, the registry's template arguments sent as
        ``chat_template_kwargs``); ``completions``: the prompt rendered with ``backend_options.tokenizer``'s
        chat template (the registry's system prompt, template and template arguments)."""
        if self.settings.endpoint == "completions":
            from saltbench.inference.chat import render_for_spec

            return render_for_spec(self.tokenizer, instructions, self.spec)
        system = [{"role": "system", "content": self.spec.system_prompt}] if self.spec.system_prompt else []
        return [
            json.dumps([*system, {"role": "user", "content": text}], ensure_ascii=False)
            for text in instructions
        ]

    def request(self, prompt: str, budget: int) -> dict[str, Any]:
        """The request body of one rendered prompt (greedy, ``top_k`` alternatives per token)."""
        body: dict[str, Any] = {"model": self.api_source.model, "max_tokens": budget, "temperature": 0.0}
        if self.settings.endpoint == "chat":
            body.update(messages=json.loads(prompt), logprobs=True, top_logprobs=self.top_k)
            if self.spec.template_kwargs:  # the server renders the template (vLLM, SGLang take these)
                body["chat_template_kwargs"] = self.spec.template_kwargs
        else:
            body.update(prompt=prompt, logprobs=self.top_k)
        if self.settings.token_ids:
            body["return_tokens_as_token_ids"] = True
        return body

    def _send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """One request through the client (its retries): the response as plain data."""
        standard = {k: v for k, v in body.items() if k not in EXTRA_BODY}
        extra = {k: v for k, v in body.items() if k in EXTRA_BODY}
        api = self.client.chat.completions if self.settings.endpoint == "chat" else self.client.completions
        return dict(api.create(**standard, extra_body=extra or None).model_dump())

    def _parse(self, response: Mapping[str, Any], prompt: str) -> ParsedChoice:
        if self.settings.endpoint == "chat":
            return parse_chat(
                response,
                token_ids=self.settings.token_ids,
                decoder=self.decoder([]),
                reasoning=self.spec.reasoning_format,
            )
        from saltbench.inference.chat import encode_prompt

        # decoding starts from the prompt's last tokens (leading spaces), as for the offline engines
        return parse_completion(
            response,
            token_ids=self.settings.token_ids,
            decoder=self.decoder(encode_prompt(self.tokenizer, prompt) if self.settings.token_ids else []),
        )

    def decoder(self, context: Sequence[int]) -> TokenDecoder | None:
        """The :class:`~saltbench.inference.openai.responses.TokenDecoder` of ``backend_options.tokenizer``
        for a generation after the prompt tokens ``context`` (``None`` without a tokenizer)."""
        if self.tokenizer is None:
            return None
        from saltbench.inference.detokenize import encode_exactly, token_texts

        tokenizer = self.tokenizer
        return TokenDecoder(
            texts=lambda ids: token_texts(tokenizer, ids, context_ids=context),
            plain=lambda ids: "".join(token_texts(tokenizer, ids, context_ids=context, keep_special=False)),
            encode=lambda text: encode_exactly(tokenizer, text),
        )

    def _fetch(self, body: Mapping[str, Any], parse: Callable[[Mapping[str, Any]], T]) -> T | str:
        """``parse(response)`` of one request: from the request cache, else sent once (the client retries
        429/5xx/timeouts/dropped connections itself); what went wrong, key scrubbed, when the request failed
        or its response cannot be parsed (asking again would give the same: module docstring)."""
        origin = self.cache_origin or self.api_source.base_url
        key = RequestCache.key(origin, self.settings.endpoint, body)
        response = self.cache.get(key) if self.cache is not None else None
        if response is not None:
            try:
                parsed = parse(response)
                self.usage.add(cached=1)
                return parsed
            except MalformedResponse:
                pass  # a damaged cache entry: ask again
        if self._refused is not None:
            raise RequestRefused(self._refused)
        try:
            self.usage.add(requests=1)
            response = self._send(body)
            parsed = parse(response)
        except Exception as exc:  # malformed, refused, or the client gave up (its own retries are spent)
            return self._failed(exc)
        if self.cache is not None:
            self.cache.put(key, response)
        return parsed

    def _failed(self, exc: Exception) -> str:
        """What went wrong with one request, key scrubbed (its error row); a refusal of the model stops every
        request (:meth:`_refuse` raises)."""
        self.usage.add(failed=1)
        why = refusal(exc)
        if why is not None:
            self._refuse(why)
        if isinstance(exc, MalformedResponse):
            error = f"malformed response ({exc})"
        else:
            error = scrub(f"{type(exc).__name__}: {exc}", self.secret)
        log.error("%s: request failed: %s", self.spec.name, error)
        return error

    def _refuse(self, why: str) -> None:
        """Stop every request of this model: the server refused one for good (:func:`refusal`)."""
        with self._lock:
            if self._refused is None:
                self._refused = scrub(
                    f"model {self.spec.name!r}: the server refused a request, which asking again cannot "
                    f"change ({why}); no further request is sent — check the URL, the model name, its "
                    "API's support for log-probabilities and the registry's route and reasoning_format "
                    "(python -m saltbench.stages.preflight CONFIG), then rerun",
                    self.secret,
                )
                log.error("%s", self._refused)
        raise RequestRefused(self._refused)

    def probe(self, instruction: str = "Reply with the word OK.", budget: int = 4) -> Probe:
        """One short request, not cached and not retried beyond the client's own retries, and what came back
        (:class:`Probe`): the preflight of a served model before any large spend (docs/backends.md §8.8)."""
        try:
            (prompt,) = self.render([instruction])
            parsed = self._parse(self._send(self.request(prompt, budget)), prompt)
        except Exception as exc:  # the probe reports every failure instead of raising it
            where = self.api_source.base_url
            return Probe(
                self.spec.name, False, 0, scrub(f"{type(exc).__name__}: {exc} ({where})", self.secret)
            )
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
        self.usage.add(prompt_tokens=parsed.prompt_tokens, completion_tokens=parsed.completion_tokens)
        return record_from(parsed, self.top_k)

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]:
        """One greedy record per prompt, in order: ``backend_options.concurrency`` requests in flight; budgets
        capped by the registry's ``max_new_tokens`` rule; a prompt that cannot fit (:meth:`screen`) is an
        error row without a request. Logs the requests, retries, cache hits, tokens and cost used — also when
        a refusal stops the model."""
        runs = self._pooled(prompts, budgets, lambda i, p, b: [self._one(p, b)], 1, progress)
        return [records[0] for records in runs]

    def sample(
        self,
        prompts: Sequence[str],
        budgets: Sequence[int],
        seeds: Sequence[int],
        settings: DrawSettings,
        *,
        progress: bool = True,
    ) -> list[list[GenerationRecord]]:
        """``settings.n`` draws per prompt, in order (docs/generation.md §7): one request per prompt with the
        API's ``n``, ``seed`` (``seeds[i]`` modulo 2**31, the range servers take), ``temperature`` and
        ``top_p``, otherwise as :meth:`generate`; a failed request gives ``n`` error rows. Whether the server
        honours the seed is its own (vLLM's does; OpenAI's is best effort)."""
        if len(seeds) != len(prompts):
            raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts")

        def drawn(i: int, prompt: str, budget: int) -> list[GenerationRecord]:
            body = self.request(prompt, budget) | {
                "n": settings.n,
                "seed": int(seeds[i]) % 2**31,
                "temperature": settings.temperature,
                "top_p": settings.top_p,
            }
            parsed = self._fetch(body, lambda response: self._parse_draws(response, prompt, settings.n))
            if isinstance(parsed, str):
                return [GenerationRecord.failed(parsed, num_prompt_tokens=0, k=self.top_k)] * settings.n
            return [self._count(choice) for choice in parsed]

        return self._pooled(prompts, budgets, drawn, settings.n, progress)

    def _parse_draws(self, response: Mapping[str, Any], prompt: str, n: int) -> list[ParsedChoice]:
        """The ``n`` choices of a response, in their ``index`` order, each parsed as a response of its own
        (the prompt's tokens counted with the first)."""
        choices = response.get("choices")
        if not isinstance(choices, list) or len(choices) != n:
            got = len(choices) if isinstance(choices, list) else 0
            raise MalformedResponse(f"{got} choices for n = {n} (the API does not take n)")
        prompt_tokens = (response.get("usage") or {}).get("prompt_tokens")
        ordered = sorted(choices, key=lambda c: int(c.get("index", 0)) if isinstance(c, Mapping) else 0)
        return [
            self._parse(
                {**response, "choices": [c], "usage": {"prompt_tokens": prompt_tokens if j == 0 else 0}},
                prompt,
            )
            for j, c in enumerate(ordered)
        ]

    def _pooled(
        self,
        prompts: Sequence[str],
        budgets: Sequence[int],
        one: Callable[[int, str, int], list[GenerationRecord]],
        n: int,
        progress: bool,
    ) -> list[list[GenerationRecord]]:
        """``one(i, prompt, budget)`` of every prompt that fits (:meth:`screen`; ``n`` error records for one
        that does not), ``backend_options.concurrency`` at a time, budgets capped by the registry; logs the
        usage."""
        if len(budgets) != len(prompts):
            raise ValueError(f"{len(budgets)} budgets for {len(prompts)} prompts")
        capped = [self.spec.generation_budget(b) for b in budgets]
        records = [None if r is None else [r] * n for r in self.screen(prompts, capped)]
        before = self.usage.counts()
        started = time.perf_counter()
        try:
            with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
                futures = {
                    i: pool.submit(one, i, prompts[i], capped[i])
                    for i, record in enumerate(records)
                    if record is None
                }
                for i, future in tqdm(futures.items(), desc=self.spec.name, disable=not progress):
                    records[i] = future.result()
        finally:
            self._log_usage(self.usage.since(before), len(prompts), time.perf_counter() - started)
        return [record for record in records if record is not None]

    def screen(self, prompts: Sequence[str], budgets: Sequence[int]) -> list[GenerationRecord | None]:
        """An error record for each prompt that cannot fit the entry's ``max_context`` with its budget,
        counted with ``backend_options.tokenizer`` (the completions route, whose prompt is rendered here), as
        the offline backends screen theirs; ``None`` for the others (and for every prompt on the chat route,
        where the server renders the prompt: its own refusal is then that prompt's error row,
        :func:`prompt_error`)."""
        if self.tokenizer is None or self.spec.max_context is None or self.settings.endpoint != "completions":
            return [None] * len(prompts)
        from saltbench.inference.base import screen_prompts

        _, screened = screen_prompts(
            self.tokenizer,
            prompts,
            max_context=self.spec.max_context,
            max_new_tokens=budgets,
            top_k=self.top_k,
        )
        return screened

    def _log_usage(self, used: Usage, n_prompts: int, seconds: float) -> None:
        cost = used.cost(self.settings)
        log.info(
            "%s: %d prompts in %.1f s: %d requests (%d retries), %d from the cache, %d failed; %d prompt "
            "+ %d completion tokens%s",
            self.spec.name,
            n_prompts,
            seconds,
            used.requests,
            used.retries,
            used.cached,
            used.failed,
            used.prompt_tokens,
            used.completion_tokens,
            "" if cost is None else f", cost {cost:.4f}",
        )

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
        """The interventions' forced pass (:func:`saltbench.inference.hf.forced.force_and_continue`) through
        the completions endpoint of a server with prompt log-probabilities
        (``backend_options.prompt_logprobs``; docs/backends.md §8.5): per row, the continuation of
        ``prompt + x`` (token-id prompt, greedy, top-k, cut by ``stop`` afterwards as for vLLM) and the
        target's teacher-forced log-probabilities, the prompt log-probabilities of ``prompt + x + y``
        (``max_tokens`` 1). ``backend_options.concurrency`` requests
        in flight; the request cache lets a rerun skip the finished ones.

        Raises:
            NotImplementedError: the entry does not declare ``backend_options.prompt_logprobs`` (the
                configuration refuses such a model for the interventions before any job runs).
            RuntimeError: a request failed after its retries (naming it): an intervention shard is all or
                nothing, and a rerun sends only the requests that had not completed.
        """
        from saltbench.inference.detokenize import token_texts

        self._require_prompt_logprobs(max_new_tokens)
        prompt = [int(token) for token in prompt_ids]
        model = self.api_source.model
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
        """Refuse teacher forcing when the entry does not declare ``backend_options.prompt_logprobs``, or for
        a negative budget."""
        if not self.settings.prompt_logprobs:
            raise NotImplementedError(
                f"model {self.spec.name!r} (backend openai): teacher-forced prefixes need a completions "
                "endpoint with prompt log-probabilities (backend_options.prompt_logprobs)"
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
        (:meth:`_target_logprobs`), ``backend_options.concurrency`` requests in flight."""
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
        if not max_new_tokens:
            return TokenScores.empty(self.top_k), "length", 0
        body = {**base, "prompt": context, "max_tokens": max_new_tokens, "logprobs": self.top_k}
        decoder = self.decoder(context)
        parsed = self._fetch(
            body, lambda response: parse_completion(response, token_ids=True, decoder=decoder)
        )
        if isinstance(parsed, str):
            return parsed
        self.usage.add(prompt_tokens=parsed.prompt_tokens, completion_tokens=parsed.completion_tokens)
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
        """The EOS ids of ``backend_options.tokenizer``'s generation config (its tokenizer's EOS when it has
        none)."""
        if self.eos_ids is None:
            config = None
            try:
                from transformers import GenerationConfig

                config = GenerationConfig.from_pretrained(str(self.settings.tokenizer))
            except (OSError, ValueError):
                pass  # no generation_config.json beside the tokenizer
            self.eos_ids = generation_config_eos_ids(config, self.tokenizer)
        return self.eos_ids


def load_openai(spec: ModelSpec, *, batch_size: int, top_k: int, cache_dir: str | Path | None) -> OpenAIModel:
    """The client of a ``backend: openai`` entry (no request is sent): the key from
    ``backend_options.api_key_env``, the client's retries and timeout, the tokenizer of
    ``backend_options.tokenizer`` when named, the request cache.

    Raises:
        ApiKeyMissing: the named environment variable is not set.
        ValueError: ``top_k`` above the API's 20.
    """
    from openai import OpenAI

    settings, source = api_settings(spec), spec.source
    if not isinstance(source, ApiSource):
        raise ValueError(f"model {spec.name!r}: backend openai needs a source of kind 'api'")
    if not 1 <= top_k <= MAX_TOP_LOGPROBS:
        raise ValueError(f"top_k {top_k} outside 1..{MAX_TOP_LOGPROBS} (the OpenAI API's top_logprobs limit)")
    from saltbench.inference.openai.transport import http_client

    secret = api_key(settings, spec.name)
    usage = Usage()
    client = OpenAI(
        base_url=source.base_url,
        api_key=secret or "not-needed",
        max_retries=settings.max_retries,
        timeout=settings.timeout_s,
        http_client=http_client(settings.concurrency, lambda: usage.add(attempts=1)),
    )
    tokenizer = None
    if settings.tokenizer is not None:
        from saltbench.inference.chat import load_tokenizer

        tokenizer = load_tokenizer(settings.tokenizer)
    cache = RequestCache(Path(cache_dir)) if cache_dir is not None else None
    log.info(
        "%s: %s endpoint of %s, %d in flight, timeout %.0f s, %d retries",
        spec.name,
        settings.endpoint,
        source.base_url,
        settings.concurrency,
        settings.timeout_s,
        settings.max_retries,
    )
    return OpenAIModel(spec, tokenizer, client, batch_size, top_k, cache, secret, usage)


def load(
    model_path: str | Path,
    spec: ModelSpec,
    *,
    batch_size: int,
    top_k: int,
    cache_dir: str | Path | None,
    options: ApiSettings,
) -> OpenAIModel:
    """The ``openai`` backend's loader (entry point ``saltbench.backends:openai``): :func:`load_openai`, the
    client of the entry's served model (``model_path`` is its base URL, which the source names too). The
    ``options`` (:class:`~saltbench.inference.openai.options.ApiSettings`) are the entry's
    ``backend_options``, which the client reads from the entry (:func:`~.options.api_settings`)."""
    return load_openai(spec, batch_size=batch_size, top_k=top_k, cache_dir=cache_dir)


__all__ = [
    "MAX_TOP_LOGPROBS",
    "PROMPT_TOO_LONG",
    "Probe",
    "RequestRefused",
    "OpenAIModel",
    "load",
    "load_openai",
    "prompt_error",
    "refusal",
]
