"""Train the tiny model family from scratch on SALT tasks, save checkpoints, evaluate them quickly.

Recipe (:class:`~saltbench.training.recipe.TrainConfig`, defined with the recommended configs in the
torch-free :mod:`saltbench.training.recipe` and re-exported here): character tokenizer with the test-block
chat template; a small Llama (:class:`~saltbench.training.recipe.ArchitectureSpec`); AdamW; learning rate

    lr(s) = lr_max * s / warmup                                          for s <= warmup
    lr(s) = lr_max * (r + (1 - r) * (1 + cos(pi * (s - warmup) / (S - warmup))) / 2)   afterwards

(``r = min_lr_ratio``, ``S = steps``; steps counted from 1, so the last step runs at ``r * lr_max``);
length-bucketed right-padded batches of at most ``token_budget`` tokens (padding included); loss on
the answer tokens only; a fixed number of steps with seeded initialisation, data order and
deterministic algorithms, so two CPU runs of the same config with the same thread count, torch
version and instruction set give bit-identical weights (checked; GPU runs are not promised).

Outputs under ``out_dir``: one directory per checkpoint (``save_pretrained`` safetensors + tokenizer
+ generation config), ``train_log.parquet`` / ``train_log.csv`` (per step: loss, lr, tokens,
tokens/s) and ``summary.json`` (config, data counts, loss summary, checkpoint sha256 values).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
import transformers
from transformers import AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerFast

import saltbench
from saltbench.core.contracts import TRAIN_LOG
from saltbench.core.seeds import derive_seed
from saltbench.core.vocabulary import DEVICES, PRECISIONS, Device
from saltbench.io import (
    file_sha256,
    naming_write_errors,
    provenance,
    write_atomic,
    write_manifest,
    write_table,
)
from saltbench.training.model import build_model, count_parameters, greedy_generate
from saltbench.training.pairs import (
    IGNORE_INDEX,
    EncodedPairs,
    assert_disjoint,
    build_training_pairs,
    collate,
    drop_inputs,
    encode_pairs,
    length_bucketed_batches,
    task_alphabet_corpus,
)
from saltbench.training.recipe import DEFAULT_TRAIN_CONFIG, GPU_TRAIN_CONFIG, OptimSpec, TrainConfig
from saltbench.training.second_pass import build_question_pairs
from saltbench.training.tokenizer import build_char_tokenizer, load_tokenizer, render_prompts

logger = logging.getLogger(__name__)


def lr_at(step: int, steps: int, optim: OptimSpec) -> float:
    """Learning rate of optimizer step ``step`` (1-based) of ``steps`` (formula in the module docstring)."""
    if step <= optim.warmup_steps:
        return optim.lr * step / max(optim.warmup_steps, 1)
    span = max(steps - optim.warmup_steps, 1)
    progress = min((step - optim.warmup_steps) / span, 1.0)
    r = optim.min_lr_ratio
    return optim.lr * (r + (1.0 - r) * 0.5 * (1.0 + math.cos(math.pi * progress)))


@dataclass(frozen=True)
class CheckpointInfo:
    """One saved checkpoint: its name, step, directory, weights sha256 and mean loss of the last steps."""

    name: str
    step: int
    path: Path
    sha256: str
    recent_loss: float


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` produced."""

    out_dir: Path
    checkpoints: tuple[CheckpointInfo, ...]
    steps: int
    wall_s: float
    final_loss: float
    n_train_examples: int
    n_dropped_eval_overlap: int
    n_parameters: int
    log_path: Path
    summary_path: Path

    def checkpoint(self, name: str) -> CheckpointInfo:
        """The checkpoint called ``name`` (``KeyError`` listing the names otherwise)."""
        for info in self.checkpoints:
            if info.name == name:
                return info
        raise KeyError(f"no checkpoint {name!r}; have {[c.name for c in self.checkpoints]}")


def _resolve_device(name: Device) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' requested but CUDA is not available")
    return torch.device(name)


