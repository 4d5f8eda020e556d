"""Stage functions behind the workflow rules, callable from a notebook without Snakemake.

Each function takes frames and plain options and returns a frame; the workflow scripts only read
inputs, call one of these, and write the result with provenance.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from saltbench.tasks import get_task

log = logging.getLogger(__name__)


def n_shards(n_samples: int, shard_size: int) -> int:
    """Number of inference shards for ``n_samples`` samples: ``ceil(n / shard_size)`` (at least 1)."""
    if shard_size < 1:
        raise ValueError(f"shard_size must be >= 1, got {shard_size}")
    return max(1, math.ceil(n_samples / shard_size))


def shard_rows(dataset: pl.DataFrame, shard: int, shard_size: int) -> pl.DataFrame:
    """Rows ``[shard * shard_size, (shard + 1) * shard_size)`` of the dataset (in file order)."""
    if shard < 0:
        raise ValueError(f"shard must be >= 0, got {shard}")
    return dataset.slice(shard * shard_size, shard_size)


def build_prompts(rows: pl.DataFrame, style: str, n_shots: int | None) -> list[str]:
    """The task prompt of every dataset row (variant-aware for Code and Words)."""
    return [
        get_task(task, variant).prompt(text, style=style, n_shots=n_shots)  # type: ignore[arg-type]
        for task, variant, text in rows.select("task", "variant", "input").iter_rows()
    ]


def max_new_tokens_for(inference_cfg: Mapping[str, Any], task: str, style: str) -> int:
    """Generation budget.

    ``max_new_tokens[task]`` (or ``[default]``, else 512), times ``cot_factor`` for cot.
    """
    table = inference_cfg.get("max_new_tokens", {})
    base = int(table.get(task, table.get("default", 512)))
    return base if style == "direct" else int(round(base * float(inference_cfg.get("cot_factor", 2.0))))


def generate_shard(
    rows: pl.DataFrame,
    *,
    model_name: str,
    model_path: str | Path,
    spec: Any,
    style: str,
    n_shots: int | None,
    max_new_tokens: int,
    batch_size: int,
    top_k: int,
    progress: bool = True,
    backend: str | None = None,
    num_threads: int | None = None,
) -> pl.DataFrame:
    """Generate one shard: prompts -> chat rendering -> greedy decoding with per-token log-probabilities.

    ``backend``: ``hf`` (transformers, batches of ``batch_size``) or ``vllm`` (continuous batching;
    ``num_threads`` bounds a CPU engine's threads); default: the registry entry's ``backend``.
    """
    from saltbench.inference import (
        generate,
        generate_vllm,
        load_model,
        load_vllm,
        records_to_frame,
        render_prompts,
    )

    instructions = build_prompts(rows, style, n_shots)
    backend = backend or spec.backend
    if backend == "vllm":
        engine = load_vllm(model_path, spec, num_threads=num_threads, max_logprobs=top_k)
        tokenizer = engine.tokenizer
    else:
        model, tokenizer = load_model(
            model_path, spec.dtype, revision=spec.revision, num_gpus=spec.resources.gpus
        )
    prompts = render_prompts(
        tokenizer,
        instructions,
        system_prompt=spec.system_prompt,
        chat_template=spec.chat_template,
        thinking=spec.thinking,
    )
    budget = spec.max_new_tokens(max_new_tokens)
    if backend == "vllm":
        records = generate_vllm(
            engine,
            prompts,
            max_new_tokens=budget,
            top_k=top_k,
            max_context=spec.max_context,
            progress=progress,
        )
    else:
        records = generate(
            model,
            tokenizer,
            prompts,
            max_new_tokens=budget,
            batch_size=batch_size,
            top_k=top_k,
            max_context=spec.max_context,
            progress=progress,
        )
    meta = {
        "sample_id": rows["sample_id"].to_list(),
        "task": rows["task"].to_list(),
        "variant": rows["variant"].to_list(),
        "model": [model_name] * rows.height,
        "style": [style] * rows.height,
        "prompt": prompts,
    }
    return records_to_frame(records, meta)


def merge_shards(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate shard frames; duplicated sample ids (a shard written twice) are an error."""
    merged = pl.concat(frames, how="vertical") if frames else pl.DataFrame()
    if merged.height and merged["sample_id"].is_duplicated().any():
        dup = merged.filter(pl.col("sample_id").is_duplicated())["sample_id"].unique().to_list()
        raise ValueError(f"sample ids appear in several shards: {dup[:5]}")
    return merged
