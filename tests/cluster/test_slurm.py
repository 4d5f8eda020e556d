"""Cluster execution tested for real: Snakemake + snakemake-executor-plugin-slurm on a local SLURM cluster.

The cluster tests (marker ``cluster``) run a small self-contained workflow written into a temporary
directory through ``profiles/slurm-ci``: a GPU job and a CPU job submitted with sbatch (run 1), a job that
fails on purpose and must make Snakemake exit promptly with the SLURM failure (run 2), and the fixed
rerun, which must resubmit only that job (run 3). The profile tests need no cluster.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
USER_PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
CI_PROFILE = REPO / "profiles" / "slurm-ci" / "config.yaml"

# Each job writes KEY=VALUE lines: what SLURM gave it (environment) and what slurmctld recorded.
_RECORD = (
    '{{ echo "SLURM_JOB_ID=${{SLURM_JOB_ID:-}}"; '
    'echo "SLURM_JOB_PARTITION=${{SLURM_JOB_PARTITION:-}}"; '
    'echo "SLURM_JOB_GPUS=${{SLURM_JOB_GPUS:-}}"; '
    'echo "CUDA_VISIBLE_DEVICES=${{CUDA_VISIBLE_DEVICES:-}}"; '
    "scontrol show job \"$SLURM_JOB_ID\" | tr ' ' '\\n' | grep -E '^(TresPerJob|TresPerNode|NumCPUs)=' "
    "|| true; }} > {output}"
)

SNAKEFILE = f"""
GPU_TYPE = config["gpu_type"]

rule all:
    input: "gpu.txt", "cpu.txt"

# one untyped GPU, like a registry model with gpus: 1, gpu_model: null
rule gpu_job:
    output: "gpu.txt"
    resources: gpu=1, mem_mb=300, runtime=5
    shell: {_RECORD!r}

rule cpu_job:
    output: "cpu.txt"
    threads: 1
    shell: {_RECORD!r}

# a typed GPU (gpu_model); fails until fixed.flag exists. The marker is printed only when the command runs.
rule report:
    input: "gpu.txt", "cpu.txt"
    output: "report.txt"
    resources: gpu=1, gpu_model=GPU_TYPE
    shell: "test -e fixed.flag || {{{{ echo deliberate-failure-$((40+2)) >&2; exit 3; }}}}; " + {_RECORD!r}
"""

RUN_TIMEOUT_S = 300  # one run; a few SLURM jobs take well under a minute each
FAIL_TIMEOUT_S = 180  # the failing run must end by itself well before this


def _record(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key: value for key, value in pairs}


def _job_stats(output: str) -> dict[str, int]:
    """Rule -> job count from Snakemake's first "Job stats" table."""
    table = output.split("Job stats:", 1)[1].split("total", 1)[0]
    rows = (line.split() for line in table.splitlines())
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[1].isdigit()}


def _explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"snakemake exited {proc.returncode}; output tail:\n{proc.stdout[-6000:]}"


@dataclass(frozen=True)
class FirstRun:
    workdir: Path
    proc: subprocess.CompletedProcess[str]
    seconds: float


@pytest.fixture(scope="module")
def first_run(
    slurm_cluster, run_snakemake_on_slurm, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FirstRun]:
    """Run 1: the GPU job and the CPU job through sbatch (module scope: later runs resume from it)."""
    workdir = tmp_path_factory.mktemp("slurm_wf")
    (workdir / "Snakefile").write_text(SNAKEFILE)
    start = time.monotonic()
    proc = run_snakemake_on_slurm(
        workdir, ["all"], ["--config", f"gpu_type={slurm_cluster.gpu_type}"], timeout=RUN_TIMEOUT_S
    )
    yield FirstRun(workdir, proc, time.monotonic() - start)


@pytest.mark.cluster
def test_jobs_run_through_sbatch_and_gpu_request_reaches_slurm(first_run: FirstRun, slurm_cluster) -> None:
    assert first_run.proc.returncode == 0, _explain(first_run.proc)
    assert _job_stats(first_run.proc.stdout) == {"all": 1, "cpu_job": 1, "gpu_job": 1}
    gpu = _record(first_run.workdir / "gpu.txt")
    cpu = _record(first_run.workdir / "cpu.txt")
    # both ran as SLURM batch jobs, separate ones, in the profile's partition
    assert gpu["SLURM_JOB_ID"].isdigit() and cpu["SLURM_JOB_ID"].isdigit()
    assert gpu["SLURM_JOB_ID"] != cpu["SLURM_JOB_ID"]
    assert gpu["SLURM_JOB_PARTITION"] == cpu["SLURM_JOB_PARTITION"] == slurm_cluster.partition
    # resources: gpu=1 became --gpus=1: slurmctld recorded it and the job saw exactly one device
    assert gpu["TresPerJob"] == "gres:gpu:1"
    assert gpu["CUDA_VISIBLE_DEVICES"] in {str(i) for i in range(slurm_cluster.n_gpus)}
    # the CPU job asked for no GPU and got none
    assert "TresPerJob" not in cpu and "TresPerNode" not in cpu
    assert cpu["CUDA_VISIBLE_DEVICES"] == ""
    assert cpu["NumCPUs"] == "1"