@contextlib.contextmanager
def _deterministic(num_threads: int | None, device: torch.device) -> Iterator[None]:
    """Deterministic algorithms (and thread count) for the duration of a run, restored afterwards.

    On CPU every op used here has a deterministic kernel (checked: identical runs give identical
    weights). On CUDA some attention backward kernels have none, so there the flag only warns
    (``warn_only=True``) and bit-identical GPU runs are not promised.
    """
    previous_det = torch.are_deterministic_algorithms_enabled()
    previous_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    previous_threads = torch.get_num_threads()
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=device.type == "cuda")
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous_det, warn_only=previous_warn)
        torch.set_num_threads(previous_threads)


def _epochs(encoded: EncodedPairs, token_budget: int, seed: int, keep: np.ndarray) -> Iterator[np.ndarray]:
    """Endless stream of batches (index arrays): one shuffled, length-bucketed epoch after another.

    Batches are laid out over all generated rows; rows with ``keep == False`` are then removed
    from their batch (a batch left empty is skipped).
    """
    rng = np.random.default_rng(derive_seed("batches", seed))
    lengths = encoded.lengths
    while True:
        for batch in length_bucketed_batches(lengths, token_budget, rng):
            kept = batch[keep[batch]]
            if kept.size:
                yield kept


def _optimizer(model: torch.nn.Module, optim: OptimSpec) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (not on norms)."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": optim.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=optim.lr,
        betas=optim.betas,
        eps=optim.eps,
        foreach=False,
    )


def _save_checkpoint(model: PreTrainedModel, tokenizer: Any, path: Path) -> str:
    """Save a checkpoint directory with its digest manifest (verified before every load,
    docs/reliability.md §2.1); the SHA-256 of its weights."""
    with naming_write_errors(path):
        path.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(path, safe_serialization=True)
        tokenizer.save_pretrained(path)
        write_manifest(path, rule="train_tiny_models")
    return file_sha256(path / "model.safetensors")


@dataclass(frozen=True)
class TrainingData:
    """The encoded training set of a run and the tokenizer built for it.

    ``encoded`` holds every generated row (the batch layout depends on the generated set only);
    ``keep`` marks the rows that are trained on (``False``: the input is an evaluation input), and
    ``pairs`` holds just those rows.
    """

    pairs: pl.DataFrame
    tokenizer: PreTrainedTokenizerFast
    encoded: EncodedPairs
    keep: np.ndarray
    n_eval_inputs: int

    @property
    def n_generated(self) -> int:
        return len(self.encoded)

    @property
    def n_dropped(self) -> int:
        return self.n_generated - self.pairs.height

    @property
    def questions(self) -> dict[str, int]:
        """``{"{kind}/{granularity}": rows}`` of the second pass's question rows trained on."""
        counts = self.pairs.drop_nulls("question").group_by("question").len().sort("question")
        return dict(zip(counts["question"].to_list(), counts["len"].to_list()))

    @property
    def train_tokens(self) -> int:
        return int(self.encoded.lengths[self.keep].sum())

    @property
    def per_task(self) -> dict[str, int]:
        counts = self.pairs.group_by("task", maintain_order=True).len()
        return dict(zip(counts["task"].to_list(), counts["len"].to_list()))


