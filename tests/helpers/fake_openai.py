"""A small OpenAI-compatible server on 127.0.0.1 for the ``openai`` backend's tests, with injectable faults.

Answers ``POST /v1/chat/completions`` and ``POST /v1/completions`` deterministically from the request: the
answer is :data:`ANSWER` cut to ``max_tokens`` tokens (one token per character, except ``é``, sent as two
byte tokens), each with log-probability ``-0.1 * (i + 1)`` and :data:`N_ALTERNATIVES` alternatives (fewer
than the 20 asked for, so the client pads). ``faults`` is a list of what the next requests meet, one entry
consumed per request: ``"429"`` (with ``Retry-After: 0``), ``"500"``, ``"400"`` (a refusal), ``"reset"``
(the connection closed without an answer), ``"truncated"`` (half a body), ``"stall"`` (an answer after
``stall_s``), ``"nologprobs"`` (a 200 without log-probabilities). Every request is counted and its
``Authorization`` header and body kept. A chat request with ``n`` gets ``n`` choices (the draws), but one
under the fault ``"ignore_n"``.
``GET /health`` answers 200 while ``healthy`` is true (as vLLM's server does).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from helpers.local_http import LocalHTTPServer

ANSWER = "********\nCAé TAC\n********"
N_ALTERNATIVES = 3


def _tokens(text: str) -> list[tuple[str, list[int]]]:
    """(token string, bytes) per token: one per character, ``é`` as two tokens of one byte each."""
    out: list[tuple[str, list[int]]] = []
    for ch in text:
        raw = list(ch.encode("utf-8"))
        if len(raw) > 1:
            out += [(f"bytes:\\x{b:02x}", [b]) for b in raw]
        else:
            out.append((ch, raw))
    return out


def _answer(max_tokens: int) -> tuple[list[tuple[str, list[int]]], str]:
    tokens = _tokens(ANSWER)
    finish = "stop" if max_tokens >= len(tokens) else "length"
    return tokens[:max_tokens], finish


def chat_response(body: dict[str, Any], *, logprobs: bool = True) -> dict[str, Any]:
    """One choice, or with ``n`` that many (choice ``i`` cut ``i`` tokens shorter, ``seed`` mod 3 more)."""
    n, shift = int(body.get("n") or 1), int(body.get("seed") or 0) % 3
    if n > 1:
        drawn = [
            chat_response({**body, "n": 1, "max_tokens": int(body["max_tokens"]) - i - shift})
            for i in range(n)
        ]
        choices = [{**r["choices"][0], "index": i} for i, r in enumerate(drawn)]
        used = sum(r["usage"]["completion_tokens"] for r in drawn)
        return {
            **drawn[0],
            "choices": choices[::-1],
            "usage": {"prompt_tokens": 7, "completion_tokens": used},
        }
    tokens, finish = _answer(int(body["max_tokens"]))
    content = []
    for i, (tok, raw) in enumerate(tokens):
        alts = [{"token": tok, "logprob": -0.1 * (i + 1), "bytes": raw}]
        alts += [
            {"token": f"alt{j}", "logprob": -5.0 - j, "bytes": list(f"alt{j}".encode())}
            for j in range(1, N_ALTERNATIVES)
        ]
        content.append({"token": tok, "logprob": -0.1 * (i + 1), "bytes": raw, "top_logprobs": alts})
    text = b"".join(bytes(raw) for _, raw in tokens).decode("utf-8", errors="replace")
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": finish,
    }
    choice["logprobs"] = {"content": content} if logprobs else None
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [choice],
        "usage": {"prompt_tokens": 7, "completion_tokens": len(tokens), "total_tokens": 7 + len(tokens)},
    }


def completion_response(body: dict[str, Any]) -> dict[str, Any]:
    chars = [c for c in ANSWER][: int(body["max_tokens"])]
    finish = "stop" if int(body["max_tokens"]) >= len(ANSWER) else "length"
    text = "".join(chars)
    offsets = [len(body["prompt"]) + i for i in range(len(chars))]
    tops = [
        {c: -0.1 * (i + 1), **{f"alt{j}": -5.0 - j for j in range(1, N_ALTERNATIVES)}}
        for i, c in enumerate(chars)
    ]
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "text": text,
                "finish_reason": finish,
                "logprobs": {
                    "tokens": chars,
                    "token_logprobs": [-0.1 * (i + 1) for i in range(len(chars))],
                    "text_offset": offsets,
                    "top_logprobs": tops,
                },
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": len(chars), "total_tokens": 7 + len(chars)},
    }


class FakeOpenAI(LocalHTTPServer):
    """The server, in a thread: ``base_url``, ``requests`` (count), ``auth`` (headers seen), ``faults``."""

    def __init__(self, stall_s: float = 3.0) -> None:
        self.requests = 0
        self.auth: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        self.faults: list[str] = []
        self.stall_s = stall_s
        self.healthy = True
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - the http.server hook
                status = 200 if self.path == "/health" and server.healthy else 404
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802 - the http.server hook
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests += 1
                    server.auth.append(self.headers.get("Authorization", ""))
                    server.bodies.append(body)
                    fault = server.faults.pop(0) if server.faults else None
                if fault == "reset":
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault in ("429", "500", "400"):
                    self.send_response(int(fault))
                    if fault == "429":
                        self.send_header("Retry-After", "0")
                    payload = b'{"error": {"message": "try again"}}'
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault == "ignore_n":
                    body = {**body, "n": 1}
                if self.path.endswith("/chat/completions"):
                    answer = chat_response(body, logprobs=fault != "nologprobs")
                else:
                    answer = completion_response(body)
                payload = json.dumps(answer).encode()
                if fault == "stall":
                    time.sleep(server.stall_s)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if fault == "truncated":
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.connection.close()
                    return
                self.wfile.write(payload)

        self._serve(Handler)
