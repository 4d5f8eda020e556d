"""A fault-injecting HTTP proxy on 127.0.0.1 between the ``openai`` backend and a real server.

Every ``POST`` is forwarded to ``upstream`` (``http://host:port``) unless the next entry of ``faults`` says
otherwise, one entry consumed per request: ``"429"`` (answered here, ``Retry-After: 0``), ``"500"``
(answered here), ``"reset"`` (the connection closed without an answer), ``"truncated"`` (the upstream answer
cut in half), ``"stall"`` (the upstream answer sent after ``stall_s``, past the client's timeout),
``"hang"`` (no answer until :meth:`FaultProxy.release`). ``requests`` counts what arrived, ``faulted`` the
requests a fault met, ``answered`` the complete upstream answers passed on; ``bodies`` keeps every request
body that reached the proxy.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from typing import Any

from helpers.local_http import LocalHTTPServer


class FaultProxy(LocalHTTPServer):
    """The proxy, in a thread: ``base_url`` (``…/v1``), counters, ``faults`` (a list to fill)."""

    def __init__(self, upstream: str, stall_s: float = 3.0) -> None:
        self.upstream = upstream.removesuffix("/").removesuffix("/v1")
        self.stall_s = stall_s
        self.faults: list[str] = []
        self.requests = self.faulted = self.answered = 0
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _reply(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:  # noqa: N802 - the http.server hook
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with proxy._lock:
                    proxy.requests += 1
                    proxy.bodies.append(json.loads(body or b"{}"))
                    fault = proxy.faults.pop(0) if proxy.faults else None
                    proxy.faulted += fault is not None
                if fault == "reset":
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault in ("429", "500"):
                    headers = {"Retry-After": "0"} if fault == "429" else {}
                    self._reply(int(fault), b'{"error": {"message": "injected"}}', headers)
                    return
                if fault == "hang":
                    proxy._released.wait()
                    self.close_connection = True
                    return
                headers = {"Content-Type": "application/json"}
                if auth := self.headers.get("Authorization"):
                    headers["Authorization"] = auth
                request = urllib.request.Request(
                    proxy.upstream + self.path, data=body, headers=headers, method="POST"
                )
                try:
                    with urllib.request.urlopen(request, timeout=600) as response:
                        status, payload = response.status, response.read()
                except urllib.error.HTTPError as exc:
                    status, payload = exc.code, exc.read()
                if fault == "stall":
                    time.sleep(proxy.stall_s)
                if fault == "truncated":
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.close()
                    return
                self._reply(status, payload, {})
                with proxy._lock:
                    proxy.answered += fault is None

        self._serve(Handler)

    def release(self) -> None:
        """Let every ``"hang"`` request go (closed without an answer)."""
        self._released.set()

    def __exit__(self, *exc: object) -> None:
        self.release()
        super().__exit__(*exc)