def prepare_training_data(config: TrainConfig, eval_inputs: Iterable[str] = ()) -> TrainingData:
    """Generate the pairs (and the second pass's question rows, :mod:`saltbench.training.second_pass`), mark
    evaluation inputs as dropped, check disjointness, build tokenizer, encode.

    Dropped rows stay in the encoded set and are removed from their batch at training time, so
    the other batches are the same whatever evaluation set is given (only the batches that held
    a dropped row shrink). A question row longer than ``model.max_positions`` is left out (logged); a
    task row that long is an error.
    """
    eval_set = frozenset(eval_inputs)
    generated = build_training_pairs(
        config.tasks, config.n_per_task, config.seed, styles=config.styles, scratchpad=config.scratchpad
    )
    questions = build_question_pairs(generated, config.second_pass, config.seed)
    corpus = [*task_alphabet_corpus(), *generated["prompt"].to_list(), *generated["answer"].to_list()]
    tokenizer = build_char_tokenizer([*corpus, *questions["prompt"].to_list()])
    generated = pl.concat(
        [generated.with_columns(question=pl.lit(None, pl.String)), _fitting(questions, tokenizer, config)]
    )
    keep = ~generated["input"].is_in(pl.Series(list(eval_set), dtype=pl.String).implode()).to_numpy()
    pairs = drop_inputs(generated, eval_set)
    assert_disjoint(pairs["input"].to_list(), eval_set)
    encoded = encode_pairs(generated, tokenizer)
    longest = int(encoded.lengths.max())
    if longest > config.model.max_positions:
        raise ValueError(
            f"longest training example has {longest} tokens, more than "
            f"model.max_positions={config.model.max_positions}"
        )
    data = TrainingData(pairs, tokenizer, encoded, keep, len(eval_set))
    logger.info(
        "training data: %d examples %s (second-pass questions %s), %d dropped as evaluation inputs, "
        "%d tokens, longest %d",
        pairs.height,
        data.per_task,
        data.questions,
        data.n_dropped,
        data.train_tokens,
        longest,
    )
    return data


def _fitting(
    questions: pl.DataFrame, tokenizer: PreTrainedTokenizerFast, config: TrainConfig
) -> pl.DataFrame:
    """The question rows whose example (rendered prompt, reply and end token) fits ``model.max_positions``."""
    if questions.is_empty():
        return questions
    fits = encode_pairs(questions, tokenizer).lengths <= config.model.max_positions
    if not fits.all():
        logger.info(
            "left out %d of %d second-pass question rows longer than model.max_positions=%d",
            int((~fits).sum()),
            questions.height,
            config.model.max_positions,
        )
    return questions.filter(pl.Series(fits))


LOG_SCHEMA = TRAIN_LOG.columns
"""Columns of ``train_log`` (one row per optimizer step; ``tokens`` excludes padding;
:data:`saltbench.core.contracts.TRAIN_LOG`)."""


class _StepLog:
    """Accumulates one row per step and logs a progress line every ``every`` steps."""

    def __init__(self, steps: int, every: int) -> None:
        self.rows: dict[str, list[float]] = {k: [] for k in LOG_SCHEMA}
        self.steps, self.every, self.window_start = steps, every, 0

    def add(
        self,
        step: int,
        loss: float,
        lr: float,
        tokens: int,
        answer_tokens: int,
        step_s: float,
        elapsed_s: float,
    ) -> None:
        values = (step, loss, lr, tokens, answer_tokens, tokens / max(step_s, 1e-9), elapsed_s)
        for key, value in zip(LOG_SCHEMA, values):
            self.rows[key].append(value)
        if step % self.every == 0 or step == self.steps:
            recent = slice(self.window_start, step)
            before = self.rows["elapsed_s"][self.window_start - 1] if self.window_start else 0.0
            window_loss = float(np.mean(self.rows["loss"][recent]))
            window_rate = sum(self.rows["tokens"][recent]) / max(elapsed_s - before, 1e-9)
            logger.info(
                "step %d/%d loss %.4f (mean of last %d: %.4f) lr %.2e %.0f tokens/s",
                step,
                self.steps,
                loss,
                step - self.window_start,
                window_loss,
                lr,
                window_rate,
            )
            self.window_start = step

    def recent_loss(self, n: int = 100) -> float:
        return float(np.mean(self.rows["loss"][-n:]))

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=LOG_SCHEMA)


