"""What the ``openai`` backend's requests used, and what that cost (docs/backends.md §8.3).

:class:`Usage` counts one client's prompt and completion tokens (from each response's ``usage``), requests
sent, HTTP attempts (every send, the client's retries included, counted by the HTTP client's own request
hook, so the attempts of a request the client finally gave up on count too), request-cache hits and failed
requests; each inference job logs the difference over its batch. With both prices of the registry entry
set (``backend_options.price_prompt_per_mtok``, ``backend_options.price_completion_per_mtok``, per million
tokens):

    cost = (prompt_tokens * price_prompt_per_mtok + completion_tokens * price_completion_per_mtok) / 1e6

and ``None`` when either price is unknown. The estimate made before any request is sent is
:mod:`saltbench.stages.cost`'s.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from saltbench.inference.openai.options import ApiSettings


@dataclass
class Usage:
    """What a batch of requests used: tokens, requests and their HTTP attempts, cache hits, failures, and the
    cost when priced. Thread-safe: requests run in a pool (:meth:`add`)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    attempts: int = 0
    cached: int = 0
    failed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        """Add ``counts`` (field name -> increment), atomically."""
        with self._lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    @property
    def retries(self) -> int:
        """HTTP attempts beyond the first of each request: the client's retries."""
        return max(0, self.attempts - self.requests)

    def counts(self) -> dict[str, int]:
        """The counters, by name."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def since(self, before: dict[str, int]) -> Usage:
        """What was used after ``before`` (a :meth:`counts`)."""
        used = Usage()
        used.add(**{name: n - before[name] for name, n in self.counts().items()})
        return used

    def cost(self, settings: ApiSettings) -> float | None:
        """Prompt and completion tokens times their prices per million (``None`` when a price is unknown)."""
        if settings.price_prompt_per_mtok is None or settings.price_completion_per_mtok is None:
            return None
        return (
            self.prompt_tokens * settings.price_prompt_per_mtok
            + self.completion_tokens * settings.price_completion_per_mtok
        ) / 1e6


__all__ = ["Usage"]
