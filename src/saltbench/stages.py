"""Stage functions behind the workflow rules, callable from a notebook without Snakemake.

Each function takes frames and plain options and returns a frame; the workflow scripts only read
inputs, call one of these, and write the result with provenance.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from saltbench.tasks import get_task

log = logging.getLogger(__name__)


def n_shards(n_samples: int, shard_size: int) -> int:
    """Number of inference shards for ``n_samples`` samples: ``ceil(n / shard_size)`` (at least 1)."""
    if shard_size < 1:
        raise ValueError(f"shard_size must be >= 1, got {shard_size}")
    return max(1, math.ceil(n_samples / shard_size))


def answered_rows(dataset: pl.DataFrame, max_samples: int | None) -> pl.DataFrame:
    """The dataset rows a model answers: the first ``max_samples`` (``inference.max_samples``), or all."""
    return dataset if max_samples is None else dataset.head(max_samples)


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


@dataclass
class LoadedModel:
    """A model loaded once for many prompt sets: the backend's engine, its tokenizer and the registry entry.

    ``generate(prompts, budgets)`` renders nothing: ``prompts`` are chat-rendered strings, ``budgets`` the
    ``max_new_tokens`` of each (vLLM runs all of them in one continuous batch; transformers in batches of
    ``batch_size`` per budget).
    """

    backend: str
    spec: Any
    tokenizer: Any
    engine: Any
    batch_size: int
    top_k: int

    def render(self, instructions: Sequence[str]) -> list[str]:
        """The prompts as the model sees them (the registry's chat template, system prompt, thinking flag)."""
        from saltbench.inference import render_prompts

        return render_prompts(
            self.tokenizer,
            instructions,
            system_prompt=self.spec.system_prompt,
            chat_template=self.spec.chat_template,
            thinking=self.spec.thinking,
        )

    def generate(self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True) -> list[Any]:
        """One greedy :class:`~saltbench.inference.GenerationRecord` per prompt, in order; ``budgets`` are
        capped by the registry's ``max_new_tokens`` rule (``spec.max_new_tokens``)."""
        from saltbench.inference import generate, generate_vllm

        if len(budgets) != len(prompts):
            raise ValueError(f"{len(budgets)} budgets for {len(prompts)} prompts")
        capped = [self.spec.max_new_tokens(b) for b in budgets]
        if self.backend == "vllm":  # one continuous batch, a budget per request
            return generate_vllm(
                self.engine,
                prompts,
                max_new_tokens=capped,
                top_k=self.top_k,
                max_context=self.spec.max_context,
                progress=progress,
            )
        records: list[Any] = [None] * len(prompts)
        for budget in sorted(set(capped)):  # transformers: batches of one budget
            index = [i for i, b in enumerate(capped) if b == budget]
            out = generate(
                self.engine,
                self.tokenizer,
                [prompts[i] for i in index],
                max_new_tokens=budget,
                batch_size=self.batch_size,
                top_k=self.top_k,
                max_context=self.spec.max_context,
                progress=progress,
            )
            for i, record in zip(index, out, strict=True):
                records[i] = record
        return records


def load_generator(
    model_path: str | Path,
    spec: Any,
    *,
    backend: str | None = None,
    batch_size: int = 8,
    top_k: int = 20,
    num_threads: int | None = None,
) -> LoadedModel:
    """Load a registry model once (``backend``: ``hf`` or ``vllm``; default: the entry's ``backend``).

    ``num_threads`` bounds a CPU vLLM engine's threads (transformers uses torch's thread pool as set).
    """
    from saltbench.inference import load_model, load_vllm

    backend = backend or spec.backend
    if backend == "vllm":
        engine = load_vllm(model_path, spec, num_threads=num_threads, max_logprobs=top_k)
        return LoadedModel(backend, spec, engine.tokenizer, engine, batch_size, top_k)
    model, tokenizer = load_model(
        model_path, spec.dtype, revision=spec.revision, num_gpus=spec.resources.gpus
    )
    return LoadedModel(backend, spec, tokenizer, model, batch_size, top_k)


def generate_rows(
    model: LoadedModel,
    rows: pl.DataFrame,
    *,
    model_name: str,
    style: str,
    n_shots: int | None,
    max_new_tokens: int,
    progress: bool = True,
) -> pl.DataFrame:
    """The generations frame of dataset ``rows`` in prompt ``style`` (prompts -> chat rendering -> greedy
    decoding with per-token log-probabilities)."""
    from saltbench.inference import records_to_frame

    prompts = model.render(build_prompts(rows, style, n_shots))
    records = model.generate(prompts, [max_new_tokens] * len(prompts), progress=progress)
    return records_to_frame(records, _generation_meta(rows, model_name, style, prompts))


def _generation_meta(
    rows: pl.DataFrame, model_name: str, style: str, prompts: list[str]
) -> dict[str, list[Any]]:
    return {
        "sample_id": rows["sample_id"].to_list(),
        "task": rows["task"].to_list(),
        "variant": rows["variant"].to_list(),
        "model": [model_name] * rows.height,
        "style": [style] * rows.height,
        "prompt": prompts,
    }


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
    """Generate one shard: load the model (:func:`load_generator`), then :func:`generate_rows`.

    ``backend``: ``hf`` (transformers, batches of ``batch_size``) or ``vllm`` (continuous batching;
    ``num_threads`` bounds a CPU engine's threads); default: the registry entry's ``backend``.
    """
    model = load_generator(
        model_path, spec, backend=backend, batch_size=batch_size, top_k=top_k, num_threads=num_threads
    )
    return generate_rows(
        model, rows, model_name=model_name, style=style, n_shots=n_shots, max_new_tokens=max_new_tokens,
        progress=progress,
    )  # fmt: skip


@dataclass(frozen=True)
class ShardJob:
    """One shard of one (style, task) of a whole-model inference job: ``rows`` to generate, their budget."""

    style: str
    task: str
    shard: int
    rows: pl.DataFrame
    max_new_tokens: int


class ShardStore(Protocol):
    """Where a whole-model job keeps finished shards, so that a rerun after a kill redoes only the rest."""

    def load(self, job: ShardJob) -> pl.DataFrame | None:
        """The shard's generations if a valid copy is kept, else ``None``."""

    def save(self, job: ShardJob, frame: pl.DataFrame) -> None:
        """Keep the shard's generations."""


def generate_model(
    model: LoadedModel,
    jobs: Sequence[ShardJob],
    *,
    model_name: str,
    n_shots: int | None,
    store: ShardStore | None = None,
    progress: bool = True,
) -> dict[tuple[str, str], pl.DataFrame]:
    """Every (style, task) generations frame of one model from one model load (rows in shard order).

    Shards found in ``store`` are taken from it; the others are generated — with transformers one shard
    at a time, with vLLM all of them in one continuous batch — and saved to ``store`` as they finish
    (with vLLM, when the batch finishes). The frames equal those of :func:`generate_shard` per shard,
    concatenated (:func:`merge_shards`).
    """
    from saltbench.inference import records_to_frame

    frames: dict[int, pl.DataFrame] = {}
    pending: list[int] = []
    for i, job in enumerate(jobs):
        kept = store.load(job) if store is not None else None
        if kept is None:
            pending.append(i)
        else:
            frames[i] = kept
    if pending:
        log.info(
            "%s: %d of %d shards to generate (%d kept)", model_name, len(pending), len(jobs), len(frames)
        )
    groups = [pending] if model.backend == "vllm" else [[i] for i in pending]
    for group in groups:
        prompts = {i: model.render(build_prompts(jobs[i].rows, jobs[i].style, n_shots)) for i in group}
        flat = [p for i in group for p in prompts[i]]
        budgets = [jobs[i].max_new_tokens for i in group for _ in prompts[i]]
        records = iter(model.generate(flat, budgets, progress=progress))
        for i in group:
            job = jobs[i]
            shard_records = [next(records) for _ in prompts[i]]
            frames[i] = records_to_frame(
                shard_records, _generation_meta(job.rows, model_name, job.style, prompts[i])
            )
            if store is not None:
                store.save(job, frames[i])
    out: dict[tuple[str, str], list[pl.DataFrame]] = {}
    for i, job in enumerate(jobs):
        out.setdefault((job.style, job.task), []).append(frames[i])
    return {key: merge_shards(parts) for key, parts in out.items()}


class ShardDirectory:
    """A :class:`ShardStore` on disk: ``{root}/{style}/{task}/shard-{k}.parquet``, each a verified
    generations artifact whose provenance carries ``key`` plus the shard's sample ids.

    ``key`` identifies everything a shard's generations depend on besides its rows (model, backend,
    inference settings, ...): a kept file with another key, other sample ids or a failed integrity check
    is not used (it is generated again and overwritten). :meth:`clear` removes the directory once the
    job's outputs are written.
    """

    def __init__(self, root: str | Path, key: str, provenance: Mapping[str, Any] | None = None) -> None:
        self.root, self.key, self.extra = Path(root), key, dict(provenance or {})

    def path(self, job: ShardJob) -> Path:
        return self.root / job.style / job.task / f"shard-{job.shard}.parquet"

    def _ids_key(self, job: ShardJob) -> str:
        from saltbench.io import config_hash

        return config_hash(
            {
                "key": self.key,
                "sample_ids": job.rows["sample_id"].to_list(),
                "inputs": job.rows["input"].to_list(),
            }
        )

    def load(self, job: ShardJob) -> pl.DataFrame | None:
        from saltbench.io import CorruptFileError, read_provenance, read_table

        path = self.path(job)
        if not path.exists():
            return None
        try:
            if read_provenance(path).get("shard_key") != self._ids_key(job):
                log.info("kept shard %s is from other settings; generating it again", path)
                return None
            return read_table(path, "generations")
        except CorruptFileError as exc:
            log.warning("kept shard not used: %s", exc)
            return None

    def save(self, job: ShardJob, frame: pl.DataFrame) -> None:
        from saltbench.io import provenance, write_table

        path = self.path(job)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = provenance(
            **self.extra, style=job.style, task=job.task, shard=job.shard, shard_key=self._ids_key(job)
        )
        write_table(frame, path, meta, "generations")

    def clear(self) -> None:
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


def merge_shards(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate shard frames; duplicated sample ids (a shard written twice) are an error."""
    merged = pl.concat(frames, how="vertical") if frames else pl.DataFrame()
    if merged.height and merged["sample_id"].is_duplicated().any():
        dup = merged.filter(pl.col("sample_id").is_duplicated())["sample_id"].unique().to_list()
        raise ValueError(f"sample ids appear in several shards: {dup[:5]}")
    return merged
