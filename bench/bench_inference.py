"""Inference on SmolLM2-135M-Instruct (CPU, float32): transformers, vLLM, its server, interventions.

One subcommand per measurement; each converts SmolLM2 from its GGUF package first when
``data/models/converted/smollm2-135m`` is missing, alternates what it compares ``--repeats`` times and keeps
the minimum, prints what it measured and writes it as JSON (``--out``). On a shared machine CPU seconds and
ratios are the numbers to quote: absolute rates drift with the machine's load (printed with the results).

hf
    Our decoding loop (``generate``): generated tokens / s at batch size 1 and 8 (8 prompts, ``--new`` new
    tokens each); its overhead against plain ``model.generate(do_sample=False)`` at batch 8 (alternating;
    goal < 10 %), whether both produce the same tokens, the cost of the log-probability capture in
    isolation (log-softmax statistics and detokenisation); ``greedy_continue_many`` on a >= 500-token prompt
    (16 prefixes of ~40 tokens, 8 new tokens each) with and without prompt-cache reuse (docs/performance.md
    §3).
backends
    transformers against vLLM side by side, ``--threads`` threads each (docs/backends.md §5): start-up
    (``load_model`` vs ``load_vllm``, import included); greedy tokens / s on the same DNA prompts at each of
    ``--sizes`` prompts (one batch each) and whether both produced the same tokens; interventions / s of
    ``run_interventions`` on ``--samples`` Kronecker samples (prompt cache vs prefix caching).
server
    vLLM through its OpenAI-compatible server (the workflow's ``ServerProcess``, reached through the
    ``openai`` backend with ``--concurrency`` requests in flight) against the offline engine fed batches of
    the same size, on ``--prompts`` DNA prompts; one route alive at a time, as an idle CPU engine keeps
    polling (docs/backends.md §8.7). ``--workflow``: also the default run's SmolLM2 generations as a
    Snakemake run in a fresh copy of the workflow on each of ``--routes`` (``hf``; ``vllm``, one engine per
    model job; ``vllm_per_shard``; ``vllm_server``), wall time start-ups included (about 10 minutes).
groups
    The default run's SmolLM2 generations (12 shards, 36 prompts) on one in-process vLLM engine as one engine
    call and in calls of at most each of ``--groups`` prompts; whether repeats of the same calls give the
    same frames, and how far the grouped log-probabilities are from the one call's (docs/performance.md §10).
    ``VLLM_ENABLE_V1_MULTIPROCESSING=1`` runs the engine core in its own process, vLLM's default.
interventions
    Interventions / s of ``run_sample`` on one DNA sample whose prompt has >= 500 tokens, the prompt's
    key/value cache encoded once and shared (``reuse_cache``) against re-encoding it for every intervention
    (goal: reuse >= 3x faster); both must give the same rows (docs/performance.md §3).
draws
    Sampled answers against greedy ones on the same ``--prompts`` DNA prompts, per engine of ``--engines``,
    alternating: ``--n`` draws per prompt (``hf``: our decoding loop, each batch's prompts prefilled once
    and repeated; ``vllm``: one request per prompt with ``n``, prefix caching on) against one greedy answer
    per prompt; answers / s, tokens / s, and the draws' wall, CPU and tokens-per-second ratios to greedy
    (docs/performance.md §3).

Run, e.g.::

    python bench/bench_inference.py hf --new 64 --repeats 2 --out results.json
    python bench/bench_inference.py backends --threads 1 --new 128 --sizes 8,32
    python bench/bench_inference.py server --prompts 16 --new 64 --workflow
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from _common import (
    REPO,
    SMOLLM2,
    SMOLLM2_DIR,
    alternate,
    copy_workflow,
    keep_fastest,
    load_average,
    smollm2,
    snakemake,
    timed,
    write_json,
)

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
"""The ``hf`` subcommand's prompts: open-ended, so that every one runs to ``--new`` tokens or EOS."""
ROUTES = {  # name -> inference settings over config/config.yaml's
    "hf": {"backend": "hf"},
    "vllm": {"backend": "vllm"},
    "vllm_per_shard": {"backend": "vllm", "jobs": "per_shard"},
    "vllm_server": {"backend": "vllm_server"},
}


def rate(timing: dict[str, float], count: int, unit: str) -> dict[str, float]:
    """A timing with ``count`` things done and their rate per wall and per CPU second."""
    return {
        **timing,
        "count": count,
        f"{unit}_per_s": count / timing["seconds"],
        f"{unit}_per_cpu_s": count / timing["cpu_seconds"],
    }