def _run_steps(
    config: TrainConfig, data: TrainingData, device: torch.device, out: Path, log: _StepLog
) -> tuple[int, list[CheckpointInfo], float]:
    """The optimisation loop; returns (parameter count, saved checkpoints, wall seconds)."""
    checkpoint_at: dict[int, list[str]] = {}
    for name, step in config.checkpoints.items():
        checkpoint_at.setdefault(step, []).append(name)
    tokenizer, encoded = data.tokenizer, data.encoded
    saved: list[CheckpointInfo] = []
    with _deterministic(config.num_threads, device):
        # transformers wraps PreTrainedModel.to in functools.wraps; typeshed's _Wrapped binds no `self`
        model = build_model(config.model, tokenizer, config.seed).to(device)  # type: ignore[arg-type]
        n_params = count_parameters(model)
        logger.info("model: %d parameters, device %s, precision %s", n_params, device, config.precision)
        optimizer = _optimizer(model, config.optim)
        batches = _epochs(encoded, config.token_budget, config.seed, data.keep)
        model.train()
        start = time.perf_counter()
        for step in range(1, config.steps + 1):
            t0 = time.perf_counter()
            lr = lr_at(step, config.steps, config.optim)
            for group in optimizer.param_groups:
                group["lr"] = lr
            arrays = collate(encoded, next(batches), tokenizer.pad_token_id)
            ids, mask, labels = (torch.from_numpy(a).to(device) for a in arrays)
            bf16 = config.precision == "bf16"
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.optim.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.optim.grad_clip)
            optimizer.step()
            loss_value = float(loss.detach())
            if not math.isfinite(loss_value):
                raise FloatingPointError(f"loss became {loss_value} at step {step}")
            now = time.perf_counter()
            n_tokens, n_answer = int(arrays[1].sum()), int((arrays[2] != IGNORE_INDEX).sum())
            log.add(step, loss_value, lr, n_tokens, n_answer, now - t0, now - start)
            for name in checkpoint_at.get(step, []):
                path = out / name
                sha = _save_checkpoint(model, tokenizer, path)
                saved.append(CheckpointInfo(name, step, path, sha, log.recent_loss()))
                logger.info("saved checkpoint %s (step %d, sha256 %s...) to %s", name, step, sha[:12], path)
        wall = time.perf_counter() - start
    return n_params, saved, wall


