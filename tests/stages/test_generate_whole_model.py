"""One inference job per model (``inference.jobs: per_model``): the same generations as the shard jobs, from
one model load, and a rerun after a kill keeps the shards already written (docs/generation.md §5)."""

from __future__ import annotations

import polars as pl
import pytest
import torch

from saltbench.config import InferenceConfig
from saltbench.core.contracts import DRAW_META
from saltbench.inference import load_model_registry
from saltbench.inference.base import DrawSettings
from saltbench.stages.generation import (
    DrawRequest,
    GenerationFailed,
    ShardDirectory,
    ShardJob,
    generate_model,
    generate_shard,
    load_generator,
    merge_shards,
    n_shards,
    shard_rows,
)
from saltbench.tasks import get_task
from saltbench.training.model import build_model
from saltbench.training.pairs import task_alphabet_corpus
from saltbench.training.recipe import ArchitectureSpec
from saltbench.training.tokenizer import build_char_tokenizer

SIZE = 2
INFERENCE = InferenceConfig(batch_size=2, max_new_tokens={"default": 6}, cot_factor=1.5)
BUDGETS = {"direct": 6, "cot": 9}  # INFERENCE.max_new_tokens_for(task, style)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A randomly initialised character-level Llama saved like a trained checkpoint."""
    path = tmp_path_factory.mktemp("tiny-model")
    tokenizer = build_char_tokenizer(task_alphabet_corpus())
    spec = ArchitectureSpec(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_positions=512)
    model = build_model(spec, tokenizer, 5)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def spec(model_dir, tmp_path_factory):
    registry = tmp_path_factory.mktemp("registry") / "models.yaml"
    registry.write_text(
        "models:\n  tiny@x:\n"
        f"    source: {{kind: local, path: {model_dir}}}\n"
        "    dtype: float32\n    chat_template: auto\n    max_context: 512\n"
        "    resources: {gpus: 0, gpu_model: null, mem_mb: 1000, runtime_min: 5, cpus: 1}\n"
    )
    return load_model_registry(registry)["tiny@x"]


@pytest.fixture(scope="module")
def jobs() -> list[ShardJob]:
    data = {
        "kronecker": get_task("kronecker").generate(5, 1),
        "dna": get_task("dna").generate(3, 1, max_codons=4),
    }
    return [
        ShardJob(style, task, k, shard_rows(rows, k, SIZE), BUDGETS[style])
        for style in ("direct", "cot")
        for task, rows in data.items()
        for k in range(n_shards(rows.height, SIZE))
    ]


def _whole(model_dir, spec, jobs, store=None):
    torch.set_num_threads(1)
    model = load_generator(model_dir, spec, INFERENCE)
    return generate_model(model, jobs, model_name="tiny@x", n_shots=None, store=store, progress=False)


def _columns(frame: pl.DataFrame) -> pl.DataFrame:
    columns = ("sample_id", "style", "prompt", "token_ids", "token_texts", "chosen_logprob", "topk_ids")
    return frame.select(columns)


def test_one_job_equals_the_shard_jobs(model_dir, spec, jobs) -> None:
    assert all(INFERENCE.max_new_tokens_for(job.task, job.style) == job.max_new_tokens for job in jobs)
    frames = _whole(model_dir, spec, jobs)
    assert set(frames) == {("direct", "kronecker"), ("direct", "dna"), ("cot", "kronecker"), ("cot", "dna")}
    for (style, task), frame in frames.items():
        parts = [
            generate_shard(
                job.rows,
                INFERENCE,
                model_name="tiny@x",
                model_path=model_dir,
                spec=spec,
                style=style,
                n_shots=None,
                progress=False,
            )
            for job in jobs
            if (job.style, job.task) == (style, task)
        ]
        assert _columns(frame).equals(_columns(merge_shards(parts)))


