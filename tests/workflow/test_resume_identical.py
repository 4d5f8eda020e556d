"""A resumed run is the run it resumes (docs/reliability.md §5): a whole-model vLLM job SIGKILLed after
some of its engine calls, then rerun, writes generations identical — token ids, texts and every
log-probability, bit for bit — to an uninterrupted run's. Each engine call's shards are kept as it finishes
(inference.group_prompts), and the rerun generates every remaining prompt in the same call as before."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from polars.testing import assert_frame_equal

from saltbench.io import read_table

pytestmark = [pytest.mark.workflow, pytest.mark.slow, pytest.mark.model, pytest.mark.vllm]

MODEL = "smollm2-135m"
STYLES, TASKS = ("direct", "cot"), ("dna", "matmul")
TARGETS = [f"data/generations/{MODEL}/{style}/{task}.parquet" for style in STYLES for task in TASKS]
ENV = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}


def _workflow(root: Path, copy_workflow, repo_root: Path) -> Path:
    root.mkdir()
    workdir = copy_workflow(root, with_converted_smollm2=True)
    config = yaml.safe_load((repo_root / "config" / "test.yaml").read_text())
    config.update(tasks=list(TASKS), prompt_styles=list(STYLES))
    config["inference"].update(backend="vllm", jobs="per_model", shard_size=1, group_prompts=2)
    config["inference"]["max_new_tokens"] = {"default": 16}
    (workdir / "config" / "resume.yaml").write_text(yaml.safe_dump(config))
    return workdir


def _command() -> list[str]:
    options = ["--cores", "2", "--profile", "profiles/local", "--configfile", "config/resume.yaml"]
    return [sys.executable, "-m", "snakemake", *TARGETS, *options]  # the profile: no lock to remove


def _run(workdir: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(_command(), cwd=workdir, capture_output=True, text=True, timeout=1200, env=ENV)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_a_killed_whole_model_job_resumes_to_identical_generations(tmp_path, copy_workflow, repo_root):
    pytest.importorskip("vllm", reason="vLLM is not installed")
    reference = _workflow(tmp_path / "uninterrupted", copy_workflow, repo_root)
    _run(reference)

    resumed = _workflow(tmp_path / "resumed", copy_workflow, repo_root)
    kept = resumed / "data" / "generations" / MODEL / ".shards"
    with (tmp_path / "killed.log").open("w") as out:
        first = subprocess.Popen(
            _command(), cwd=resumed, stdout=out, stderr=subprocess.STDOUT, env=ENV, start_new_session=True
        )
        deadline = time.monotonic() + 900
        while first.poll() is None and time.monotonic() < deadline and len(list(kept.rglob("*.parquet"))) < 2:
            time.sleep(0.1)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    saved = len(list(kept.rglob("*.parquet")))
    assert 2 <= saved < 12, (tmp_path / "killed.log").read_text()[-3000:]  # killed between two engine calls
    log = resumed / "logs" / "generations" / MODEL / "generate.log"
    _run(resumed)
    assert f"shard groups to generate ({saved} shards kept)" in log.read_text()
    for target in TARGETS:  # bit for bit (NaN entropies included: vLLM does not return them)
        assert_frame_equal(
            read_table(resumed / target, "generations"),
            read_table(reference / target, "generations"),
            check_exact=True,
        )
