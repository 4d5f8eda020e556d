"""vLLM through its OpenAI-compatible server vs the offline engine, and the default run's SmolLM2 stage on
each inference route (docs/backends.md §8.7; the managed server: §8.6).

Part 1, in one run, alternating the two routes ``--repeats`` times (one route alive at a time: an idle CPU
engine keeps polling) and keeping the minimum: greedy
generation throughput (generated tokens / s) on SmolLM2-135M-Instruct for the same ``--prompts`` DNA prompts
at concurrency 1, 8 and 32 — the server (:class:`saltbench.inference.serving.ServerProcess`, the workflow's
own command, reached through the ``openai`` backend with ``api.concurrency`` requests in flight) vs the
offline engine (:func:`saltbench.inference.load_vllm`, fed the prompts in batches of the same size); both
with ``--threads`` OpenMP threads; and whether both produced the same tokens.

Part 2 (``--workflow``): the default run's SmolLM2 generations (``config/config.yaml``: 36 prompts over six
tasks and two styles) as a Snakemake run in a fresh copy of the workflow, on each route: ``hf``
(transformers, one per-model job), ``vllm`` (today's default: one engine in the per-model job), ``vllm``
with one job per shard (an engine start per shard), and ``vllm_server`` (one workflow-managed server, the
per-model job its client). Wall time of the whole Snakemake command, start-ups included. Usage::

    python bench/bench_server.py [--threads 1] [--new 96] [--prompts 32] [--repeats 2] [--workflow] \
        [--out results.json]

Ratios are the numbers to quote: absolute rates drift with the machine's load.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _timing import timed

logger = logging.getLogger("bench_server")

REPO = Path(__file__).resolve().parents[1]
MODEL = "smollm2-135m"
ROUTES = {  # name -> inference settings over config/config.yaml's
    "hf": {"backend": "hf"},
    "vllm": {"backend": "vllm"},
    "vllm_per_shard": {"backend": "vllm", "jobs": "per_shard"},
    "vllm_server": {"backend": "vllm_server"},
}


def _client(base_url: str, spec: Any, model_dir: str, concurrency: int) -> Any:
    """The ``openai`` client of the server, prompts rendered here, ``concurrency`` requests in flight."""
    from saltbench.inference import parse_model_registry
    from saltbench.inference.backends import LoadSettings, load_backend

    api = {"endpoint": "completions", "token_ids": True, "tokenizer": model_dir, "concurrency": concurrency}
    entry = {
        "source": {"kind": "api", "base_url": base_url, "model": spec.name},
        "backend": "openai",
        "system_prompt": spec.system_prompt,
        "api": api,
    }
    return load_backend(
        base_url, parse_model_registry({"models": {MODEL: entry}})[MODEL], settings=LoadSettings()
    )


def _batched(model: Any, prompts: list[str], budgets: list[int], size: int) -> list[Any]:
    """``model.generate`` over batches of ``size`` prompts, one after the other."""
    return [
        record
        for i in range(0, len(prompts), size)
        for record in model.generate(prompts[i : i + size], budgets[i : i + size], progress=False)
    ]


def generation_throughput(args: argparse.Namespace) -> dict[str, Any]:
    """Part 1: tokens / s through the server and the offline engine at each concurrency.

    An idle vLLM engine on a CPU build keeps polling (about half a core per engine process here), so the two
    routes never run side by side: each round starts the server alone and measures every concurrency, stops
    it, then does the same with the offline engine; rounds alternate, and each cell keeps its minimum.
    """
    from saltbench.inference import get_model_spec, load_model_registry, load_vllm
    from saltbench.inference.backends import VllmModel
    from saltbench.inference.loading import load_tokenizer
    from saltbench.inference.serving import ServerProcess
    from saltbench.tasks import get_task

    local = get_model_spec(load_model_registry(REPO / "config/models.yaml"), MODEL)
    spec = dataclasses.replace(local, max_context=4096, enforce_eager=True)
    task = get_task("dna")
    rows = task.generate(args.prompts, seed=5, min_codons=20, max_codons=60)
    instructions = [task.prompt(x) for x in rows["input"]]
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    prompts = VllmModel(spec, load_tokenizer(args.model_dir), None, 1, 20).render(instructions)
    budgets = [args.new] * len(prompts)
    best: dict[tuple[str, int], float] = {}
    records: dict[tuple[str, int], list[Any]] = {}
    starts: dict[str, list[float]] = {"server": [], "offline": []}

    def keep(route: str, c: int, run: Any) -> None:
        timing, out = timed(run, 1)
        best[route, c] = min(best.get((route, c), float("inf")), timing["seconds"])
        records[route, c] = out

    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            with ServerProcess(
                args.model_dir, spec, Path(tmp) / "server.log", num_threads=args.threads
            ) as server:
                starts["server"].append(time.perf_counter() - started)
                for c in concurrencies:
                    client = _client(server.base_url, spec, args.model_dir, c)
                    assert client.render(instructions) == prompts
                    keep("server", c, lambda client=client: client.generate(prompts, budgets, progress=False))
        started = time.perf_counter()
        engine = load_vllm(args.model_dir, spec, num_threads=args.threads)
        starts["offline"].append(time.perf_counter() - started)
        offline = VllmModel(spec, engine.tokenizer, engine, args.prompts, 20)
        for c in concurrencies:  # the offline engine fed batches of c prompts: c requests in flight
            keep("offline", c, lambda c=c, model=offline: _batched(model, prompts, budgets, c))
        engine.close()
    results: dict[str, Any] = {f"{route}_start_s": min(times) for route, times in starts.items()}
    print(
        f"start (min of {args.repeats}): server {results['server_start_s']:.1f} s, "
        f"offline engine {results['offline_start_s']:.1f} s"
    )
    for c in concurrencies:
        # the offline record keeps the final EOS token, the server's stops before it: compare the server's
        same = sum(
            int(a.token_ids.tolist() == b.token_ids[: a.num_generated_tokens].tolist())
            for a, b in zip(records["server", c], records["offline", c])
        )
        row: dict[str, Any] = {}
        for route in ("server", "offline"):
            tokens = sum(min(r.num_generated_tokens, args.new) for r in records[route, c])
            row[route] = {"seconds": best[route, c], "tokens": tokens, "tok_per_s": tokens / best[route, c]}
        row["server_over_offline_tok_per_s"] = row["server"]["tok_per_s"] / row["offline"]["tok_per_s"]
        row["identical_generations"] = f"{same}/{len(prompts)}"
        results[f"concurrency_{c}"] = row
        server, offline = row["server"], row["offline"]
        print(
            f"concurrency {c}: server {server['tok_per_s']:.1f} tok/s ({server['seconds']:.1f} s), "
            f"offline {offline['tok_per_s']:.1f} tok/s ({offline['seconds']:.1f} s), "
            f"ratio {row['server_over_offline_tok_per_s']:.2f}, identical {same}/{len(prompts)}"
        )
    return results


def workflow_routes(args: argparse.Namespace) -> dict[str, Any]:
    """Part 2: the default run's SmolLM2 generations on each route, each in a fresh copy of the workflow."""
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    styles, tasks = config["prompt_styles"], config["tasks"]
    targets = [f"data/generations/{MODEL}/{s}/{t}.parquet" for s in styles for t in tasks]
    converted = REPO / "data/models/converted" / MODEL
    results: dict[str, Any] = {}
    for name in args.routes.split(","):
        inference = ROUTES[name]
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            for item in ("Snakefile", "rules", "workflow_scripts", "config", "report", "environment.yml"):
                source = REPO / item
                (shutil.copytree if source.is_dir() else shutil.copy2)(source, work / item)
            (work / "data/models/converted").mkdir(parents=True)
            shutil.copytree(converted, work / "data/models/converted" / MODEL)
            run_config = {**config, "inference": {**config["inference"], **inference}}
            (work / "config/bench.yaml").write_text(yaml.safe_dump(run_config))
            cmd = [
                sys.executable,
                "-m",
                "snakemake",
                *targets,
                "--cores",
                "2",
                "--configfile",
                "config/bench.yaml",
            ]
            started = time.perf_counter()
            proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
            seconds = time.perf_counter() - started
            if proc.returncode != 0:
                raise RuntimeError(f"{name}: snakemake failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
            jobs = proc.stdout.count("\nrule ") + proc.stderr.count("\nrule ")
            results[name] = {"seconds": seconds, "snakemake_jobs": jobs}
            print(f"workflow {name}: {seconds:.0f} s")
    if "vllm" in results:
        for name in results:
            results[name]["over_vllm_per_model"] = results[name]["seconds"] / results["vllm"]["seconds"]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model-dir", default=str(REPO / "data/models/converted" / MODEL))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--new", type=int, default=96)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workflow", action="store_true", help="also part 2 (about 10 minutes)")
    parser.add_argument("--skip-throughput", action="store_true", help="part 2 only")
    parser.add_argument("--routes", default=",".join(ROUTES), help="part 2's routes, comma-separated")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    results: dict[str, Any] = {
        "threads": args.threads,
        "new_tokens": args.new,
        "load_average": os.getloadavg(),
    }
    if not args.skip_throughput:
        results["throughput"] = generation_throughput(args)
    if args.workflow:
        results["workflow"] = workflow_routes(args)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":  # vLLM spawns its engine process, which re-imports this file
    main()
