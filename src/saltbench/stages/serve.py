"""The rule ``serve_model``: one model's vLLM server for as long as its consumers run (docs/backends.md §8.6).

Run by the workflow as a Snakemake service job (``exec``-ed, so Snakemake's SIGTERM reaches this process)::

    python -m saltbench.stages.serve REGISTRY MODEL MODEL_PATH ENDPOINT_FILE --log LOG --threads N

The rule's shell writes ``{"model", "pid"}`` to ``ENDPOINT_FILE`` first. This starts the server
(:class:`saltbench.inference.server.serving.ServerProcess`, its output appended to ``LOG``), writes
``ENDPOINT_FILE`` once ``/health`` answers, and waits. SIGTERM or SIGINT (Snakemake, when the last
consumer is done) stops the server and exits 0; a server that exits by itself exits with its code (its
consumers, finding no live server, fail naming the log). A server that cannot start writes the reason into
``ENDPOINT_FILE`` (consumers fail at once with it) and exits 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from saltbench.inference import get_model_spec, load_model_registry
from saltbench.inference.server.serving import Endpoint, ServerError, ServerProcess

log = logging.getLogger("saltbench.rule.serve_model")


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until stopped; the exit status as described in the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("registry", help="the model registry (config/models.yaml)")
    parser.add_argument("model", help="a model name of the registry")
    parser.add_argument("model_path", help="the model's files (what the inference jobs would load)")
    parser.add_argument("endpoint", help="the endpoint file to write once the server is healthy")
    parser.add_argument("--log", required=True, help="the server's log file")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads of a CPU build's engine")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spec = get_model_spec(load_model_registry(args.registry), args.model)
    server = ServerProcess(args.model_path, spec, Path(args.log), num_threads=args.threads)

    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Stopped(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        try:
            server.start()
        except ServerError as exc:
            log.error("%s", exc)
            Endpoint(spec.name, os.getpid(), log=args.log, error=str(exc)).write(args.endpoint)
            return 1
        dataclasses.replace(server.endpoint(), pid=os.getpid()).write(args.endpoint)
        log.info("%s: serving on %s; endpoint file %s", spec.name, server.base_url, args.endpoint)
        assert server.proc is not None
        code = server.proc.wait()
        log.error("%s: the vLLM server exited by itself with code %s (log %s)", spec.name, code, args.log)
        return int(code) or 1
    except _Stopped as why:
        log.info("%s: %s: stopping the server (its consumers are done)", spec.name, why)
        return 0
    finally:
        server.stop()


class _Stopped(Exception):
    """SIGTERM or SIGINT arrived."""


if __name__ == "__main__":
    sys.exit(main())
