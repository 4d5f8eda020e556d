"""Fixtures for tests against a real single-node SLURM cluster (tests marked ``cluster``).

``slurm_cluster`` (session scope) runs ``slurm_up.sh`` once — apt-installing SLURM and munge when they are
missing — and always runs ``slurm_down.sh`` afterwards, also when start-up or a test fails. It skips only
where the cluster cannot be installed or started at all (not root, no apt-get and no SLURM, not Linux);
with ``CI=true`` those cases fail instead, so CI never silently loses the cluster tests.

``run_snakemake_on_slurm`` (session fixture, needs the cluster) returns a callable
``run(workdir, targets, extra_args=(), *, profile=CI_PROFILE, timeout=300, env=None) -> CompletedProcess``
that runs ``python -m snakemake --profile profiles/slurm-ci`` in ``workdir`` against that cluster.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
CLUSTER_DIR = Path(__file__).resolve().parent
CI_PROFILE = REPO / "profiles" / "slurm-ci"
SLURM_CONF = Path("/etc/slurm/slurm.conf")
STATE_DIR = Path(os.environ.get("SALTBENCH_SLURM_STATE", "/tmp/saltbench-slurm"))
UP_TIMEOUT_S = 900  # a cold start apt-installs four packages
DOWN_TIMEOUT_S = 60


@dataclass(frozen=True)
class SlurmCluster:
    """The running test cluster: what slurm_up.sh configured."""

    version: str  # e.g. "22.05.8"
    node: str  # the single node's name (`hostname -s`)
    partition: str  # the only partition, Default=YES
    gpu_type: str  # GRES type of the fake GPUs: request them as gpu_model
    n_gpus: int
    state_dir: Path  # pids/, log/ (slurmctld.log, slurmd.log), spool/
    up_seconds: float  # how long slurm_up.sh took in this session


def in_ci() -> bool:
    """True when the CI environment variable is set to a true value (GitHub Actions, GitLab set CI=true)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _cannot_run_reason() -> str | None:
    """Why this machine cannot host the test cluster, or None when slurm_up.sh should work."""
    if not sys.platform.startswith("linux"):
        return f"the SLURM test cluster needs Linux (platform is {sys.platform!r})"
    if os.geteuid() != 0:
        return f"slurm_up.sh must run as root to install and start SLURM (euid is {os.geteuid()})"
    if shutil.which("slurmctld") is None and shutil.which("apt-get") is None:
        return "SLURM is not installed and apt-get is not available to install it"
    return None


def slurm_env() -> dict[str, str]:
    """The caller's environment, cleaned so that commands reach the test cluster and nothing else.

    Drops SLURM_*/SBATCH_*/SRUN_* (set when pytest itself runs inside a SLURM job) and CUDA_VISIBLE_DEVICES
    (so a job's value can only come from its GPU allocation), and points SLURM_CONF at the test cluster.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SLURM_", "SBATCH_", "SRUN_")) and key != "CUDA_VISIBLE_DEVICES"
    }
    env["SLURM_CONF"] = str(SLURM_CONF)
    env["SALTBENCH_SLURM_STATE"] = str(STATE_DIR)
    return env


def _scontrol_config(env: dict[str, str]) -> dict[str, str]:
    out = subprocess.run(
        ["scontrol", "show", "config"], env=env, capture_output=True, text=True, check=True, timeout=30
    ).stdout
    pairs = (line.split("=", 1) for line in out.splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def _node_gres(node: str, env: dict[str, str]) -> tuple[str, int]:
    """(type, count) of the node's GPU GRES, from e.g. ``Gres=gpu:fake:2``."""
    out = subprocess.run(
        ["scontrol", "show", "node", node], env=env, capture_output=True, text=True, check=True, timeout=30
    ).stdout
    gres = next(part.split("=", 1)[1] for part in out.split() if part.startswith("Gres="))
    _, gpu_type, count = gres.split("(")[0].split(":")
    return gpu_type, int(count)


def _run_script(name: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(CLUSTER_DIR / name)], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """Start the single-node SLURM cluster for the session; always stop it afterwards."""
    reason = _cannot_run_reason()
    if reason is not None:
        if in_ci():
            pytest.fail(f"CI=true but the SLURM cluster cannot run here: {reason}")
        pytest.skip(reason)
    env = slurm_env()
    try:
        start = time.monotonic()
        try:
            up = _run_script("slurm_up.sh", env, UP_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"slurm_up.sh did not finish within {UP_TIMEOUT_S} s: {exc.stderr!r}")
        up_seconds = time.monotonic() - start
        if up.returncode != 0:
            pytest.fail(f"slurm_up.sh failed (exit {up.returncode}):\n{up.stdout}\n{up.stderr}")
        logger.info("slurm_up.sh took %.1f s: %s", up_seconds, up.stderr.strip())
        config = _scontrol_config(env)
        node = subprocess.run(
            ["sinfo", "--noheader", "--format=%N"], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        gpu_type, n_gpus = _node_gres(node, env)
        yield SlurmCluster(
            version=config["SLURM_VERSION"],
            node=node,
            partition="gpu",
            gpu_type=gpu_type,
            n_gpus=n_gpus,
            state_dir=STATE_DIR,
            up_seconds=up_seconds,
        )
    finally:
        down = _run_script("slurm_down.sh", env, DOWN_TIMEOUT_S)
        if down.returncode != 0:
            logger.error("slurm_down.sh failed (exit %d): %s", down.returncode, down.stderr)


RunSnakemake = Callable[..., "subprocess.CompletedProcess[str]"]


def _run_snakemake_on_slurm(
    workdir: Path,
    targets: Sequence[str],
    extra_args: Sequence[str] = (),
    *,
    profile: Path = CI_PROFILE,
    timeout: float = 300,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m snakemake --profile <profile> <targets> <extra_args>`` in ``workdir``.

    Targets come first so that options taking several values (``--config k=v``) may end ``extra_args``.
    ``env``: variables added to the cluster environment (:func:`slurm_env`); SLURM jobs inherit them.

    Output (stdout and stderr together) is in ``.stdout``; the exit status is not checked. Raises
    subprocess.TimeoutExpired when Snakemake runs longer than ``timeout`` seconds (a hang).
    """
    cmd = [sys.executable, "-m", "snakemake", "--profile", str(profile), *targets, *extra_args]
    logger.info("running %s in %s", " ".join(cmd), workdir)
    return subprocess.run(
        cmd,
        cwd=workdir,
        env={**slurm_env(), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def run_snakemake_on_slurm(slurm_cluster: SlurmCluster) -> RunSnakemake:
    """``run(workdir, targets, extra_args=(), *, profile=CI_PROFILE, timeout=300, env=None)``: a
    CompletedProcess."""
    return _run_snakemake_on_slurm