def dna_instructions(n: int) -> list[str]:
    """``n`` seeded DNA task prompts of 20–60 codons (before chat rendering), the same for every engine."""
    from saltbench.tasks import get_task

    task = get_task("dna")
    rows = task.generate(n, seed=5, min_codons=20, max_codons=60)
    return [task.prompt(x) for x in rows["input"]]


def vllm_spec() -> Any:
    """SmolLM2's registry entry for a CPU vLLM engine: a 4,096-token context, eager mode."""
    from saltbench.inference import get_model_spec, load_model_registry
    from saltbench.inference.vllm import VllmOptions

    spec = get_model_spec(load_model_registry(REPO / "config/models.yaml"), SMOLLM2)
    return dataclasses.replace(spec, max_context=4096, backend_options=VllmOptions(enforce_eager=True))


def identical(a: list[Any], b: list[Any]) -> int:
    """How many records of ``a`` and ``b`` (in order) generated the same tokens."""
    return sum(
        int(x.num_generated_tokens == y.num_generated_tokens and (x.token_ids == y.token_ids).all())
        for x, y in zip(a, b)
    )


# --- hf ---------------------------------------------------------------------------------------------------


def _hf_generate(
    model: Any, tokenizer: Any, prompts: list[str], new: int, batch_size: int
) -> list[list[int]]:
    """Plain ``model.generate(do_sample=False)`` over left-padded batches, rows cut after their first EOS."""
    import torch

    from saltbench.inference import encode_prompt

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


def _ours_and_hf(
    model: Any, tokenizer: Any, prompts: list[str], args: argparse.Namespace
) -> tuple[dict, list]:
    """Batch 1, then ours and plain HF generate at batch 8, alternating so both see the same machine load."""
    from saltbench.inference import generate

    def ours(batch_size: int) -> Callable[[], Any]:
        return lambda: generate(
            model, tokenizer, prompts, max_new_tokens=args.new, batch_size=batch_size, progress=False
        )

    timing, records = timed(ours(1), 1)
    batch1 = [r.token_ids.tolist() for r in records]
    results: dict[str, Any] = {"generate_batch1": rate(timing, sum(map(len, batch1)), "tokens")}
    hf = partial(_hf_generate, model, tokenizer, prompts, args.new, 8)
    best, last = alternate({"ours": ours(8), "hf": hf}, args.repeats)
    records, hf_tokens = last["ours"], last["hf"]
    batch8 = [r.token_ids.tolist() for r in records]
    results["generate_batch8"] = rate(best["ours"], sum(map(len, batch8)), "tokens")
    results["hf_generate_batch8"] = rate(best["hf"], sum(map(len, hf_tokens)), "tokens")
    results["overhead_vs_hf_generate"] = {
        "wall": best["ours"]["seconds"] / best["hf"]["seconds"] - 1.0,
        "cpu": best["ours"]["cpu_seconds"] / best["hf"]["cpu_seconds"] - 1.0,
    }
    results["same_tokens_batch1_batch8"] = batch1 == batch8
    results["same_tokens_as_hf_generate"] = batch8 == hf_tokens
    return results, records


def _capture_cost(
    tokenizer: Any, prompts: list[str], records: list, vocab: int, new: int
) -> dict[str, float]:
    """CPU seconds of the two extra pieces of work per token, in isolation: log-softmax statistics of ``new``
    batch-8 steps, and detokenising the batch's generations."""
    import torch

    from saltbench.inference import encode_prompt, token_texts
    from saltbench.inference.hf._logit_stats import score_logits

    logits = torch.randn(8, vocab)
    started = time.process_time()
    for _ in range(new):
        score_logits(logits, None, 20)
    score_s = time.process_time() - started
    started = time.process_time()
    for prompt, r in zip(prompts, records):
        token_texts(tokenizer, r.token_ids, context_ids=encode_prompt(tokenizer, prompt))
    return {"score_logits_cpu_s": score_s, "detokenize_cpu_s": time.process_time() - started}


def _continuations(model: Any, tokenizer: Any, repeats: int) -> dict[str, Any]:
    """``greedy_continue_many`` of 16 prefixes (36–44 tokens) on a long prompt, with and without the cache."""
    from saltbench.inference import encode_prompt, greedy_continue_many, render_prompts

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
            partial(
                greedy_continue_many,
                model,
                tokenizer,
                prompt_ids,
                prefixes,
                8,
                reuse_cache=reuse,
                batch_size=8,
            ),
            repeats if reuse else 1,  # the slow baseline runs once
        )
        outputs[reuse] = [c.generation.token_ids.tolist() for c in out]
        cont["reuse" if reuse else "no_reuse"] = rate(timing, len(prefixes), "continuations")
    cont["speedup_wall"] = cont["no_reuse"]["seconds"] / cont["reuse"]["seconds"]
    cont["speedup_cpu"] = cont["no_reuse"]["cpu_seconds"] / cont["reuse"]["cpu_seconds"]
    cont["same_tokens"] = outputs[True] == outputs[False]
    return cont


