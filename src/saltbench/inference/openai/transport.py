"""The HTTP client under the ``openai`` backend's ``OpenAI`` client (docs/backends.md §8.2): the openai
package's own client and retries, with two additions.

* **A refused connection fails at once.** Nothing listens at the URL (a wrong port, a server not started):
  asking again with back-off costs ~22 s per shard and gives the same. The transport raises
  :class:`ConnectionRefused` — an ``openai.APIConnectionError``, which the openai client (3.x) re-raises as
  it is, without retrying (it retries only the HTTP library's errors) — and the backend stops the model
  naming the URL (:func:`refused_connection`; an openai version that retries it anyway ends with an
  ``APIConnectionError`` caused by the refusal, which stops the model the same way, after the retries).
  Other connection faults (a reset, a timeout, a truncated body) are retried by the client as before.
* **Every HTTP attempt is counted** by the HTTP client's request hook (``on_attempt``), retries included, so
  a job's summary counts the attempts of a request that the client finally gave up on
  (:class:`saltbench.inference.openai.usage.Usage`).

The HTTP library is the one the installed openai package is built on (``httpx2`` in openai 3, ``httpx``
before): the package of the base class of its ``DefaultHttpxClient`` (:func:`http_library`). Imported by
:func:`saltbench.inference.openai.client.load_openai` only (it imports ``openai``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import openai


class ConnectionRefused(openai.APIConnectionError):
    """Nothing accepts connections at the server's address: not retried (module docstring)."""

    def __init__(self, request: Any) -> None:
        """``request``: the refused request (its URL is named)."""
        url = request.url.copy_with(path="/", query=None)
        super().__init__(
            message=f"connection refused by {url} (is the server running, at this address and port?)",
            request=request,
        )


def refused_connection(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by, the operating system's "connection refused"."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (ConnectionRefusedError, ConnectionRefused)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def http_library() -> ModuleType:
    """The HTTP library (``httpx2`` or ``httpx``) of the installed openai package: the top-level package of
    the first base class of ``openai.DefaultHttpxClient`` that is not openai's own."""
    for base in openai.DefaultHttpxClient.__mro__:
        top = base.__module__.split(".", 1)[0]
        if top not in ("openai", "builtins"):
            return importlib.import_module(top)
    raise ImportError("cannot tell which HTTP library the openai package uses")


@functools.cache
def _fail_fast_transport() -> type:
    """The library's ``HTTPTransport`` raising :class:`ConnectionRefused` for a refused connection."""
    http = http_library()

    class FailFastTransport(http.HTTPTransport):  # type: ignore[name-defined]
        def handle_request(self, request: Any) -> Any:
            try:
                return super().handle_request(request)
            except http.ConnectError as exc:
                if refused_connection(exc):
                    raise ConnectionRefused(request) from exc
                raise

    return FailFastTransport


def http_client(concurrency: int, on_attempt: Callable[[], None]) -> Any:
    """The HTTP client of one ``OpenAI`` client: the openai package's defaults (its ``DefaultHttpxClient``),
    a fail-fast transport with a connection pool for ``concurrency`` requests in flight, and
    ``on_attempt()`` called before every attempt."""
    http = http_library()

    def hook(request: Any) -> None:
        on_attempt()

    pool = max(100, concurrency)
    transport = _fail_fast_transport()(
        limits=http.Limits(max_connections=pool, max_keepalive_connections=pool)
    )
    return openai.DefaultHttpxClient(transport=transport, event_hooks={"request": [hook]})


__all__ = ["ConnectionRefused", "http_client", "http_library", "refused_connection"]
