"""The options of the vLLM engine, shared by ``backend: vllm`` and ``backend: vllm_server`` (a registry
entry's ``backend_options``, docs/registry.md; docs/backends.md §3, §8.6). Imports no engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from saltbench.core.blocks import Block, Fraction, setting

if TYPE_CHECKING:
    from saltbench.inference.registry import ModelSpec

CPU_KVCACHE_GIB = 2
"""KV-cache size (GiB) for a CPU engine when ``VLLM_CPU_KVCACHE_SPACE`` is not set."""


@dataclass(frozen=True, kw_only=True)
class VllmOptions(Block):
    """The ``backend_options`` of a ``backend: vllm`` or ``vllm_server`` entry; each key's meaning is its
    description (docs/registry.md)."""

    float_values = True

    gpu_memory_utilization: Fraction = setting(0.9, "The share of each GPU's memory the engine may take.")
    enforce_eager: bool = setting(
        False, "Skip CUDA graphs and torch.compile (a faster start, slower decoding)."
    )


def vllm_options(spec: ModelSpec) -> VllmOptions:
    """The engine options of ``spec``: its ``backend_options`` when its backend is vLLM's (``vllm`` or
    ``vllm_server``), else the defaults (an entry of another backend that a run puts on vLLM,
    ``inference.backend``)."""
    options = spec.backend_options
    return options if isinstance(options, VllmOptions) else VllmOptions()


__all__ = ["CPU_KVCACHE_GIB", "VllmOptions", "vllm_options"]