def hf(args: argparse.Namespace) -> dict[str, Any]:
    """The ``hf`` subcommand (module docstring)."""
    import torch

    from saltbench.inference import load_model, render_prompts

    if args.threads:
        torch.set_num_threads(args.threads)
    results: dict[str, Any] = {
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "load_average_start": load_average(),
    }
    model_dir, convert_s = smollm2(args.model_dir)
    if convert_s is not None:
        results["convert_s"] = convert_s
    started = time.perf_counter()
    model, tokenizer = load_model(model_dir, "float32", "cpu")
    results["load_s"] = time.perf_counter() - started
    prompts = render_prompts(tokenizer, INSTRUCTIONS)
    generation, records = _ours_and_hf(model, tokenizer, prompts, args)
    results |= generation
    capture = _capture_cost(tokenizer, prompts, records, model.config.vocab_size, args.new)
    used = capture["score_logits_cpu_s"] + capture["detokenize_cpu_s"]
    capture["fraction_of_generate_cpu"] = used / results["generate_batch8"]["cpu_seconds"]
    results["capture_cost_batch8"] = capture
    results["continuations"] = _continuations(model, tokenizer, args.repeats)
    results["load_average_end"] = load_average()
    return results


# --- backends ---------------------------------------------------------------------------------------------


def _generation_side_by_side(
    model: Any, tokenizer: Any, engine: Any, n: int, args: argparse.Namespace
) -> dict:
    """Tokens / s of both engines on the same ``n`` prompts, alternating; how many generations agree."""
    from saltbench.inference import generate, generate_vllm, render_prompts

    prompts = render_prompts(tokenizer, dna_instructions(n))
    runs = {
        "hf": lambda: generate(
            model, tokenizer, prompts, max_new_tokens=args.new, batch_size=n, progress=False
        ),
        "vllm": lambda: generate_vllm(engine, prompts, max_new_tokens=args.new, progress=False),
    }
    best, records = alternate(runs, args.repeats)
    tokens = {name: sum(r.num_generated_tokens for r in recs) for name, recs in records.items()}
    row: dict[str, Any] = {
        name: {**best[name], "tokens": tokens[name], "tok_per_s": tokens[name] / best[name]["seconds"]}
        for name in best
    }
    row["vllm_over_hf_tok_per_s"] = row["vllm"]["tok_per_s"] / row["hf"]["tok_per_s"]
    same = identical(records["hf"], records["vllm"])
    row["identical_generations"] = f"{same}/{n}"
    print(
        f"{n} prompts: transformers {row['hf']['tok_per_s']:.1f} tok/s ({row['hf']['seconds']:.1f} s), "
        f"vLLM {row['vllm']['tok_per_s']:.1f} tok/s ({row['vllm']['seconds']:.1f} s), "
        f"ratio {row['vllm_over_hf_tok_per_s']:.2f}, identical {same}/{n}"
    )
    return row


def _interventions_side_by_side(
    spec: Any, tokenizer: Any, model: Any, engine: Any, args: argparse.Namespace
) -> dict:
    """Interventions / s of ``run_interventions`` on ``--samples`` Kronecker samples, engines alternating."""
    from saltbench.inference.hf import HfModel
    from saltbench.inference.vllm import VllmModel
    from saltbench.interventions import InterventionOptions
    from saltbench.stages.interventions import run_interventions
    from saltbench.tasks import get_task

    rows = get_task("kronecker").generate(
        args.samples, seed=3, output_lengths=[16], prefer_2d_probability=1.0, value_min=1, value_max=9
    )
    options = InterventionOptions.from_dict(
        {
            "enabled": True,
            "models": [SMOLLM2],
            "tasks": ["kronecker"],
            "position_fractions": [0.25, 0.5, 0.75],
            "corruption_counts": [0, 1, 2],
            "placements": ["random", "local", "distant"],
            "next_atoms": 3,
        }
    )
    runs = {  # a fresh wrapper per run, as the workflow's jobs make one
        "hf": lambda: run_interventions(
            HfModel(spec, tokenizer, model, 16, 20), rows, options, model_name="m"
        ),
        "vllm": lambda: run_interventions(
            VllmModel(spec, engine.tokenizer, engine, 16, 20), rows, options, model_name="m"
        ),
    }
    best, frames = alternate(runs, args.repeats)
    counts = {name: frame.height for name, frame in frames.items()}
    out: dict[str, Any] = {
        name: {**best[name], "interventions": counts[name], "per_s": counts[name] / best[name]["seconds"]}
        for name in best
    }
    out["vllm_over_hf"] = out["vllm"]["per_s"] / out["hf"]["per_s"]
    print(
        f"interventions ({counts['hf']} on {args.samples} samples): transformers {out['hf']['per_s']:.2f}/s, "
        f"vLLM {out['vllm']['per_s']:.2f}/s, ratio {out['vllm_over_hf']:.2f}"
    )
    return out


