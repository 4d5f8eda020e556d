"""One workflow-managed vLLM server per model (``backend: vllm_server``; docs/backends.md §8.6), for real:
the service job starts vLLM's server for SmolLM2, the model's inference and intervention jobs run as its
clients beside it, and it is stopped when they are done. The server is killed mid-run: its clients fail
naming it, nothing is left running, and the rerun completes, sending again only what had not completed; a
shard that had finished before the kill — deleted by Snakemake with every output of the failed group job —
comes back from its kept copy (docs/reliability.md §2.3)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

pytestmark = [pytest.mark.workflow, pytest.mark.slow, pytest.mark.model, pytest.mark.vllm]

MODEL = "smollm2-135m"
TARGETS = [
    f"data/generations/{MODEL}/direct/dna.parquet",
    f"data/generations/{MODEL}/direct/matmul.parquet",
    f"data/interventions/{MODEL}/dna.parquet",
]


def _config(repo_root: Path) -> dict:
    cfg = yaml.safe_load((repo_root / "config" / "test.yaml").read_text())
    cfg["inference"].update(backend="vllm_server", shard_size=3)
    cfg["datasets"]["n_samples"] = 6
    cfg["interventions"] = {"enabled": True, "tasks": ["dna"], "samples_per_task": 2, "shard_size": 1}
    return cfg


def _server_processes(workdir: Path, pattern: str = "vllm.entrypoints.openai.api_server") -> list[int]:
    """Pids of vLLM servers (``pattern``: or of any vLLM process) running in ``workdir``."""
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    pids = []
    for pid in found.stdout.split():
        try:
            if Path(f"/proc/{pid}/cwd").resolve() == workdir.resolve():
                pids.append(int(pid))
        except OSError:
            pass
    return pids


def _cache_files(workdir: Path) -> list[Path]:
    return [p for p in (workdir / "data").glob(f"*/{MODEL}/.requests/**/*.json") if p.is_file()]


def _kept_shards(workdir: Path) -> list[Path]:
    return sorted((workdir / "data").glob(f"*/{MODEL}/**/.kept/shard-*.parquet"))


def _snakemake(workdir: Path, configfile: Path) -> list[str]:
    return [sys.executable, "-m", "snakemake", *TARGETS, "--cores", "2", "--configfile", str(configfile)]


def test_one_server_per_model_serves_its_jobs_and_a_killed_server_is_resumed(
    tmp_path, copy_workflow, repo_root
):
    pytest.importorskip("vllm", reason="vLLM is not installed")
    (tmp_path / "workflow").mkdir()
    workdir = copy_workflow(tmp_path / "workflow", with_converted_smollm2=True)
    configfile = workdir / "config" / "managed.yaml"
    configfile.write_text(yaml.safe_dump(_config(repo_root)))
    endpoint_file = workdir / "data" / "servers" / f"{MODEL}.json"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}

    # first run: the server is SIGKILLed once one client has finished its shard and others have completed
    # some requests
    with (tmp_path / "first.log").open("w") as out:
        first = subprocess.Popen(
            _snakemake(workdir, configfile), cwd=workdir, stdout=out, stderr=subprocess.STDOUT, env=env
        )
        deadline = time.monotonic() + 900
        while first.poll() is None and time.monotonic() < deadline:
            if _kept_shards(workdir) and _cache_files(workdir):
                break
            time.sleep(0.2)
        assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
        endpoint = json.loads(endpoint_file.read_text())
        assert endpoint["base_url"].startswith("http://127.0.0.1:")
        (server_pid,) = _server_processes(workdir)
        os.kill(server_pid, signal.SIGKILL)
        assert first.wait(timeout=600) != 0
    logs = workdir / "logs"
    client_logs = "".join(p.read_text() for p in logs.glob(f"*/{MODEL}/**/*.log"))
    assert re.search(rf"ServerError: the (vLLM server|service job) of model '{MODEL}'", client_logs)
    assert "rerun the workflow to resume" in client_logs or "is no longer running" in client_logs
    assert not _server_processes(workdir, "vllm.entrypoints|VLLM::")  # nothing left behind, engines included
    kept = {p.name for p in _cache_files(workdir) if "/generations/" in str(p)}
    finished = _kept_shards(workdir)
    assert finished, (tmp_path / "first.log").read_text()[-3000:]
    # Snakemake removed the finished shards with the failed group job's other outputs; their copies stay
    assert "Removing output files of failed job" in (tmp_path / "first.log").read_text()
    assert not any((p.parent.parent / p.name).exists() for p in finished)

    # the rerun: a new server; the requests completed before the kill come from the request cache
    second = subprocess.run(
        _snakemake(workdir, configfile), cwd=workdir, capture_output=True, text=True, timeout=900, env=env
    )
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    generation_logs = "".join(p.read_text() for p in (logs / "generations" / MODEL).rglob("*.log"))
    from_cache = sum(int(n) for n in re.findall(r"(\d+) from the cache", generation_logs))
    assert from_cache == len(kept)  # what had completed is not sent again
    for copy in finished:  # a finished shard is not generated again
        output = copy.parent.parent / copy.name
        assert f"restored {output.relative_to(workdir)} from its kept copy" in generation_logs + "".join(
            p.read_text() for p in (logs / "interventions" / MODEL).rglob("*.log")
        )
    assert all((p.parent.parent / p.name).exists() for p in _kept_shards(workdir))
    server_log = (logs / "servers" / f"{MODEL}.log").read_text()
    assert "stopping the server (its consumers are done)" in server_log
    assert not endpoint_file.exists() and not _server_processes(workdir, "vllm.entrypoints|VLLM::")
    assert not _cache_files(workdir)  # every shard written, its requests removed
    for task in ("dna", "matmul"):
        frame = pl.read_parquet(workdir / f"data/generations/{MODEL}/direct/{task}.parquet")
        assert frame.height == 6 and "error" not in frame["finish_reason"].to_list()
        assert (frame["num_generated_tokens"] > 0).all()
    interventions = pl.read_parquet(workdir / f"data/interventions/{MODEL}/dna.parquet")
    assert interventions.height > 0 and interventions["tf_logprob_correct"].is_not_nan().all()
