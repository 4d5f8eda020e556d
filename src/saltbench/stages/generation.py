"""The inference stage: dataset rows -> prompts -> greedy generations with per-token log-probabilities.

A model is loaded once through its backend (:func:`saltbench.inference.backends.load_backend`); one shard
(:func:`generate_shard`, the ``per_shard`` job layout) or every style, task and shard of a model
(:func:`generate_model`, the ``per_model`` layout, resumable through a :class:`ShardStore`) is generated
from it. Callable from a notebook without Snakemake (docs/generation.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from saltbench.config import InferenceConfig
from saltbench.core.shards import n_shards
from saltbench.core.vocabulary import Backend
from saltbench.inference.backends import LoadedModel, LoadSettings, load_backend
from saltbench.inference.registry import ModelSpec
from saltbench.tasks import get_task

log = logging.getLogger(__name__)


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


def load_generator(
    model_path: str | Path,
    spec: ModelSpec,
    inference: InferenceConfig,
    *,
    backend: Backend | None = None,
    num_threads: int | None = None,
    request_cache: str | Path | None = None,
    server: str | Path | None = None,
) -> LoadedModel:
    """Load a registry model once for the inference stage: ``inference.batch_size`` prompts per transformers
    batch, ``inference.top_k`` log-probabilities per token; ``backend`` overrides the registry entry's
    (``inference.backend``); ``num_threads`` bounds a CPU vLLM engine's threads; ``request_cache``: where the
    ``openai`` and ``vllm_server`` backends keep completed requests; ``server``: the endpoint file of a
    ``vllm_server`` model's server."""
    settings = LoadSettings(
        batch_size=inference.batch_size,
        top_k=inference.top_k,
        num_threads=num_threads,
        cache_dir=request_cache,
        server=server,
    )
    return load_backend(model_path, spec, backend=backend, settings=settings)


def generate_shard(
    rows: pl.DataFrame,
    inference: InferenceConfig,
    *,
    model_name: str,
    model_path: str | Path,
    spec: ModelSpec,
    style: str,
    n_shots: int | None,
    progress: bool = True,
    backend: Backend | None = None,
    num_threads: int | None = None,
    request_cache: str | Path | None = None,
    server: str | Path | None = None,
) -> pl.DataFrame:
    """Generate one shard: load the model (:func:`load_generator`), then :func:`generate_rows` with the task's
    budget in ``style`` (:meth:`~saltbench.config.InferenceConfig.max_new_tokens_for`; every row has one
    task)."""
    tasks = set(rows["task"].to_list())
    if len(tasks) > 1:
        raise ValueError(f"a shard holds one task's rows, got {sorted(tasks)}")
    model = load_generator(
        model_path, spec, inference, backend=backend, num_threads=num_threads, request_cache=request_cache,
        server=server,
    )  # fmt: skip
    budget = inference.max_new_tokens_for(tasks.pop(), style) if tasks else 1
    return generate_rows(
        model, rows, model_name=model_name, style=style, n_shots=n_shots, max_new_tokens=budget,
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
    groups = [pending] if model.continuous_batching else [[i] for i in pending]
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


__all__ = [
    "ShardDirectory",
    "ShardJob",
    "ShardStore",
    "answered_rows",
    "build_prompts",
    "generate_model",
    "generate_rows",
    "generate_shard",
    "load_generator",
    "merge_shards",
    "n_shards",
    "shard_rows",
]