def backends(args: argparse.Namespace) -> dict[str, Any]:
    """The ``backends`` subcommand (module docstring)."""
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    from saltbench.inference import load_model, load_vllm

    torch.set_num_threads(args.threads)
    model_dir, _ = smollm2(args.model_dir)
    spec = vllm_spec()
    results: dict[str, Any] = {
        "threads": args.threads,
        "new_tokens": args.new,
        "load_average": load_average(),
    }
    started = time.perf_counter()
    model, tokenizer = load_model(model_dir, "float32", "cpu")
    results["hf_load_s"] = time.perf_counter() - started
    started = time.perf_counter()
    engine = load_vllm(model_dir, spec, num_threads=args.threads, prefix_caching=True)
    results["vllm_load_s"] = time.perf_counter() - started
    print(f"load: transformers {results['hf_load_s']:.1f} s, vLLM {results['vllm_load_s']:.1f} s")
    for n in (int(s) for s in args.sizes.split(",") if s):
        results[f"generate_{n}"] = _generation_side_by_side(model, tokenizer, engine, n, args)
    results["interventions"] = _interventions_side_by_side(spec, tokenizer, model, engine, args)
    engine.close()
    return results


# --- server -----------------------------------------------------------------------------------------------


def _client(base_url: str, spec: Any, model_dir: Path, concurrency: int) -> Any:
    """The ``openai`` client of the server, prompts rendered here, ``concurrency`` requests in flight."""
    from saltbench.inference import parse_model_registry
    from saltbench.inference.backends import LoadSettings, load_backend

    api = {
        "endpoint": "completions",
        "token_ids": True,
        "tokenizer": str(model_dir),
        "concurrency": concurrency,
    }
    entry = {
        "source": {"kind": "api", "base_url": base_url, "model": spec.name},
        "backend": "openai",
        "system_prompt": spec.system_prompt,
        "backend_options": api,
    }
    return load_backend(
        base_url, parse_model_registry({"models": {SMOLLM2: entry}})[SMOLLM2], settings=LoadSettings()
    )


def _batched(model: Any, prompts: list[str], budgets: list[int], size: int) -> list[Any]:
    """``model.generate`` over batches of ``size`` prompts, one after the other."""
    return [
        record
        for i in range(0, len(prompts), size)
        for record in model.generate(prompts[i : i + size], budgets[i : i + size], progress=False)
    ]


@dataclasses.dataclass
class Rounds:
    """What the server's rounds keep: per (route, concurrency) the fastest seconds and the last records."""

    best: dict[tuple[str, int], float] = dataclasses.field(default_factory=dict)
    records: dict[tuple[str, int], list[Any]] = dataclasses.field(default_factory=dict)
    starts: dict[str, list[float]] = dataclasses.field(default_factory=lambda: {"server": [], "offline": []})

    def keep(self, route: str, c: int, run: Callable[[], list[Any]]) -> None:
        timing, self.records[route, c] = timed(run, 1)
        self.best[route, c] = min(self.best.get((route, c), float("inf")), timing["seconds"])


def _server_round(
    args: argparse.Namespace,
    spec: Any,
    model_dir: Path,
    instructions: list[str],
    prompts: list[str],
    kept: Rounds,
) -> None:
    """One round: the server alone at every concurrency, stopped, then the offline engine alone."""
    from saltbench.inference import load_vllm
    from saltbench.inference.server import ServerProcess
    from saltbench.inference.vllm import VllmModel

    budgets = [args.new] * len(prompts)
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with ServerProcess(model_dir, spec, Path(tmp) / "server.log", num_threads=args.threads) as server:
            kept.starts["server"].append(time.perf_counter() - started)
            for c in concurrencies:
                client = _client(server.base_url, spec, model_dir, c)
                assert client.render(instructions) == prompts
                kept.keep("server", c, partial(client.generate, prompts, budgets, progress=False))
    started = time.perf_counter()
    engine = load_vllm(model_dir, spec, num_threads=args.threads)
    kept.starts["offline"].append(time.perf_counter() - started)
    offline = VllmModel(spec, engine.tokenizer, engine, args.prompts, 20)
    for c in concurrencies:  # the offline engine fed batches of c prompts: c requests in flight
        kept.keep("offline", c, partial(_batched, offline, prompts, budgets, c))
    engine.close()