@pytest.mark.cluster
def test_failing_job_is_reported_and_rerun_resumes(
    first_run: FirstRun, run_snakemake_on_slurm, slurm_cluster
) -> None:
    assert first_run.proc.returncode == 0, _explain(first_run.proc)
    workdir = first_run.workdir
    gpu_before = (workdir / "gpu.txt").stat().st_mtime_ns
    gpu_job_id = _record(workdir / "gpu.txt")["SLURM_JOB_ID"]
    gpu_type = ["--config", f"gpu_type={slurm_cluster.gpu_type}"]

    # run 2: the job fails inside SLURM; Snakemake must notice and exit non-zero by itself (no hang)
    start = time.monotonic()
    failed = run_snakemake_on_slurm(workdir, ["report.txt"], gpu_type, timeout=FAIL_TIMEOUT_S)
    fail_seconds = time.monotonic() - start
    assert failed.returncode != 0, _explain(failed)
    assert _job_stats(failed.stdout) == {"report": 1}  # finished outputs were not redone
    assert "SLURM status is: 'FAILED'" in failed.stdout, _explain(failed)
    assert "deliberate-failure-42" in failed.stdout, _explain(failed)  # the job's own log is shown
    assert not (workdir / "report.txt").exists()

    # run 3: fixed; only the failed job is resubmitted, on a typed GPU (gpu_model)
    (workdir / "fixed.flag").touch()
    fixed = run_snakemake_on_slurm(workdir, ["report.txt"], gpu_type, timeout=RUN_TIMEOUT_S)
    assert fixed.returncode == 0, _explain(fixed)
    assert _job_stats(fixed.stdout) == {"report": 1}
    report = _record(workdir / "report.txt")
    assert report["TresPerJob"] == f"gres:gpu:{slurm_cluster.gpu_type}:1"
    assert report["CUDA_VISIBLE_DEVICES"].isdigit()
    assert (workdir / "gpu.txt").stat().st_mtime_ns == gpu_before
    assert _record(workdir / "gpu.txt")["SLURM_JOB_ID"] == gpu_job_id
    logging.getLogger(__name__).info("run 1 %.0f s, failing run %.0f s", first_run.seconds, fail_seconds)


# --- profile checks (no cluster needed) -----------------------------------------------------------------


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def test_profiles_use_the_slurm_executor_and_ci_polls_with_squeue() -> None:
    user, ci = _load(USER_PROFILE), _load(CI_PROFILE)
    assert user["executor"] == ci["executor"] == "slurm"
    assert user["retries"] == 2 and user["rerun-incomplete"] is True
    assert user["default-resources"]["slurm_partition"] == "gpu"
    # no default cpus_per_task: it would override every rule's threads in --cpus-per-task
    assert "cpus_per_task" not in user["default-resources"]
    assert ci["slurm-status-command"] == "squeue"
    assert ci["slurm-init-seconds-before-status-checks"] <= 5


def test_ci_profile_covers_user_profile() -> None:
    """Profiles do not merge, so the CI copy must set every key of the user profile (with test values)."""
    user, ci = _load(USER_PROFILE), _load(CI_PROFILE)
    assert set(user) <= set(ci), f"keys missing in {CI_PROFILE}: {sorted(set(user) - set(ci))}"
    missing = set(user["default-resources"]) - set(ci["default-resources"])
    assert not missing, f"default-resources missing in {CI_PROFILE}: {sorted(missing)}"


@pytest.mark.slow
def test_profile_keys_are_snakemake_options() -> None:
    """Every key is an option of the installed Snakemake + SLURM plugin (catches typos and renames)."""
    from snakemake.cli import get_argument_parser

    options = {opt for action in get_argument_parser()._actions for opt in action.option_strings}
    for path in (USER_PROFILE, CI_PROFILE):
        unknown = sorted(key for key in _load(path) if f"--{key}" not in options)
        assert not unknown, f"{path}: not Snakemake options: {unknown}"
