"""The real workflow on the single-node SLURM cluster: datasets -> one GPU-tagged inference shard on
SmolLM2 -> scoring -> metrics -> one figure, every job submitted with sbatch through profiles/slurm-ci."""

from __future__ import annotations

import re
import shutil
import subprocess
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


def test_a_workflow_managed_server_and_its_client_are_one_sbatch_job(
    slurm_cluster, run_snakemake_on_slurm, workdir
) -> None:
    """backend vllm_server on SLURM: the service job (vLLM's server) and its client shard are one group job,
    one sbatch submission, asking for the model's GPU once (the client asks for none); the server is stopped
    when the shard is done (docs/backends.md §8.6)."""
    pytest.importorskip("vllm", reason="vLLM is not installed")
    target = "data/generations/smollm2-135m/direct/dna/shard-0.parquet"
    config = yaml.safe_load((workdir / "tests/cluster/slice.yaml").read_text())
    config["inference"]["backend"] = "vllm_server"
    (workdir / "tests/cluster/slice-server.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake_on_slurm(
        workdir, [target], ["--configfile", "tests/cluster/slice-server.yaml"], timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert pl.read_parquet(workdir / target).height == 2
    submitted = re.findall(r"Job \S+ has been submitted with SLURM jobid (\d+)", proc.stdout)
    records = [_sacct_like(j) for j in submitted]
    grouped = [r for r in records if "serve_model" in r or "group" in r.lower()]
    assert len(grouped) == 1, proc.stdout[-4000:]
    assert re.search(r"TresPerJob=gres:gpu[:\w]*:1|TresPerJob=gres/gpu:1|gres:gpu:1", grouped[0]), grouped[0]
    server_log = (workdir / "logs/servers/smollm2-135m.log").read_text()
    assert "stopping the server (its consumers are done)" in server_log