def _server_row(kept: Rounds, c: int, new: int) -> dict[str, Any]:
    """Concurrency ``c``: tokens / s of both routes, their ratio, identical generations."""
    # the offline record keeps the final EOS token, the server's stops before it: compare the server's
    pairs = list(zip(kept.records["server", c], kept.records["offline", c]))
    same = sum(int(a.token_ids.tolist() == b.token_ids[: a.num_generated_tokens].tolist()) for a, b in pairs)
    row: dict[str, Any] = {}
    for route in ("server", "offline"):
        tokens = sum(min(r.num_generated_tokens, new) for r in kept.records[route, c])
        row[route] = {
            "seconds": kept.best[route, c],
            "tokens": tokens,
            "tok_per_s": tokens / kept.best[route, c],
        }
    row["server_over_offline_tok_per_s"] = row["server"]["tok_per_s"] / row["offline"]["tok_per_s"]
    row["identical_generations"] = f"{same}/{len(pairs)}"
    server, offline = row["server"], row["offline"]
    print(
        f"concurrency {c}: server {server['tok_per_s']:.1f} tok/s ({server['seconds']:.1f} s), "
        f"offline {offline['tok_per_s']:.1f} tok/s ({offline['seconds']:.1f} s), "
        f"ratio {row['server_over_offline_tok_per_s']:.2f}, identical {same}/{len(pairs)}"
    )
    return row


def generation_throughput(args: argparse.Namespace, model_dir: Path) -> dict[str, Any]:
    """Tokens / s through the server and the offline engine at each concurrency, rounds alternating."""
    from saltbench.inference import load_tokenizer
    from saltbench.inference.vllm import VllmModel

    spec = vllm_spec()
    instructions = dna_instructions(args.prompts)
    prompts = VllmModel(spec, load_tokenizer(model_dir), None, 1, 20).render(instructions)
    kept = Rounds()
    for _ in range(args.repeats):
        _server_round(args, spec, model_dir, instructions, prompts, kept)
    results: dict[str, Any] = {f"{route}_start_s": min(times) for route, times in kept.starts.items()}
    print(
        f"start (min of {args.repeats}): server {results['server_start_s']:.1f} s, "
        f"offline engine {results['offline_start_s']:.1f} s"
    )
    for c in (int(c) for c in args.concurrency.split(",")):
        results[f"concurrency_{c}"] = _server_row(kept, c, args.new)
    return results


def workflow_routes(args: argparse.Namespace, model_dir: Path) -> dict[str, Any]:
    """The default run's SmolLM2 generations on each route, each in a fresh copy of the workflow."""
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    targets = [
        f"data/generations/{SMOLLM2}/{s}/{t}.parquet"
        for s in config["prompt_styles"]
        for t in config["tasks"]
    ]
    results: dict[str, Any] = {}
    for name in args.routes.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            work = copy_workflow(Path(tmp))
            converted = work / "data/models/converted" / SMOLLM2
            converted.parent.mkdir(parents=True)
            shutil.copytree(model_dir, converted)
            run_config = {**config, "inference": {**config["inference"], **ROUTES[name]}}
            (work / "config/bench.yaml").write_text(yaml.safe_dump(run_config))
            started = time.perf_counter()
            proc = snakemake(work, *targets, "--cores", "2", "--configfile", "config/bench.yaml")
            seconds = time.perf_counter() - started
            jobs = proc.stdout.count("\nrule ") + proc.stderr.count("\nrule ")
            results[name] = {"seconds": seconds, "snakemake_jobs": jobs}
            print(f"workflow {name}: {seconds:.0f} s")
    if "vllm" in results:
        for name in results:
            results[name]["over_vllm_per_model"] = results[name]["seconds"] / results["vllm"]["seconds"]
    return results


def server(args: argparse.Namespace) -> dict[str, Any]:
    """The ``server`` subcommand (module docstring)."""
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    model_dir, _ = smollm2(args.model_dir)
    results: dict[str, Any] = {
        "threads": args.threads,
        "new_tokens": args.new,
        "load_average": load_average(),
    }
    if not args.skip_throughput:
        results["throughput"] = generation_throughput(args, model_dir)
    if args.workflow:
        results["workflow"] = workflow_routes(args, model_dir)
    return results


# --- groups -----------------------------------------------------------------------------------------------


