"""The ``openai`` backend: a served or hosted model through its OpenAI-compatible API (docs/backends.md §8).

* :mod:`~saltbench.inference.openai.client` — :class:`OpenAIModel`, its loader :func:`load` (the entry point
  ``saltbench.backends:openai``), the refusals and the preflight's :class:`Probe`;
* :mod:`~saltbench.inference.openai.options` — :class:`ApiSettings`, the entry's ``backend_options``;
* :mod:`~saltbench.inference.openai.responses` — API responses → generation records (token texts, string
  ids, padding, reasoning returned apart);
* :mod:`~saltbench.inference.openai.cache` — the on-disk request cache, the API key and its scrubbing;
* :mod:`~saltbench.inference.openai.usage` — tokens, requests, retries, cache hits and cost;
* :mod:`~saltbench.inference.openai.transport` — the HTTP client under the ``openai`` client.

The options are imported with the package; the client when one of its names is first read (the ``openai``
library when a client is made). Imports no torch.
"""

from typing import TYPE_CHECKING

from saltbench.core.lazy import lazy_getattr
from saltbench.inference.openai.options import ApiSettings, api_settings

__getattr__ = lazy_getattr(
    __name__,
    {
        "MAX_TOP_LOGPROBS": "client",
        "OpenAIModel": "client",
        "Probe": "client",
        "RequestRefused": "client",
        "load": "client",
        "load_openai": "client",
    },
)

if TYPE_CHECKING:
    from saltbench.inference.openai.client import (
        MAX_TOP_LOGPROBS,
        OpenAIModel,
        Probe,
        RequestRefused,
        load,
        load_openai,
    )

__all__ = [
    "MAX_TOP_LOGPROBS",
    "ApiSettings",
    "OpenAIModel",
    "Probe",
    "RequestRefused",
    "api_settings",
    "load",
    "load_openai",
]