class _KilledAfter(ShardDirectory):
    """A store whose job is killed once ``limit`` shards have been saved."""

    def __init__(self, root, key, limit: int) -> None:
        super().__init__(root, key)
        self.limit, self.saved = limit, 0

    def save(self, job, frame) -> None:
        super().save(job, frame)
        self.saved += 1
        if self.saved == self.limit:
            raise KeyboardInterrupt("killed")


class _Counting(ShardDirectory):
    def __init__(self, root, key) -> None:
        super().__init__(root, key)
        self.generated: list[tuple[str, str, int]] = []

    def save(self, job, frame) -> None:
        super().save(job, frame)
        self.generated.append((job.style, job.task, job.shard))


def test_rerun_after_a_kill_keeps_the_finished_shards(model_dir, spec, jobs, tmp_path) -> None:
    expected = _whole(model_dir, spec, jobs)
    with pytest.raises(KeyboardInterrupt):
        _whole(model_dir, spec, jobs, _KilledAfter(tmp_path, "k", limit=3))
    rerun = _Counting(tmp_path, "k")
    frames = _whole(model_dir, spec, jobs, rerun)
    assert len(rerun.generated) == len(jobs) - 3
    assert [(j.style, j.task, j.shard) for j in jobs[3:]] == rerun.generated
    for key, frame in expected.items():
        assert _columns(frames[key]).equals(_columns(frame))
    rerun.clear()
    assert not tmp_path.exists()


