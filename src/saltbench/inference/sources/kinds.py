"""The source kinds of a registry entry (its ``source`` key, a tagged union on ``kind``): where a model's
weights, server or generations come from (docs/backends.md §1), and where each is found
(:meth:`location`, the path or id that the loaders take)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from saltbench.core.blocks import Block, Keywords, required, setting
from saltbench.core.vocabulary import ImportFormat
from saltbench.inference.simulated.params import SimulationParams

Text = Annotated[str, Keywords(pattern=r"\S")]
"""A string with at least one non-blank character."""


@dataclass(frozen=True, kw_only=True)
class GgufPackageSource(Block):
    """A GGUF file ``file`` inside the installed distribution ``package``."""

    package: Text = required("The installed Python distribution that ships the GGUF file.")
    file: Text = required("The GGUF file's name inside the distribution.")
    kind: Literal["gguf_package"] = setting("gguf_package", "Source kind.")

    def location(self, name: str, cache_dir: str | Path) -> Path:
        """The converted directory ``cache_dir / name`` (which may not exist yet)."""
        return Path(cache_dir) / name


@dataclass(frozen=True, kw_only=True)
class HubSource(Block):
    """A Hugging Face Hub repository ``id`` at ``revision``."""

    id: Text = required("The hub repository id (owner/name).")
    revision: Text = setting("main", "A branch, tag or commit of the repository.")
    kind: Literal["hub"] = setting("hub", "Source kind.")

    def location(self, name: str, cache_dir: str | Path) -> str:
        """The repository id (a string, not a path: ``from_pretrained`` downloads it)."""
        return self.id


@dataclass(frozen=True, kw_only=True)
class LocalSource(Block):
    """A ``save_pretrained`` directory on disk."""

    path: Text = required("A save_pretrained directory, relative to the workflow root.")
    kind: Literal["local"] = setting("local", "Source kind.")

    def location(self, name: str, cache_dir: str | Path) -> Path:
        """The directory (relative paths are resolved against the workflow root)."""
        return Path(self.path)


@dataclass(frozen=True, kw_only=True)
class ApiSource(Block):
    """A model behind an OpenAI-compatible HTTP API: ``base_url`` (``.../v1``, a trailing ``/`` dropped) and
    the served ``model`` name (``backend: openai``; no weights are loaded here)."""

    base_url: Annotated[str, Keywords(pattern=r"^https?://\S")] = required(
        "The server's OpenAI-compatible base URL, http(s)://.../v1."
    )
    model: Text = required("The model name the server serves.")
    kind: Literal["api"] = setting("api", "Source kind.")

    def __post_init__(self, _keys: tuple[str, ...] | None = None) -> None:
        """The base URL without a trailing ``/``."""
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))

    def location(self, name: str, cache_dir: str | Path) -> str:
        """The base URL."""
        return self.base_url


@dataclass(frozen=True, kw_only=True)
class SimulatedSource(Block):
    """A simulated model (``backend: simulated``, docs/simulation.md): the planted process with
    ``parameters``, answering the dataset rows in the folder ``datasets``."""

    parameters: SimulationParams = setting(SimulationParams, "The planted process (docs/simulation.md §2).")
    datasets: Text = setting("data/datasets", "The folder of the dataset rows it answers.")
    kind: Literal["simulated"] = setting("simulated", "Source kind.")

    def location(self, name: str, cache_dir: str | Path) -> Path:
        """The folder of the dataset rows."""
        return Path(self.datasets)


@dataclass(frozen=True, kw_only=True)
class GenerationsSource(Block):
    """Generations made elsewhere (docs/backends.md §9): the file at ``path`` in the import ``format``."""

    format: ImportFormat = required("salt_cache, jsonl or inspect (docs/backends.md §9).")
    path: Text = required("The file, relative to the workflow root.")
    kind: Literal["generations"] = setting("generations", "Source kind.")

    def location(self, name: str, cache_dir: str | Path) -> Path:
        """The file."""
        return Path(self.path)


ModelSource = GgufPackageSource | HubSource | LocalSource | ApiSource | SimulatedSource | GenerationsSource
OWN_BACKENDS = {"api": "openai", "simulated": "simulated"}
"""Source kinds that run only on one backend (which runs no other source kind)."""

__all__ = [
    "OWN_BACKENDS",
    "ApiSource",
    "GenerationsSource",
    "GgufPackageSource",
    "HubSource",
    "LocalSource",
    "ModelSource",
    "SimulatedSource",
]
