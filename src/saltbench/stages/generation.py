"""The inference stage: dataset rows -> prompts -> greedy generations with per-token log-probabilities, and
the draws (``inference.samples``: sampled answers beside the greedy one, :class:`DrawRequest`,
docs/generation.md §7) through the same shards, groups and kept copies.

A model is loaded once through its backend (:func:`saltbench.inference.backends.load_backend`); one shard
(:func:`generate_shard`, the ``per_shard`` job layout) or every style, task and shard of a model
(:func:`generate_model`, the ``per_model`` layout, resumable through a :class:`ShardStore`) is generated
from it. Callable from a notebook without Snakemake (docs/generation.md).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import polars as pl

from saltbench.config import InferenceConfig
from saltbench.core.seeds import derive_seed
from saltbench.core.shards import n_shards
from saltbench.inference.backends import LoadedModel, LoadSettings, load_backend
from saltbench.inference.base import DrawSettings, sampling_model
from saltbench.inference.records import GenerationRecord
from saltbench.inference.registry import ModelSpec
from saltbench.tasks import get_task

log = logging.getLogger(__name__)


class GenerationFailed(RuntimeError):
    """Too many prompts of a shard ended as error rows (``inference.max_error_share``): the shard is not
    written, and its job fails naming the model and the reasons."""


def check_error_rows(frame: pl.DataFrame, *, model_name: str, what: str, max_error_share: float) -> None:
    """Raise :class:`GenerationFailed` when more than ``max_error_share`` of ``frame``'s rows (one shard's
    generations) are error rows (``finish_reason == "error"``), naming ``model_name``, ``what`` (the
    shard) and the most frequent error messages with their counts.

    Examples:
        >>> rows = pl.DataFrame({"finish_reason": ["error", "eos"], "error": ["prompt too long", None]})
        >>> check_error_rows(rows, model_name="m", what="direct/dna shard 0", max_error_share=0.5)
        >>> check_error_rows(rows, model_name="m", what="direct/dna shard 0", max_error_share=0.05)
        Traceback (most recent call last):
        ...
        saltbench.stages.generation.GenerationFailed: model 'm', direct/dna shard 0: 1 of 2 prompts ended as
        error rows (...): 1 x prompt too long; the shard is not written
    """
    errors = frame.filter(pl.col("finish_reason") == "error")
    if not frame.height or errors.height <= max_error_share * frame.height:
        return
    # reasons that differ only in their numbers (token counts) are one reason; one example of each is shown
    kinds = errors.select(
        pl.col("error").fill_null(""), kind=pl.col("error").fill_null("").str.replace_all(r"\d+", "N")
    )
    counts = kinds.group_by("kind", maintain_order=True).agg(pl.len(), pl.col("error").first())
    counts = counts.sort("len", descending=True, maintain_order=True)
    reasons = "; ".join(f"{n} x {example}" for _, n, example in counts.head(3).iter_rows())
    more = f"; and {counts.height - 3} other reason(s)" if counts.height > 3 else ""
    raise GenerationFailed(
        f"model {model_name!r}, {what}: {errors.height} of {frame.height} prompts ended as error rows (more "
        f"than inference.max_error_share = {max_error_share:g}): {reasons}{more}; the shard is not written"
    )


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


@dataclass(frozen=True)
class DrawRequest:
    """The draws a job samples (``inference.samples``, docs/generation.md §7): ``settings`` and the seed every
    prompt's seed derives from."""

    settings: DrawSettings
    seed: int

    @classmethod
    def from_config(cls, inference: InferenceConfig, run_seed: int) -> DrawRequest | None:
        """The request of ``inference.samples`` (its seed, else the run's); ``None`` when ``n`` is 0."""
        samples = inference.samples
        if samples.n == 0:
            return None
        seed = run_seed if samples.seed is None else samples.seed
        return cls(DrawSettings(samples.n, samples.temperature, samples.top_p), seed)

    def prompt_seeds(self, model_name: str, style: str, rows: pl.DataFrame) -> list[int]:
        """The seed of each row's prompt: ``derive_seed("draws", seed, model, style, task, sample_id)``
        (draw ``d`` then uses :func:`~saltbench.inference.base.draw_seed` of it and ``d``)."""
        return [
            derive_seed("draws", self.seed, model_name, style, task, sample_id)
            for task, sample_id in rows.select("task", "sample_id").iter_rows()
        ]


