"""The two inference backends side by side on SmolLM2-135M-Instruct (CPU, float32, one process each).

Measures, in one run, alternating the backends ``--repeats`` times and keeping the minimum:

1. start-up: transformers load (``load_model``) vs vLLM engine start (``load_vllm``, import included);
2. greedy generation throughput (generated tokens / s) on the same DNA prompts (seeded, chat-rendered,
   ``--new`` new tokens at most, stop at EOS) at 8 and 32 prompts, all prompts in one batch for both;
   and whether both produced the same tokens;
3. intervention throughput (interventions / s) of ``run_interventions`` on ``--samples`` Kronecker
   samples: transformers with the prompt cache vs vLLM with prefix caching.

Both engines get ``--threads`` CPU threads (transformers: ``torch.set_num_threads``; vLLM: OpenMP
threads of its engine process, no core pinning). Usage::

    python bench/bench_backends.py [--model-dir DIR] [--threads 1] [--new 128] [--repeats 2] \
        [--out results.json]

Ratios (vLLM / transformers) are the numbers to quote: absolute rates drift with the machine's load.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from _timing import timed

logger = logging.getLogger("bench_backends")

REPO = Path(__file__).resolve().parents[1]


def _prompts(tokenizer: Any, n: int) -> list[str]:
    from saltbench.inference import render_prompts
    from saltbench.tasks import get_task

    task = get_task("dna")
    rows = task.generate(n, seed=5, min_codons=20, max_codons=60)
    return render_prompts(tokenizer, [task.prompt(x) for x in rows["input"]])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model-dir", default=str(REPO / "data/models/converted/smollm2-135m"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--sizes", default="8,32")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import torch

    from saltbench.inference import (
        generate,
        generate_vllm,
        get_model_spec,
        load_model,
        load_model_registry,
        load_vllm,
    )
    from saltbench.inference.hf import HfModel
    from saltbench.inference.vllm import VllmModel, VllmOptions
    from saltbench.interventions import InterventionOptions
    from saltbench.stages.interventions import run_interventions
    from saltbench.tasks import get_task

    torch.set_num_threads(args.threads)
    spec = get_model_spec(load_model_registry(REPO / "config/models.yaml"), "smollm2-135m")
    spec = dataclasses.replace(spec, max_context=4096, backend_options=VllmOptions(enforce_eager=True))
    results: dict[str, Any] = {
        "threads": args.threads,
        "new_tokens": args.new,
        "load_average": os.getloadavg(),
    }

    started = time.perf_counter()
    model, tokenizer = load_model(args.model_dir, "float32", "cpu")
    results["hf_load_s"] = time.perf_counter() - started
    started = time.perf_counter()
    engine = load_vllm(args.model_dir, spec, num_threads=args.threads, prefix_caching=True)
    results["vllm_load_s"] = time.perf_counter() - started
    print(f"load: transformers {results['hf_load_s']:.1f} s, vLLM {results['vllm_load_s']:.1f} s")

    for n in (int(s) for s in args.sizes.split(",") if s):
        prompts = _prompts(tokenizer, n)
        best: dict[str, dict[str, float]] = {}
        records: dict[str, Any] = {}
        for _ in range(args.repeats):  # alternate the two engines
            for name, run in (
                (
                    "hf",
                    lambda prompts=prompts, n=n: generate(
                        model, tokenizer, prompts, max_new_tokens=args.new, batch_size=n, progress=False
                    ),
                ),
                (
                    "vllm",
                    lambda prompts=prompts: generate_vllm(
                        engine, prompts, max_new_tokens=args.new, progress=False
                    ),
                ),
            ):
                timing, out = timed(run, 1)
                if name not in best or timing["seconds"] < best[name]["seconds"]:
                    best[name] = timing
                records[name] = out
        tokens = {name: sum(r.num_generated_tokens for r in recs) for name, recs in records.items()}
        same = sum(
            int(a.num_generated_tokens == b.num_generated_tokens and (a.token_ids == b.token_ids).all())
            for a, b in zip(records["hf"], records["vllm"])
        )
        row = {
            name: {**best[name], "tokens": tokens[name], "tok_per_s": tokens[name] / best[name]["seconds"]}
            for name in best
        }
        row["vllm_over_hf_tok_per_s"] = row["vllm"]["tok_per_s"] / row["hf"]["tok_per_s"]
        row["identical_generations"] = f"{same}/{n}"
        results[f"generate_{n}"] = row
        print(
            f"{n} prompts: transformers {row['hf']['tok_per_s']:.1f} tok/s ({row['hf']['seconds']:.1f} s), "
            f"vLLM {row['vllm']['tok_per_s']:.1f} tok/s ({row['vllm']['seconds']:.1f} s), "
            f"ratio {row['vllm_over_hf_tok_per_s']:.2f}, identical {same}/{n}"
        )

    rows = get_task("kronecker").generate(
        args.samples, seed=3, output_lengths=[16], prefer_2d_probability=1.0, value_min=1, value_max=9
    )
    options = InterventionOptions.from_dict(
        {
            "enabled": True,
            "models": ["smollm2-135m"],
            "tasks": ["kronecker"],
            "position_fractions": [0.25, 0.5, 0.75],
            "corruption_counts": [0, 1, 2],
            "placements": ["random", "local", "distant"],
            "next_atoms": 3,
        }
    )
    best, counts = {}, {}
    for _ in range(args.repeats):
        for name, run in (
            (
                "hf",
                lambda: run_interventions(
                    HfModel(spec, tokenizer, model, 16, 20), rows, options, model_name="m"
                ),
            ),
            (
                "vllm",
                lambda: run_interventions(
                    VllmModel(spec, engine.tokenizer, engine, 16, 20), rows, options, model_name="m"
                ),
            ),
        ):
            timing, frame = timed(run, 1)
            counts[name] = frame.height
            if name not in best or timing["seconds"] < best[name]["seconds"]:
                best[name] = timing
    interventions = {
        name: {**best[name], "interventions": counts[name], "per_s": counts[name] / best[name]["seconds"]}
        for name in best
    }
    interventions["vllm_over_hf"] = interventions["vllm"]["per_s"] / interventions["hf"]["per_s"]
    results["interventions"] = interventions
    print(
        f"interventions ({counts['hf']} on {args.samples} samples): "
        f"transformers {interventions['hf']['per_s']:.2f}/s, "
        f"vLLM {interventions['vllm']['per_s']:.2f}/s, ratio {interventions['vllm_over_hf']:.2f}"
    )
    engine.close()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":  # vLLM spawns its engine process, which re-imports this file
    main()
