"""The real workflow on the single-node SLURM cluster: datasets -> one GPU-tagged inference shard on
SmolLM2 -> scoring -> metrics -> one figure, every job submitted with sbatch through profiles/slurm-ci."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from saltbench.io import read_provenance

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
FIGURE = "figures/accuracy_by_task.pdf"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, copy_workflow) -> Path:
    root = copy_workflow(tmp_path_factory.mktemp("slurm-slice"), with_converted_smollm2=True)
    (root / "tests" / "cluster").mkdir(parents=True)
    for name in ("models-ci.yaml", "slice.yaml"):
        shutil.copy2(REPO / "tests" / "cluster" / name, root / "tests" / "cluster" / name)
    return root


def _sacct_like(job_id: str) -> str:
    return subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True).stdout


def test_workflow_slice_runs_through_sbatch(slurm_cluster, run_snakemake_on_slurm, workdir) -> None:
    proc = run_snakemake_on_slurm(
        workdir, [FIGURE], ["--configfile", "tests/cluster/slice.yaml"], timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert (workdir / FIGURE).stat().st_size > 0
    metrics = pl.read_parquet(workdir / "results/metrics/smollm2-135m/direct/dna.parquet")
    assert set(metrics["granularity"]) == {"atom", "line", "generation"}
    gens = pl.read_parquet(workdir / "data/generations/smollm2-135m/direct/dna.parquet")
    assert gens.height == 2 and read_provenance(workdir / "data/generations/smollm2-135m/direct/dna.parquet")
    # the inference job went through sbatch with a GPU request
    log = proc.stdout
    submitted = re.findall(r"Job \d+ has been submitted with SLURM jobid (\d+)", log)
    assert submitted, log[-4000:]
    gpu_jobs = [
        j for j in submitted if "gpu" in _sacct_like(j).lower() and "generate_shard" in _sacct_like(j)
    ]
    assert gpu_jobs, "no generate_shard job with a GPU request in scontrol: " + log[-3000:]
    record = _sacct_like(gpu_jobs[0])
    assert re.search(r"TresPerJob=gres:gpu[:\w]*:1|TresPerJob=gres/gpu:1|gres:gpu:1", record), record


SLOW_STOP = """# Loaded by every Python process of the test (PYTHONPATH): once
# saltbench.inference.server.serving is imported, ServerProcess.stop first sleeps STOP_DELAY_S, as a large
# vLLM engine slow to shut down does.
import importlib.abc
import importlib.machinery
import sys
import time

STOP_DELAY_S = 10


class _SlowStop(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "saltbench.inference.server.serving":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            stop = module.ServerProcess.stop

            def slow_stop(self, *args, **kwargs):
                time.sleep(STOP_DELAY_S)
                return stop(self, *args, **kwargs)

            module.ServerProcess.stop = slow_stop

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _SlowStop())
"""


@pytest.fixture()
def busy_cores():
    """Both cores of the machine kept busy by two spinning processes while the test runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield
    for spinner in spinners:
        spinner.kill()
        spinner.wait()


@pytest.mark.parametrize("slow_stop", [False, True], ids=["prompt_stop", "slow_stop_busy_cores"])
def test_a_workflow_managed_server_and_its_client_are_one_sbatch_job(
    slurm_cluster, run_snakemake_on_slurm, workdir, tmp_path, request, slow_stop
) -> None:
    """backend vllm_server on SLURM: the service job (vLLM's server) and its client shard are one group job,
    one sbatch submission, asking for the model's GPU once (the client asks for none); the server is stopped
    when the shard is done (docs/backends.md §8.6). The group job succeeds and the shard stays, also when the
    server takes 10 s to stop while both cores are busy (docs/reliability.md §2.3): a service job owns no
    output that appears only after it is stopped."""
    pytest.importorskip("vllm", reason="vLLM is not installed")
    target = "data/generations/smollm2-135m/direct/dna/shard-0.parquet"
    for stale in (workdir / target, workdir / "logs/servers/smollm2-135m.log"):
        stale.unlink(missing_ok=True)  # the module's workdir is shared by the parametrised runs
    config = yaml.safe_load((workdir / "tests/cluster/slice.yaml").read_text())
    config["inference"]["backend"] = "vllm_server"
    (workdir / "tests/cluster/slice-server.yaml").write_text(yaml.safe_dump(config))
    env = {}
    if slow_stop:
        (tmp_path / "sitecustomize.py").write_text(SLOW_STOP)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
        request.getfixturevalue("busy_cores")
    proc = run_snakemake_on_slurm(
        workdir, [target], ["--configfile", "tests/cluster/slice-server.yaml"], timeout=900, env=env
    )
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert "Removing output files of failed job" not in proc.stdout
    assert pl.read_parquet(workdir / target).height == 2
    submitted = re.findall(r"Job \S+ has been submitted with SLURM jobid (\d+)", proc.stdout)
    records = [_sacct_like(j) for j in submitted]
    grouped = [r for r in records if "serve_model" in r]  # the group job's log path names its rules
    assert len(grouped) == 1, proc.stdout[-4000:]
    assert re.search(r"TresPerJob=gres:gpu[:\w]*:1|TresPerJob=gres/gpu:1|gres:gpu:1", grouped[0]), grouped[0]
    server_log = (workdir / "logs/servers/smollm2-135m.log").read_text()
    assert "stopping the server (its consumers are done)" in server_log