def shard_jobs() -> list[Any]:
    """The default run's SmolLM2 shards, as its per-model job builds them."""
    from saltbench.config import resolve_config
    from saltbench.data import build_dataset
    from saltbench.stages.generation import ShardJob, answered_rows, n_shards, shard_rows

    settings = resolve_config(yaml.safe_load((REPO / "config/config.yaml").read_text()), check_models=False)
    inference = settings.inference
    jobs = []
    for style in settings.prompt_styles:
        for task in settings.tasks:
            dataset = build_dataset(settings.datasets, settings.seed, task)
            rows = answered_rows(dataset, inference.max_samples.get(SMOLLM2))
            for k in range(n_shards(rows.height, inference.shard_size)):
                budget = inference.max_new_tokens_for(task, style)
                jobs.append(ShardJob(style, task, k, shard_rows(rows, k, inference.shard_size), budget))
    return jobs


def _against_one_call(frames: dict[int, dict], reference: int) -> dict[int, dict[str, Any]]:
    """Per group size: whether its tokens equal the one call's, and the largest log-probability difference."""
    import numpy as np

    out = {}
    for size, by_shard in frames.items():
        same_tokens, drift = True, 0.0
        for key, frame in by_shard.items():
            other = frames[reference][key]
            same_tokens &= frame["token_ids"].to_list() == other["token_ids"].to_list()
            if same_tokens:
                a, b = (
                    np.concatenate([np.asarray(v, dtype=np.float64) for v in f["chosen_logprob"].to_list()])
                    for f in (frame, other)
                )
                drift = max(drift, float(np.abs(a - b).max()) if a.size else 0.0)
        out[size] = {"tokens_equal_to_one_call": same_tokens, "max_logprob_difference_to_one_call": drift}
    return out


def groups(args: argparse.Namespace) -> dict[str, Any]:
    """The ``groups`` subcommand (module docstring)."""
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import polars as pl
    import torch

    from saltbench.config import InferenceConfig
    from saltbench.inference import get_model_spec, load_model_registry
    from saltbench.stages.generation import generate_model, load_generator, shard_groups

    torch.set_num_threads(args.threads)
    model_dir, _ = smollm2(args.model_dir)
    spec = get_model_spec(load_model_registry(REPO / "config/models.yaml"), SMOLLM2)
    model = load_generator(model_dir, spec, InferenceConfig(), backend="vllm", num_threads=args.threads)
    jobs = shard_jobs()
    best: dict[str, dict[str, float]] = {}
    rows: dict[int, dict[str, Any]] = {}
    frames: dict[int, dict] = {}
    for _ in range(args.repeats):
        for size in args.groups:

            def run(size: int = size) -> dict:
                return generate_model(
                    model, jobs, model_name=SMOLLM2, n_shots=None, group_prompts=size, progress=False
                )

            timing, out = timed(run, 1)
            keep_fastest(best, str(size), timing)
            row = rows.setdefault(size, {"engine_calls": len(shard_groups(jobs, size))})
            if size in frames:  # the same groups again: identical frames
                row["identical_on_repeat"] = all(out[key].equals(frames[size][key]) for key in out)
            frames[size] = out
            print(f"group_prompts {size}: {timing['seconds']:.1f} s", flush=True)
    reference = max(args.groups)
    compared = _against_one_call(frames, reference)
    results = {
        size: {
            **best[str(size)],
            **row,
            "ratio_to_one_call": best[str(size)]["seconds"] / best[str(reference)]["seconds"],
            **compared[size],
        }
        for size, row in sorted(rows.items(), reverse=True)
    }
    print(pl.DataFrame([{"group_prompts": size, **row} for size, row in results.items()]))
    return {str(size): row for size, row in results.items()}


# --- interventions ----------------------------------------------------------------------------------------


def _intervention_sample(tokenizer: Any, codons: int) -> tuple[list[int], Any, list[Any], str]:
    """One DNA sample of ``codons`` codons: its prompt's tokens, answer layout, interventions, reference."""
    import random

    from saltbench.inference import encode_prompt, render_prompts
    from saltbench.interventions import AnswerLayout, corruptor_for, plan_sample
    from saltbench.tasks import get_task

    rng = random.Random(0)
    dna = " ".join("".join(rng.choice("ACGT") for _ in range(3)) for _ in range(codons))
    task = get_task("dna")
    (prompt,) = render_prompts(tokenizer, [task.prompt(dna)])
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
    return encode_prompt(tokenizer, prompt), layout, specs, reference


