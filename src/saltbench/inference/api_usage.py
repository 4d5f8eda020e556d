"""What the ``openai`` backend's requests used, and what that cost (docs/backends.md §8.3).

:class:`Usage` counts one client's prompt and completion tokens (from each response's ``usage``), requests
sent, the client's retries, request-cache hits and failed requests; each inference job logs the difference
over its batch. With both prices of the registry entry set (``api.price_prompt_per_mtok``,
``api.price_completion_per_mtok``, per million tokens):

    cost = (prompt_tokens * price_prompt_per_mtok + completion_tokens * price_completion_per_mtok) / 1e6

and ``None`` when either price is unknown. The estimate made before any request is sent is
:mod:`saltbench.stages.cost`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from saltbench.inference.registry import ApiSettings


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


__all__ = ["Usage"]