def draws_frame(
    records: Sequence[Sequence[GenerationRecord]], meta: Mapping[str, Sequence[Any]]
) -> pl.DataFrame:
    """The draws table of ``records[i]`` (the draws of prompt ``i``, whose ``meta`` values are
    ``meta[*][i]``): one row per (prompt, draw), the ``draws`` artifact's columns."""
    from saltbench.inference import records_to_frame

    counts = [len(r) for r in records]
    repeated: dict[str, Any] = {
        k: [v for v, n in zip(col, counts) for _ in range(n)] for k, col in meta.items()
    }
    repeated["draw"] = np.concatenate(
        [np.arange(n, dtype=np.int32) for n in counts] or [np.zeros(0, np.int32)]
    )
    return records_to_frame([r for draws in records for r in draws], repeated)


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
    backend: str | None = None,
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
        whole_prefills=inference.samples.n > 0,  # a draws job (greedy jobs read no inference.samples)
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
    backend: str | None = None,
    num_threads: int | None = None,
    request_cache: str | Path | None = None,
    server: str | Path | None = None,
    draws: DrawRequest | None = None,
) -> pl.DataFrame:
    """Generate one shard: load the model (:func:`load_generator`), then :func:`generate_rows` with the task's
    budget in ``style`` (:meth:`~saltbench.config.InferenceConfig.max_new_tokens_for`; every row has one
    task), or with ``draws`` the shard's draws table; :class:`GenerationFailed` when more than
    ``inference.max_error_share`` of its rows are error rows (:func:`check_error_rows`)."""
    tasks = set(rows["task"].to_list())
    if len(tasks) > 1:
        raise ValueError(f"a shard holds one task's rows, got {sorted(tasks)}")
    model = load_generator(
        model_path,
        spec,
        inference,
        backend=backend,
        num_threads=num_threads,
        request_cache=request_cache,
        server=server,
    )
    task = tasks.pop() if tasks else ""
    budget = inference.max_new_tokens_for(task, style) if task else 1
    if draws is not None:
        job = ShardJob(style, task, 0, rows, budget)
        frame = _generate_group(model, [job], model_name, n_shots, progress, draws)[0]
    else:
        frame = generate_rows(
            model,
            rows,
            model_name=model_name,
            style=style,
            n_shots=n_shots,
            max_new_tokens=budget,
            progress=progress,
        )
    check_error_rows(
        frame, model_name=model_name, what=f"{style}/{task} shard", max_error_share=inference.max_error_share
    )
    return frame


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


def shard_groups(jobs: Sequence[ShardJob], group_prompts: int | None) -> list[list[int]]:
    """The fixed partition of a whole-model job's shards (indices into ``jobs``) into what one engine call
    generates: consecutive shards packed while their prompts sum to at most ``group_prompts`` (a shard
    larger than that is a group alone); ``None``: one shard per group.

    The partition depends on ``jobs`` and ``group_prompts`` only, never on which shards a rerun still has to
    generate, so every prompt is generated in the same batch in an interrupted-and-resumed run as in an
    uninterrupted one (a vLLM engine's log-probabilities depend on the batch a prompt is in).

    Examples:
        >>> import polars as pl
        >>> sizes = [3, 3, 2, 5]
        >>> jobs = [ShardJob("cot", "dna", k, pl.DataFrame({"i": range(n)}), 8) for k, n in enumerate(sizes)]
        >>> shard_groups(jobs, 6), shard_groups(jobs, 4), shard_groups(jobs, None)
        ([[0, 1], [2], [3]], [[0], [1], [2], [3]], [[0], [1], [2], [3]])
    """
    if group_prompts is None:
        return [[i] for i in range(len(jobs))]
    groups: list[list[int]] = []
    size = 0
    for i, job in enumerate(jobs):
        if groups and size + job.rows.height <= group_prompts:
            groups[-1].append(i)
            size += job.rows.height
        else:
            groups.append([i])
            size = job.rows.height
    return groups


def generate_model(
    model: LoadedModel,
    jobs: Sequence[ShardJob],
    *,
    model_name: str,
    n_shots: int | None,
    store: ShardStore | None = None,
    group_prompts: int | None = None,
    wanted: Collection[tuple[str, str]] | None = None,
    max_error_share: float = 1.0,
    progress: bool = True,
    draws: DrawRequest | None = None,
) -> dict[tuple[str, str], pl.DataFrame]:
    """The (style, task) generations frames of one model from one model load (rows in shard order).

    ``jobs`` are every shard of the model; the frames returned are those of ``wanted`` (default: every
    (style, task) of ``jobs``). The shards are generated in the fixed groups of :func:`shard_groups` —
    ``group_prompts`` prompts per engine call on a continuous-batching engine (vLLM), one shard per call on
    transformers — and each group's shards are saved to ``store`` when the group finishes. A group is
    skipped when each of its shards is kept in ``store`` or not wanted; otherwise it is generated whole
    (same batch as in an uninterrupted run), its kept shards taken from the store. The frames equal those
    of :func:`generate_shard` per shard, concatenated (:func:`merge_shards`); a shard with more than
    ``max_error_share`` error rows raises :class:`GenerationFailed` after the group's other shards are saved.
    With ``draws``, the frames are the draws tables (:func:`draws_frame`) instead.
    """
    wanted_keys = {(job.style, job.task) for job in jobs} if wanted is None else set(wanted)
    needed = [(job.style, job.task) in wanted_keys for job in jobs]
    frames: dict[int, pl.DataFrame] = {}
    for i, job in enumerate(jobs):
        kept = store.load(job) if store is not None and needed[i] else None
        if kept is not None:
            frames[i] = kept
    groups = shard_groups(jobs, group_prompts if model.continuous_batching else None)
    todo = [group for group in groups if any(needed[i] and i not in frames for i in group)]
    if todo:
        counts = (len(todo), len(groups), len(frames))
        log.info("%s: %d of %d shard groups to generate (%d shards kept)", model_name, *counts)
    for group in todo:
        fresh = _generate_group(model, [jobs[i] for i in group], model_name, n_shots, progress, draws)
        failures = []
        for i, frame in zip(group, fresh, strict=True):
            if not needed[i] or i in frames:
                continue  # generated only so that the batch is the uninterrupted run's
            job = jobs[i]
            what = f"{job.style}/{job.task} shard {job.shard}"
            try:
                check_error_rows(frame, model_name=model_name, what=what, max_error_share=max_error_share)
            except GenerationFailed as exc:
                failures.append(str(exc))
                continue
            frames[i] = frame
            if store is not None:
                store.save(job, frame)
        if failures:
            raise GenerationFailed("; ".join(failures))
    out: dict[tuple[str, str], list[pl.DataFrame]] = {}
    for i, job in enumerate(jobs):
        if needed[i]:
            out.setdefault((job.style, job.task), []).append(frames[i])
    return {key: merge_shards(parts) for key, parts in out.items()}