def _same_rows(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """The same continuations and correctness, teacher-forced log-probabilities within 1e-3."""
    return all(
        (x["continuation"], x["next_correct"]) == (y["continuation"], y["next_correct"])
        and abs(x["tf_logprob_with_gap"] - y["tf_logprob_with_gap"]) < 1e-3
        for x, y in zip(a, b)
    )


def interventions(args: argparse.Namespace) -> dict[str, Any]:
    """The ``interventions`` subcommand (module docstring)."""
    import torch

    from saltbench.inference import LocalSource, ModelSpec, load_model
    from saltbench.inference.hf import HfModel
    from saltbench.stages.interventions import SampleRun, run_sample

    torch.set_num_threads(args.threads)
    model_dir, _ = smollm2(args.model_dir)
    model, tok = load_model(model_dir, "float32", "cpu")
    loaded = HfModel(ModelSpec(name="m", source=LocalSource(path=str(model_dir))), tok, model, 16, 20)
    prompt_ids, layout, specs, reference = _intervention_sample(tok, args.codons)
    results: dict[str, Any] = {
        "load_average": load_average(),
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
            partial(
                run_sample,
                loaded,
                prompt_ids,
                layout,
                specs,
                task="dna",
                variant=None,
                reference=reference,
                run=run,
            ),
            args.repeats,
        )
        results["reuse_cache" if reuse else "reencode_prompt"] = rate(timing, len(specs), "interventions")
    prefix_tokens = [row["prefix_tokens"] for row in rows[True]]
    results["prefix_tokens_mean"] = sum(prefix_tokens) / len(prefix_tokens)
    reasons = [row["finish_reason"] for row in rows[True]]
    results["finish_reasons"] = {r: reasons.count(r) for r in ("stop", "eos", "length")}
    results["same_rows"] = _same_rows(rows[True], rows[False])
    results["speedup_wall"] = results["reencode_prompt"]["seconds"] / results["reuse_cache"]["seconds"]
    results["speedup_cpu"] = results["reencode_prompt"]["cpu_seconds"] / results["reuse_cache"]["cpu_seconds"]
    return results


# --- draws -------------------------------------------------------------------------------------------------


def _draw_runs(engine: str, model: Any, tokenizer: Any, prompts: list[str], args: argparse.Namespace) -> dict:
    """The greedy and the draws run of one engine on the same prompts (``engine``: hf or vllm)."""
    from saltbench.inference.base import DrawSettings
    from saltbench.inference.hf.generation import generate, sample
    from saltbench.inference.vllm.engine import generate_vllm, sample_vllm

    settings = DrawSettings(args.n, temperature=1.0, top_p=args.top_p)
    seeds = list(range(len(prompts)))
    if engine == "hf":
        size = args.batch_size
        return {
            "greedy": lambda: generate(
                model, tokenizer, prompts, max_new_tokens=args.new, batch_size=size, progress=False
            ),
            "draws": lambda: [
                r
                for rs in sample(
                    model,
                    tokenizer,
                    prompts,
                    seeds,
                    settings,
                    max_new_tokens=args.new,
                    batch_size=size,
                    progress=False,
                )
                for r in rs
            ],
        }
    return {
        "greedy": lambda: generate_vllm(model, prompts, max_new_tokens=args.new, progress=False),
        "draws": lambda: [
            r
            for rs in sample_vllm(model, prompts, seeds, settings, max_new_tokens=args.new, progress=False)
            for r in rs
        ],
    }


def _draws_side_by_side(engine: str, model: Any, tokenizer: Any, args: argparse.Namespace) -> dict:
    """Answers / s and tokens / s of greedy answers and of ``n`` draws of the same prompts, alternating."""
    from saltbench.inference import render_prompts

    prompts = render_prompts(tokenizer, dna_instructions(args.prompts))
    best, records = alternate(_draw_runs(engine, model, tokenizer, prompts, args), args.repeats)
    row: dict[str, Any] = {}
    for name, timing in best.items():
        tokens = sum(r.num_generated_tokens for r in records[name])
        row[name] = {
            **timing,
            "answers": len(records[name]),
            "tokens": tokens,
            "answers_per_s": len(records[name]) / timing["seconds"],
            "tok_per_s": tokens / timing["seconds"],
        }
    row["wall_ratio"] = best["draws"]["seconds"] / best["greedy"]["seconds"]
    row["cpu_ratio"] = best["draws"]["cpu_seconds"] / best["greedy"]["cpu_seconds"]
    row["tok_per_s_ratio"] = row["draws"]["tok_per_s"] / row["greedy"]["tok_per_s"]
    print(
        f"{engine}: {args.prompts} greedy answers {row['greedy']['seconds']:.1f} s "
        f"({row['greedy']['tok_per_s']:.1f} tok/s), {row['draws']['answers']} draws (n={args.n}) "
        f"{row['draws']['seconds']:.1f} s ({row['draws']['tok_per_s']:.1f} tok/s): draws/greedy wall "
        f"{row['wall_ratio']:.2f}x, CPU {row['cpu_ratio']:.2f}x, tokens/s {row['tok_per_s_ratio']:.2f}x"
    )
    return row


def draws(args: argparse.Namespace) -> dict[str, Any]:
    """The ``draws`` subcommand (module docstring)."""
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    from saltbench.inference import load_model, load_vllm

    torch.set_num_threads(args.threads)
    model_dir, _ = smollm2(args.model_dir)
    results: dict[str, Any] = {
        "threads": args.threads,
        "new_tokens": args.new,
        "n": args.n,
        "prompts": args.prompts,
        "top_p": args.top_p,
        "load_average": load_average(),
    }
    engines = [e for e in args.engines.split(",") if e]
    if "hf" in engines:
        model, tokenizer = load_model(model_dir, "float32", "cpu")
        results["hf"] = _draws_side_by_side("hf", model, tokenizer, args)
        del model
    if "vllm" in engines:
        engine = load_vllm(model_dir, vllm_spec(), num_threads=args.threads, prefix_caching=True)
        results["vllm"] = _draws_side_by_side("vllm", engine, engine.tokenizer, args)
        engine.close()
    results["load_average_after"] = load_average()
    return results


# --- command line -----------------------------------------------------------------------------------------

COMMANDS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "hf": hf,
    "backends": backends,
    "server": server,
    "groups": groups,
    "interventions": interventions,
    "draws": draws,
}


