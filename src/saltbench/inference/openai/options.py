"""The options of the ``openai`` backend: a registry entry's ``backend_options`` (docs/registry.md,
docs/backends.md §8), the client's settings. Imports no client."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from saltbench.core.blocks import Block, Count, Keywords, PositiveInt, setting
from saltbench.core.vocabulary import ApiEndpoint, DrawSupport

if TYPE_CHECKING:
    from saltbench.inference.registry import ModelSpec

Text = Annotated[str, Keywords(pattern=r"\S")]
"""A string with at least one non-blank character."""


@dataclass(frozen=True, kw_only=True)
class ApiSettings(Block):
    """The ``backend_options`` of a ``backend: openai`` entry (docs/backends.md §8); each key's meaning is its
    description (docs/registry.md)."""

    float_values = True

    api_key_env: Annotated[str, Keywords(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = setting(
        None,
        "The environment variable holding the API key (never the key itself); null: no key, as for a local "
        "server.",
    )
    endpoint: ApiEndpoint = setting("chat", "chat or completions.")
    concurrency: PositiveInt = setting(8, "Requests in flight.")
    timeout_s: Annotated[float, Keywords(exclusiveMinimum=0)] = setting(600.0, "Seconds per request.")
    max_retries: Count = setting(
        6, "The client's retries (429 honouring Retry-After, 5xx, timeouts, dropped connections)."
    )
    token_ids: bool = setting(
        False, "Ask for token ids (vLLM's return_tokens_as_token_ids; otherwise ids are recorded as -1)."
    )
    tokenizer: Text | None = setting(
        None,
        "A local directory or hub id: renders the chat template for the completions endpoint, decodes token "
        "ids and counts prompt tokens for cost estimates.",
    )
    prompt_logprobs: bool = setting(
        False,
        "The server returns prompt log-probabilities and takes token-id prompts (vLLM), so the interventions "
        "can teacher-force a prefix through it (needs endpoint: completions and token_ids).",
    )
    draws: DrawSupport = setting(
        "seeded",
        "What the API takes for inference.samples: seeded (the n and seed request parameters, as vLLM's "
        "server and the OpenAI API), unseeded (n without seed) or none (neither); a run with draws needs "
        "seeded. Whether a server honours the seed is its own: vLLM's does, the OpenAI API's is best "
        "effort (docs/generation.md §7).",
    )
    price_prompt_per_mtok: Annotated[float, Keywords(minimum=0)] | None = setting(
        None, "Price per million prompt tokens (null: unknown)."
    )
    price_completion_per_mtok: Annotated[float, Keywords(minimum=0)] | None = setting(
        None, "Price per million completion tokens (null: unknown)."
    )

    def problems(self, spec: ModelSpec) -> Iterator[tuple[str, str]]:
        """``(key, message)`` of each combination of keys that cannot work, for the entry ``spec``
        (:meth:`saltbench.inference.registry.ModelSpec.check` names them ``backend_options.KEY``)."""
        if self.token_ids and self.tokenizer is None:
            yield (
                "tokenizer",
                "with backend_options.token_ids the token texts are decoded from the ids: name the tokenizer "
                "(a local directory or hub id)",
            )
        if self.prompt_logprobs and (self.endpoint != "completions" or not self.token_ids):
            yield (
                "prompt_logprobs",
                "teacher-forcing through the server sends token-id prompts to the completions endpoint and "
                "reads token ids back: set backend_options.endpoint: completions and "
                "backend_options.token_ids: true",
            )
        if self.endpoint == "completions" and self.tokenizer is None:
            yield (
                "tokenizer",
                "the completions endpoint takes a rendered prompt: name the tokenizer whose chat template "
                "renders it (a local directory or hub id)",
            )
        if spec.reasoning_format == "harmony" and self.endpoint == "completions" and not self.token_ids:
            yield (
                "token_ids",
                "gpt-oss's harmony channels are special tokens, which a server's completions text and token "
                "strings drop: set backend_options.token_ids: true (with backend_options.tokenizer), so that "
                "the token texts are decoded here with the channel markers (docs/reasoning.md §4)",
            )


def api_settings(spec: ModelSpec) -> ApiSettings:
    """The client settings of ``spec``: its ``backend_options`` on ``backend: openai``, else the defaults."""
    options = spec.backend_options
    return options if isinstance(options, ApiSettings) else ApiSettings()


__all__ = ["ApiSettings", "api_settings"]
