"""The ``openai`` backend's on-disk request cache and its API key (docs/backends.md §8.2).

:class:`RequestCache` keeps every completed response, one JSON file per request at
``{root}/{key[:2]}/{key}.json``, where ``key = sha256(json.dumps({"base_url", "endpoint", "body"},
sort_keys=True))`` — the base URL (or what stands for it, docs/backends.md §8.6), the endpoint and the whole
request body, never the API key. Files are written atomically, so a killed shard, when rerun, sends only the
requests that had not completed.

The API key is read from the environment variable ``backend_options.api_key_env`` when the client is made
(:func:`api_key`; :class:`ApiKeyMissing` names the variable, never a value) and is never logged, hashed or
written; :func:`scrub` takes it out of error messages.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from saltbench.io import write_atomic

if TYPE_CHECKING:
    from saltbench.inference.openai.options import ApiSettings


class ApiKeyMissing(RuntimeError):
    """``backend_options.api_key_env`` names an environment variable that is not set."""


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
            f"model {model!r}: the environment variable {settings.api_key_env} (backend_options.api_key_env) "
            "is not set"
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


__all__ = ["ApiKeyMissing", "RequestCache", "api_key", "scrub"]