def parser() -> argparse.ArgumentParser:
    """One subcommand per measurement, each with the shared ``--model-dir``, ``--repeats``, ``--out``."""
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument(
        "--model-dir", type=Path, default=SMOLLM2_DIR, help="converted SmolLM2 (made if missing)"
    )
    shared.add_argument("--repeats", type=int, default=2, help="alternating repeats; the minimum is kept")
    shared.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    commands = cli.add_subparsers(dest="command", required=True)
    sub = {name: commands.add_parser(name, parents=[shared], help=f"see {name} above") for name in COMMANDS}
    sub["hf"].add_argument(
        "--threads", type=int, default=None, help="torch intra-op threads (default: torch's)"
    )
    sub["hf"].add_argument("--new", type=int, default=64, help="new tokens per prompt in the throughput runs")
    sub["backends"].add_argument("--threads", type=int, default=1)
    sub["backends"].add_argument("--new", type=int, default=128)
    sub["backends"].add_argument("--sizes", default="8,32", help="prompts per batch, comma-separated")
    sub["backends"].add_argument(
        "--samples", type=int, default=3, help="Kronecker samples of the interventions"
    )
    sub["server"].add_argument("--threads", type=int, default=1)
    sub["server"].add_argument("--new", type=int, default=96)
    sub["server"].add_argument("--prompts", type=int, default=32)
    sub["server"].add_argument("--concurrency", default="1,8,32")
    sub["server"].add_argument("--workflow", action="store_true", help="also the routes' workflow runs")
    sub["server"].add_argument("--skip-throughput", action="store_true", help="the workflow runs only")
    sub["server"].add_argument(
        "--routes", default=",".join(ROUTES), help="--workflow's routes, comma-separated"
    )
    sub["groups"].add_argument("--groups", type=int, nargs="+", default=[36, 24, 12, 6])
    sub["groups"].add_argument("--threads", type=int, default=1)
    sub["interventions"].add_argument("--threads", type=int, default=2)
    sub["interventions"].add_argument(
        "--codons", type=int, default=100, help="DNA input length (answer atoms)"
    )
    sub["interventions"].add_argument(
        "--new",
        type=int,
        default=0,
        help="greedy budget per intervention (0: the workflow's automatic budget)",
    )
    sub["interventions"].add_argument(
        "--no-early-stop", action="store_true", help="always decode the whole budget"
    )
    sub["interventions"].add_argument("--batch-size", type=int, default=16)
    sub["draws"].add_argument("--engines", default="hf,vllm", help="hf and/or vllm, comma-separated")
    sub["draws"].add_argument("--threads", type=int, default=1)
    sub["draws"].add_argument("--n", type=int, default=5, help="draws per prompt")
    sub["draws"].add_argument("--top-p", type=float, default=1.0)
    sub["draws"].add_argument("--prompts", type=int, default=8)
    sub["draws"].add_argument("--new", type=int, default=48, help="new tokens per answer at most")
    sub["draws"].add_argument("--batch-size", type=int, default=8, help="hf: rows per decoding batch")
    return cli


def main(argv: list[str] | None = None) -> int:
    import logging

    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    write_json(COMMANDS[args.command](args), args.out)
    return 0


if __name__ == "__main__":  # vLLM spawns its engine process, which re-imports this file
    sys.exit(main())
