"""Benchmark of saltbench.interventions on SmolLM2-135M-Instruct (CPU, float32).

Measures interventions per second of :func:`saltbench.interventions.run_sample` on one DNA sample
whose rendered prompt has >= 500 tokens, with the prompt's key/value cache encoded once and shared
by every intervention (``reuse_cache=True``) against re-encoding the prompt for every intervention
(``reuse_cache=False``; goal: reuse >= 3x faster). Both runs must give the same rows (checked).

Usage::

    python bench/bench_interventions.py [--model-dir DIR] [--threads N] [--codons 100] [--repeats 2]
        [--new 0] [--no-early-stop] [--batch-size 16] [--out results.json]

Each timing is the minimum over ``--repeats`` runs of the wall-clock seconds and of the process CPU
seconds (``time.process_time``, all threads); on a shared machine the CPU seconds are the steadier
number (the load average is printed with the results).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
from pathlib import Path
from typing import Any

import torch
from _timing import timed

from saltbench.inference import LocalSource, ModelSpec, encode_prompt, load_model, render_prompts
from saltbench.inference.hf import HfModel
from saltbench.interventions import AnswerLayout, corruptor_for, plan_sample
from saltbench.stages.interventions import SampleRun, run_sample
from saltbench.tasks import get_task

logger = logging.getLogger("bench_interventions")
REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model-dir", type=Path, default=REPO / "data" / "models" / "converted" / "smollm2-135m"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--codons", type=int, default=100, help="DNA input length (atoms of the answer)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--new",
        type=int,
        default=0,
        help="greedy budget per intervention (0: the workflow's automatic budget)",
    )
    parser.add_argument("--no-early-stop", action="store_true", help="always decode the whole budget")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    torch.set_num_threads(args.threads)

    model, tok = load_model(args.model_dir, "float32", "cpu")
    loaded = HfModel(ModelSpec(name="m", source=LocalSource(path=str(args.model_dir))), tok, model, 16, 20)
    rng = random.Random(0)
    dna = " ".join("".join(rng.choice("ACGT") for _ in range(3)) for _ in range(args.codons))
    task = get_task("dna")
    (prompt,) = render_prompts(tok, [task.prompt(dna)])
    prompt_ids = encode_prompt(tok, prompt)
    reference = task.solve(dna)
    layout = AnswerLayout.from_reference(reference, "dna")
    specs = plan_sample(
        layout,
        corruptor_for("dna"),
        sample_id="bench",
        seed=0,
        position_fractions=(0.1, 0.25, 0.5, 0.75, 1.0),
        corruption_counts=(0, 1, 2, 4),
    )
    results: dict[str, Any] = {
        "load_average": os.getloadavg(),
        "threads": args.threads,
        "prompt_tokens": len(prompt_ids),
        "atoms": layout.n_atoms,
        "interventions": len(specs),
        "max_new_tokens": args.new or "auto",
        "early_stop": not args.no_early_stop,
        "batch_size": args.batch_size,
    }
    rows = {}
    for reuse in (True, False):
        run = SampleRun(
            next_atoms=3,
            max_new_tokens=args.new or None,
            batch_size=args.batch_size,
            reuse_cache=reuse,
            early_stop=not args.no_early_stop,
        )
        timing, rows[reuse] = timed(
            lambda run=run: run_sample(
                loaded, prompt_ids, layout, specs, task="dna", variant=None, reference=reference, run=run
            ),
            args.repeats,
        )
        key = "reuse_cache" if reuse else "reencode_prompt"
        results[key] = {
            **timing,
            "interventions_per_s": len(specs) / timing["seconds"],
            "interventions_per_cpu_s": len(specs) / timing["cpu_seconds"],
        }
    prefix_tokens = [row["prefix_tokens"] for row in rows[True]]
    results["prefix_tokens_mean"] = sum(prefix_tokens) / len(prefix_tokens)
    reasons = [row["finish_reason"] for row in rows[True]]
    results["finish_reasons"] = {r: reasons.count(r) for r in ("stop", "eos", "length")}
    results["same_rows"] = all(
        (a["continuation"], a["next_correct"]) == (b["continuation"], b["next_correct"])
        and abs(a["tf_logprob_with_gap"] - b["tf_logprob_with_gap"]) < 1e-3
        for a, b in zip(rows[True], rows[False])
    )
    results["speedup_wall"] = results["reencode_prompt"]["seconds"] / results["reuse_cache"]["seconds"]
    results["speedup_cpu"] = results["reencode_prompt"]["cpu_seconds"] / results["reuse_cache"]["cpu_seconds"]
    json.dump(results, sys.stdout, indent=2)
    print()
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