def test_kept_shards_of_other_settings_or_damaged_are_regenerated(model_dir, spec, jobs, tmp_path) -> None:
    _whole(model_dir, spec, jobs, ShardDirectory(tmp_path, "old settings"))
    other = _Counting(tmp_path, "new settings")
    _whole(model_dir, spec, jobs, other)
    assert len(other.generated) == len(jobs)  # another key: nothing reused
    damaged = other.path(jobs[0])
    blob = bytearray(damaged.read_bytes())
    blob[len(blob) // 3] ^= 0xFF
    damaged.write_bytes(bytes(blob))
    again = _Counting(tmp_path, "new settings")
    _whole(model_dir, spec, jobs, again)
    assert again.generated == [(jobs[0].style, jobs[0].task, jobs[0].shard)]


class _BatchRecorder:
    """A continuous-batching model whose outputs depend on the batch a prompt is in (as vLLM's do): its one
    token's log-probability is ``-len(batch) / 100``; a prompt of a task in ``failing`` is an error row."""

    continuous_batching = True
    backend = "vllm"

    def __init__(self, failing: tuple[str, ...] = ()) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.failing = failing

    def render(self, prompts):
        return list(prompts)

    def generate(self, prompts, budgets, progress=True):
        import numpy as np

        from saltbench.inference import GenerationRecord, TokenScores

        self.calls.append(tuple(prompts))
        logprob = np.float32(-len(prompts) / 100)
        scores = TokenScores(
            token_ids=np.array([7], np.int32),
            chosen_logprobs=np.array([logprob], np.float32),
            topk_ids=np.array([[7, 8]], np.int32),
            topk_logprobs=np.array([[logprob, -5.0]], np.float32),
            entropy=np.array([np.nan], np.float32),
        )
        return [
            GenerationRecord.failed("prompt too long", num_prompt_tokens=3, k=2)
            if any(task in prompt for task in self.failing)
            else GenerationRecord.from_scores(scores, ["A"], finish_reason="eos", num_prompt_tokens=3)
            for prompt in prompts
        ]


def _batches(jobs, group_prompts, **kwargs):
    model = _BatchRecorder(kwargs.pop("failing", ()))
    frames = generate_model(
        model, jobs, model_name="m", n_shots=None, group_prompts=group_prompts, progress=False, **kwargs
    )
    return model.calls, frames


def test_engine_calls_are_a_fixed_partition_and_a_resumed_run_repeats_them(jobs, tmp_path) -> None:
    """The shards are generated in calls of at most group_prompts prompts (whole shards, in order); a run
    killed after its first call and resumed makes exactly the remaining calls of the uninterrupted run, so
    every prompt's batch — and output — is the same."""
    calls, expected = _batches(jobs, 3)
    # shards per style: kronecker 2, 2, 1 and dna 2, 1 prompts, packed in order into calls of at most 3
    assert [len(call) for call in calls] == [2, 3, 3, 2, 3, 3]
    with pytest.raises(KeyboardInterrupt):
        _batches(jobs, 3, store=_KilledAfter(tmp_path, "k", limit=2))  # killed while saving the second call
    resumed_calls, _ = _batches(jobs, 3, store=ShardDirectory(tmp_path, "k"))
    assert resumed_calls == calls[1:]  # the second call's last shard was not saved: the call is made again
    with pytest.raises(KeyboardInterrupt):
        _batches(jobs, 3, store=_KilledAfter(tmp_path / "b", "k", limit=3))  # the first two calls saved
    resumed_calls, frames = _batches(jobs, 3, store=ShardDirectory(tmp_path / "b", "k"))
    assert resumed_calls == calls[2:]
    for key, frame in expected.items():
        assert frames[key].equals(frame)


def test_only_the_wanted_outputs_are_returned_in_the_calls_of_a_full_run(jobs) -> None:
    calls, _ = _batches(jobs, 3)
    wanted_calls, frames = _batches(jobs, 3, wanted=[("cot", "dna")])
    assert list(frames) == [("cot", "dna")]
    assert wanted_calls == [
        call for call in calls if any("dna" in p.lower() for p in call) and call in calls[4:]
    ]


def test_a_shard_of_error_rows_fails_after_the_other_shards_are_saved(jobs, tmp_path) -> None:
    store = _Counting(tmp_path, "k")
    with pytest.raises(
        GenerationFailed, match=r"model 'm', direct/dna shard 0: 2 of 2 prompts ended as error"
    ):
        _batches(jobs, 3, store=store, failing=("DNA",), max_error_share=0.05)
    assert store.generated == [
        ("direct", "kronecker", 0),
        ("direct", "kronecker", 1),
        ("direct", "kronecker", 2),
    ]


DRAWS = DrawRequest(DrawSettings(3, temperature=1.0, top_p=0.9), seed=11)


def test_draws_are_sharded_and_resumed_to_identical_files(model_dir, spec, jobs, tmp_path) -> None:
    """The draws of one job equal those of the shard jobs, and a job killed after two shards resumes to
    the same tables bit for bit, generating only the rest (docs/generation.md §7)."""
    torch.set_num_threads(1)
    model = load_generator(model_dir, spec, INFERENCE)
    run = dict(model_name="tiny@x", n_shots=None, progress=False, draws=DRAWS)
    expected = generate_model(model, jobs, **run)
    for (style, task), frame in expected.items():
        assert frame.columns[: len(DRAW_META)] == list(DRAW_META)
        shards = [j.rows.height for j in jobs if (j.style, j.task) == (style, task)]
        assert frame.height == 3 * sum(shards) and frame["draw"].to_list()[:3] == [0, 1, 2]
    direct = [j for j in jobs if (j.style, j.task) == ("direct", "dna")]
    parts = [
        generate_shard(
            j.rows,
            INFERENCE,
            model_name="tiny@x",
            model_path=model_dir,
            spec=spec,
            style="direct",
            n_shots=None,
            progress=False,
            draws=DRAWS,
        )
        for j in direct
    ]
    assert merge_shards(parts).equals(expected[("direct", "dna")])
    killed = _KilledAfter(tmp_path, "k", limit=2)
    killed.artifact = "draws"
    with pytest.raises(KeyboardInterrupt):
        generate_model(model, jobs, store=killed, **run)
    rerun = _Counting(tmp_path, "k")
    rerun.artifact = "draws"
    frames = generate_model(model, jobs, store=rerun, **run)
    assert len(rerun.generated) == len(jobs) - 2
    assert all(frames[key].equals(frame) for key, frame in expected.items())
    greedy = generate_model(model, jobs[:1], model_name="tiny@x", n_shots=None, progress=False)
    assert "draw" not in next(iter(greedy.values())).columns
