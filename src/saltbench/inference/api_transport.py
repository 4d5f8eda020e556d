"""The HTTP client under the ``openai`` backend's ``OpenAI`` client (docs/backends.md §8.2): the openai
package's own client and retries, with two additions.

* **A refused connection fails at once.** Nothing listens at the URL (a wrong port, a server not started):
  asking again with back-off costs ~22 s per shard and gives the same. The transport raises
  :class:`ConnectionRefused` — an ``openai.APIConnectionError``, which the openai client re-raises as it is,
  without retrying (it retries only the HTTP library's errors) — and the backend stops the model naming the
  URL. Other connection faults (a reset, a timeout, a truncated body) are retried by the client as before.
* **Every HTTP attempt is counted** by the HTTP client's request hook (``on_attempt``), retries included, so
  a job's summary counts the attempts of a request that the client finally gave up on
  (:class:`saltbench.inference.api_usage.Usage`).

Imported by :func:`saltbench.inference.openai_api.load_openai` only (it imports ``openai`` and ``httpx2``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import openai


class ConnectionRefused(openai.APIConnectionError):
    """Nothing accepts connections at the server's address: not retried (module docstring)."""

    def __init__(self, request: httpx2.Request) -> None:
        """``request``: the refused request (its URL is named)."""
        url = request.url.copy_with(path="/", query=None)
        super().__init__(
            message=f"connection refused by {url} (is the server running, at this address and port?)",
            request=request,
        )


def _refused(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is the operating system's "connection refused"."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class FailFastTransport(httpx2.HTTPTransport):
    """``httpx2.HTTPTransport`` raising :class:`ConnectionRefused` for a refused connection."""

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request``; a refused connection becomes :class:`ConnectionRefused`."""
        try:
            return super().handle_request(request)
        except httpx2.ConnectError as exc:
            if _refused(exc):
                raise ConnectionRefused(request) from exc
            raise


def http_client(concurrency: int, on_attempt: Callable[[], None]) -> Any:
    """The HTTP client of one ``OpenAI`` client: the openai package's defaults (its ``DefaultHttpxClient``),
    a :class:`FailFastTransport` with a connection pool for ``concurrency`` requests in flight, and
    ``on_attempt()`` called before every attempt."""

    def hook(request: httpx2.Request) -> None:
        on_attempt()

    pool = max(100, concurrency)
    transport = FailFastTransport(limits=httpx2.Limits(max_connections=pool, max_keepalive_connections=pool))
    return openai.DefaultHttpxClient(transport=transport, event_hooks={"request": [hook]})


__all__ = ["ConnectionRefused", "FailFastTransport", "http_client"]
