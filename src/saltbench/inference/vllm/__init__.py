"""The ``vllm`` backend: one vLLM engine in this process, the same records as transformers
(docs/backends.md §3–5).

* :mod:`~saltbench.inference.vllm.model` — :class:`VllmModel` and its loader :func:`load` (the entry point
  ``saltbench.backends:vllm``);
* :mod:`~saltbench.inference.vllm.options` — :class:`VllmOptions`, the entry's ``backend_options``
  (shared with ``vllm_server``);
* :mod:`~saltbench.inference.vllm.engine` — starting the engine and generating through it;
* :mod:`~saltbench.inference.vllm.forced` — the interventions' forced pass through the engine.

The engine modules are imported when one of their names is first read (vLLM itself when an engine starts).
"""

from typing import TYPE_CHECKING

from saltbench.core.lazy import lazy_getattr
from saltbench.inference.vllm.model import VllmModel, load
from saltbench.inference.vllm.options import VllmOptions, vllm_options

__getattr__ = lazy_getattr(
    __name__,
    {
        "VllmEngine": "engine",
        "generate_vllm": "engine",
        "load_vllm": "engine",
        "vllm_force_and_continue": "forced",
    },
)

if TYPE_CHECKING:
    from saltbench.inference.vllm.engine import VllmEngine, generate_vllm, load_vllm
    from saltbench.inference.vllm.forced import vllm_force_and_continue

__all__ = [
    "VllmEngine",
    "VllmModel",
    "VllmOptions",
    "generate_vllm",
    "load",
    "load_vllm",
    "vllm_force_and_continue",
    "vllm_options",
]