def train(config: TrainConfig, out_dir: str | Path, eval_inputs: Iterable[str] = ()) -> TrainResult:
    """Train one model per ``config``; write checkpoints, the training log and the summary to ``out_dir``.

    Args:
        config: the run's settings.
        out_dir: output directory (created; existing checkpoint directories are overwritten).
        eval_inputs: inputs of the evaluation datasets (see ``data.load_eval_inputs``): training
            rows with these inputs are dropped, then :func:`~saltbench.training.pairs.assert_disjoint`
            checks that none is left.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    device = _resolve_device(config.device)
    data = prepare_training_data(config, eval_inputs)
    log = _StepLog(config.steps, config.log_every)
    n_params, saved, wall = _run_steps(config, data, device, out, log)

    frame = log.frame()
    log_path = out / "train_log.parquet"
    write_table(frame, log_path, provenance(stage="training", seed=config.seed), "train_log")
    write_atomic(out / "train_log.csv", frame.write_csv())
    losses = frame["loss"].to_numpy()
    window = min(100, len(losses))
    final_loss = float(losses[-window:].mean())
    n_dropped = data.n_dropped
    summary = {
        "config": config.to_dict(),
        "saltbench_version": saltbench.__version__,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "device": str(device),
        "n_parameters": n_params,
        "vocab_size": len(data.tokenizer),
        "n_train_examples": data.pairs.height,
        "n_train_examples_per_task": data.per_task,
        "n_second_pass_examples": data.questions,
        "n_dropped_eval_overlap": n_dropped,
        "n_eval_inputs_checked": data.n_eval_inputs,
        "train_tokens": data.train_tokens,
        "steps": config.steps,
        "wall_s": wall,
        "tokens_per_s": float(frame["tokens"].sum()) / max(wall, 1e-9),
        "loss_first_100": float(losses[:window].mean()),
        "loss_last_100": final_loss,
        "checkpoints": {
            c.name: {"step": c.step, "path": c.name, "sha256": c.sha256, "recent_loss": c.recent_loss}
            for c in saved
        },
    }
    summary_path = out / "summary.json"
    write_atomic(summary_path, json.dumps(summary, indent=2, sort_keys=True) + "\n")
    logger.info("trained %d steps in %.1f s; final loss %.4f", config.steps, wall, final_loss)
    return TrainResult(
        out_dir=out,
        checkpoints=tuple(saved),
        steps=config.steps,
        wall_s=wall,
        final_loss=final_loss,
        n_train_examples=data.pairs.height,
        n_dropped_eval_overlap=n_dropped,
        n_parameters=n_params,
        log_path=log_path,
        summary_path=summary_path,
    )


@dataclass(frozen=True)
class QuickEvalResult:
    """Atom precision of greedy answers on freshly generated samples of one task.

    ``precision`` is the mean over samples of ``evaluate(...).metrics["precision"]`` (a sample whose
    precision is undefined, e.g. no fenced answer, counts as 0); ``fenced`` is the share of
    responses with a fenced answer.
    """

    task: str
    variant: str | None
    n: int
    precision: float
    fenced: float
    precisions: tuple[float, ...]
    responses: tuple[str, ...]


def quick_eval(
    model_dir: str | Path,
    task: str,
    n: int = 30,
    seed: int = 42,
    *,
    params: Mapping[str, Any] | None = None,
    variant: str | None = None,
    batch_size: int = 16,
    max_new_tokens: int | None = None,
    device: Device = "cpu",
    style: str = "direct",
) -> QuickEvalResult:
    """Greedy-decode ``n`` samples of ``task`` (``generate(n, seed, **params)``) and score atom precision.

    The prompts (in prompt ``style``) go through the saved tokenizer's chat template, like any inference
    run would. ``max_new_tokens`` defaults to the longest reasoned reference answer (worked solution and
    fenced answer, ``Task.render_reasoned_answer``) in tokens, plus 16.
    """
    from saltbench.evaluation import evaluate, extract_answer
    from saltbench.tasks import get_task

    tokenizer = load_tokenizer(model_dir)
    # transformers wraps PreTrainedModel.to in functools.wraps; typeshed's _Wrapped binds no `self`
    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).to(_resolve_device(device))  # type: ignore[arg-type]
    rows = get_task(task, variant).generate(n, seed, **dict(params or {}))
    tasks = {v: get_task(task, v) for v in set(rows["variant"].to_list())}
    prompts = [tasks[v].prompt(x, style=style) for x, v in zip(rows["input"], rows["variant"])]  # type: ignore[arg-type]
    answers = [
        tasks[v].render_reasoned_answer(x, r)
        for x, r, v in zip(rows["input"], rows["reference"], rows["variant"])
    ]
    if max_new_tokens is None:
        answer_ids = tokenizer(answers, add_special_tokens=False)["input_ids"]
        max_new_tokens = max(len(ids) for ids in answer_ids) + 16
    rendered = render_prompts(tokenizer, prompts)
    responses = greedy_generate(model, tokenizer, rendered, max_new_tokens, batch_size)
    precisions: list[float] = []
    fenced = 0
    for response, reference, v in zip(responses, rows["reference"], rows["variant"]):
        fenced += extract_answer(response)[1] >= 0
        value = float(evaluate(response, reference, task, variant=v, granularity="atom").metrics["precision"])
        precisions.append(value if math.isfinite(value) else 0.0)
    return QuickEvalResult(
        task=task,
        variant=variant,
        n=n,
        precision=float(np.mean(precisions)) if precisions else float("nan"),
        fenced=fenced / max(n, 1),
        precisions=tuple(precisions),
        responses=tuple(responses),
    )


__all__ = [
    "DEFAULT_TRAIN_CONFIG",
    "DEVICES",
    "GPU_TRAIN_CONFIG",
    "PRECISIONS",
    "CheckpointInfo",
    "OptimSpec",
    "QuickEvalResult",
    "TrainConfig",
    "TrainResult",
    "TrainingData",
    "file_sha256",
    "lr_at",
    "prepare_training_data",
    "quick_eval",
    "train",
]