def _generate_group(
    model: LoadedModel,
    jobs: Sequence[ShardJob],
    model_name: str,
    n_shots: int | None,
    progress: bool,
    draws: DrawRequest | None = None,
) -> list[pl.DataFrame]:
    """The generations frame of each shard of ``jobs`` (with ``draws``: its draws table), from one engine
    call over all their prompts."""
    from saltbench.inference import records_to_frame

    prompts = [model.render(build_prompts(job.rows, job.style, n_shots)) for job in jobs]
    flat = [prompt for shard in prompts for prompt in shard]
    budgets = [job.max_new_tokens for job, shard in zip(jobs, prompts) for _ in shard]
    metas = [_generation_meta(job.rows, model_name, job.style, shard) for job, shard in zip(jobs, prompts)]
    if draws is None:
        records = iter(model.generate(flat, budgets, progress=progress))
        return [records_to_frame([next(records) for _ in shard], meta) for shard, meta in zip(prompts, metas)]
    seeds = [seed for job in jobs for seed in draws.prompt_seeds(model_name, job.style, job.rows)]
    drawn = iter(sampling_model(model).sample(flat, budgets, seeds, draws.settings, progress=progress))
    return [draws_frame([next(drawn) for _ in shard], meta) for shard, meta in zip(prompts, metas)]


class ShardDirectory:
    """A :class:`ShardStore` on disk: ``{root}/{style}/{task}/shard-{k}.parquet``, each a verified
    generations (or ``artifact``: draws) artifact whose provenance carries ``key`` plus the shard's sample
    ids.

    ``key`` identifies everything a shard's generations depend on besides its rows (model, backend,
    inference settings, ...): a kept file with another key, other sample ids or a failed integrity check
    is not used (it is generated again and overwritten). :meth:`clear` removes the directory once the
    job's outputs are written.
    """

    def __init__(
        self,
        root: str | Path,
        key: str,
        provenance: Mapping[str, Any] | None = None,
        artifact: str = "generations",
    ) -> None:
        self.root, self.key, self.extra, self.artifact = Path(root), key, dict(provenance or {}), artifact

    def path(self, job: ShardJob) -> Path:
        return self.root / job.style / job.task / f"shard-{job.shard}.parquet"

    def _ids_key(self, job: ShardJob) -> str:
        from saltbench.io import inputs_key

        return inputs_key({"key": self.key}, job.rows)

    def load(self, job: ShardJob) -> pl.DataFrame | None:
        from saltbench.io import CorruptFileError, read_provenance, read_table

        path = self.path(job)
        if not path.exists():
            return None
        try:
            if read_provenance(path).get("shard_key") != self._ids_key(job):
                log.info("kept shard %s is from other settings; generating it again", path)
                return None
            return read_table(path, self.artifact)
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
        write_table(frame, path, meta, self.artifact)

    def clear(self) -> None:
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


def merge_shards(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate shard frames; duplicated sample ids (draws: (sample id, draw) pairs; a shard written
    twice) are an error."""
    merged = pl.concat(frames, how="vertical") if frames else pl.DataFrame()
    key = ["sample_id", "draw"] if "draw" in merged.columns else ["sample_id"]
    if merged.height and merged.select(pl.struct(key).is_duplicated().any()).item():
        dup = merged.filter(pl.struct(key).is_duplicated())["sample_id"].unique().to_list()
        raise ValueError(f"sample ids appear in several shards: {dup[:5]}")
    return merged


__all__ = [
    "DrawRequest",
    "GenerationFailed",
    "ShardDirectory",
    "ShardJob",
    "ShardStore",
    "answered_rows",
    "build_prompts",
    "check_error_rows",
    "draws_frame",
    "generate_model",
    "generate_rows",
    "generate_shard",
    "load_generator",
    "merge_shards",
    "n_shards",
    "shard_groups",
    "shard_rows",
]
