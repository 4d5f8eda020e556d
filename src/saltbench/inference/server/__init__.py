"""The ``vllm_server`` backend: one vLLM server per model, started by the workflow's rule ``serve_model``,
and its clients (docs/backends.md §8.6).

:mod:`~saltbench.inference.server.serving` holds the loader :func:`load` (the entry point
``saltbench.backends:vllm_server``), the client :class:`ManagedServerModel` (the ``openai`` backend's client
that fails its job when the server is gone), the endpoint file (:class:`Endpoint`), the server process
(:class:`ServerProcess`, also for benchmarks and tests) and the server's command line. Its options are the
offline engine's (:class:`~saltbench.inference.vllm.options.VllmOptions`). Imports neither torch nor vLLM.
"""

from saltbench.inference.server.serving import (
    Endpoint,
    ManagedServerModel,
    ServerError,
    ServerProcess,
    connect,
    free_port,
    load,
    serve_command,
    served_spec,
)

__all__ = [
    "Endpoint",
    "ManagedServerModel",
    "ServerError",
    "ServerProcess",
    "connect",
    "free_port",
    "load",
    "serve_command",
    "served_spec",
]
