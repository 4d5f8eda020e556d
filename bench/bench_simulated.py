"""Throughput of the simulated backend (docs/simulation.md §6): atoms and responses per second for answers of
a given length, one core.

    .venv/bin/python bench/bench_simulated.py --codons 300 --samples 200 --repeats 3
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from saltbench.inference.backends import load_backend
from saltbench.inference.registry import ModelSpec
from saltbench.inference.simulated import SimulationParams
from saltbench.inference.sources import SimulatedSource
from saltbench.stages.generation import build_prompts
from saltbench.tasks import get_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--codons", type=int, default=300, help="atoms per DNA answer")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = get_task("dna").generate(args.samples, 0, min_codons=args.codons, max_codons=args.codons)
        rows.write_parquet(Path(folder) / "dna.parquet")
        spec = ModelSpec(
            name="sim",
            source=SimulatedSource(parameters=SimulationParams()),
            backend="simulated",
            chat_template="none",
        )
        model = load_backend(folder, spec)
        for style in ("direct", "cot"):
            prompts = build_prompts(rows, style, None)
            model.generate(prompts[:2], [10**6] * 2)  # compile the chain once
            best = float("inf")
            for _ in range(args.repeats):
                started = time.perf_counter()
                model.generate(prompts, [10**6] * len(prompts))
                best = min(best, time.perf_counter() - started)
            atoms = args.samples * args.codons
            rate = f"{atoms / best:,.0f} atoms/s, {args.samples / best:,.0f} responses/s"
            what = f"{args.samples} answers of {args.codons} atoms"
            print(f"{style}: {what} in {best:.3f} s (min of {args.repeats}): {rate}")


if __name__ == "__main__":
    main()
