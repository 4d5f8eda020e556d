"""Training loop: loss goes down, runs are deterministic, outputs load through the generic HF path."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
import torch
import yaml
from transformers import AutoModelForCausalLM, AutoTokenizer

from saltbench.tasks import get_task
from saltbench.training.recipe import DEFAULT_TRAIN_VARIANTS
from saltbench.training.trainer import (
    DEFAULT_TRAIN_CONFIG,
    GPU_TRAIN_CONFIG,
    OptimSpec,
    TrainConfig,
    file_sha256,
    lr_at,
    quick_eval,
    train,
)

KRON = {"output_lengths": [16], "prefer_2d_probability": 1.0, "value_min": -5, "value_max": 5}
TINY = {
    "tasks": {"kronecker": {"weight": 1.0, "params": KRON}},
    "steps": 40,
    "n_per_task": 150,
    "token_budget": 1024,
    "checkpoints": {"early": 10, "final": 40},
    "model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 64, "max_positions": 256},
    "optim": {"lr": 5e-3, "warmup_steps": 5},
    "log_every": 20,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    return train(TrainConfig.from_dict(TINY), out), out


def test_loss_goes_down(run) -> None:
    result, out = run
    log = pl.read_parquet(result.log_path)
    assert log["step"].to_list() == list(range(1, 41))
    first, last = log["loss"].head(5).mean(), log["loss"].tail(5).mean()
    assert last < 0.6 * first, (first, last)
    assert (log["tokens"] <= 1024).all() and (log["answer_tokens"] < log["tokens"]).all()
    assert log["lr"][0] == pytest.approx(1e-3) and log["lr"][39] == pytest.approx(5e-4)
    assert (out / "train_log.csv").exists()


def test_summary_and_checkpoints(run) -> None:
    result, out = run
    summary = json.loads(result.summary_path.read_text())
    assert set(summary["checkpoints"]) == {"early", "final"}
    for info in result.checkpoints:
        assert (
            summary["checkpoints"][info.name]["sha256"]
            == info.sha256
            == file_sha256(info.path / "model.safetensors")
        )
        assert summary["checkpoints"][info.name]["step"] == info.step
    assert result.checkpoint("early").sha256 != result.checkpoint("final").sha256
    assert summary["n_train_examples"] == 150 and summary["config"]["steps"] == 40
    assert TrainConfig.from_dict(summary["config"]) == TrainConfig.from_dict(TINY)


def test_determinism(tmp_path) -> None:
    cfg = {**TINY, "steps": 12, "checkpoints": {"last": 12}}
    first = train(TrainConfig.from_dict(cfg), tmp_path / "a")
    second = train(TrainConfig.from_dict(cfg), tmp_path / "b")
    assert first.checkpoint("last").sha256 == second.checkpoint("last").sha256
    log_a, log_b = pl.read_parquet(first.log_path), pl.read_parquet(second.log_path)
    assert log_a["loss"].to_list() == log_b["loss"].to_list()
    other_seed = train(TrainConfig.from_dict({**cfg, "seed": 1}), tmp_path / "c")
    assert other_seed.checkpoint("last").sha256 != first.checkpoint("last").sha256


def test_checkpoint_loads_through_auto_classes(run) -> None:
    result, _ = run
    path = result.checkpoint("final").path
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    assert model.config.eos_token_id == tokenizer.eos_token_id == 2
    assert model.generation_config.eos_token_id == 2 and model.generation_config.pad_token_id == 0
    assert model.config.tie_word_embeddings and model.config.num_hidden_layers == 1
    task = get_task("kronecker")
    prompt = task.prompt("A=\n1 2\n3 4\nB=\n5 6\n7 8")
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
    )
    assert text == "<s>A=\n1 2\n3 4\nB=\n5 6\n7 8\nSolution:\n<sep>"
    enc = tokenizer(text, return_tensors="pt")
    out = model.generate(**enc, max_new_tokens=8, do_sample=False)
    assert out.shape[0] == 1 and out.shape[1] <= enc["input_ids"].shape[1] + 8
    assert torch.equal(out[0, : enc["input_ids"].shape[1]], enc["input_ids"][0])


def test_train_drops_evaluation_inputs(run, tmp_path) -> None:
    result, _ = run
    cfg = TrainConfig.from_dict(TINY)
    from saltbench.training.pairs import build_training_pairs

    train_inputs = build_training_pairs(cfg.tasks, cfg.n_per_task, cfg.seed)["input"].to_list()
    dropped = train(cfg, tmp_path, eval_inputs=train_inputs[:4] + ["not a training input"])
    assert dropped.n_dropped_eval_overlap == 4 and dropped.n_train_examples == 146
    summary = json.loads(dropped.summary_path.read_text())
    assert summary["n_eval_inputs_checked"] == 5
    # the batch layout does not depend on the evaluation set: only batches that held a dropped row shrink
    full = pl.read_parquet(result.log_path)["tokens"]
    less = pl.read_parquet(dropped.log_path)["tokens"]
    changed = (full != less).sum()
    assert 0 < changed <= 4 * 3 and (less <= full).all()


@pytest.mark.slow
def test_quick_eval_scores_atoms(run) -> None:
    result, _ = run
    res = quick_eval(result.checkpoint("final").path, "kronecker", n=4, seed=42, params=KRON)
    assert res.n == 4 and len(res.responses) == 4 and len(res.precisions) == 4
    assert 0.0 <= res.precision <= 1.0 and 0.0 <= res.fenced <= 1.0


def test_lr_schedule() -> None:
    optim = OptimSpec(lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_at(5, 110, optim) == pytest.approx(0.5)
    assert lr_at(10, 110, optim) == pytest.approx(1.0)
    assert lr_at(60, 110, optim) == pytest.approx(0.55)
    assert lr_at(110, 110, optim) == pytest.approx(0.1)
    assert all(lr_at(s, 110, optim) >= lr_at(s + 1, 110, optim) for s in range(10, 110))
    assert math.isclose(lr_at(1, 1, OptimSpec(lr=2.0, warmup_steps=0)), 0.2)


def test_config_validation() -> None:
    TrainConfig.from_dict(DEFAULT_TRAIN_CONFIG)
    TrainConfig.from_dict(GPU_TRAIN_CONFIG)
    with pytest.raises(ValueError, match="checkpoints.final"):
        TrainConfig.from_dict({**TINY, "checkpoints": {"final": 41}})
    with pytest.raises(ValueError, match="unknown training config key"):
        TrainConfig.from_dict({**TINY, "stpes": 3})
    with pytest.raises(ValueError, match="divisible"):
        TrainConfig.from_dict({**TINY, "model": {"d_model": 30, "n_heads": 4}})
    with pytest.raises(ValueError, match="precision"):
        TrainConfig.from_dict({**TINY, "precision": "fp8"})


def test_default_config_trains_the_documented_recipe(repo_root):
    """config/config.yaml's training block is DEFAULT_TRAIN_CONFIG (its docstring holds the measurements)."""
    block = yaml.safe_load((repo_root / "config" / "config.yaml").read_text())["training"]
    assert block.pop("variants") == DEFAULT_TRAIN_VARIANTS
    block = {k: v for k, v in block.items() if k not in ("enabled", "name")}
    assert TrainConfig.from_dict(block) == TrainConfig.from_dict(DEFAULT_TRAIN_CONFIG)


def test_question_rows_join_the_data_and_drop_with_their_inputs() -> None:
    """training.second_pass: question rows are trained on beside the task rows, are dropped with their input
    when it is an evaluation input, and are left out when longer than model.max_positions."""
    from saltbench.training.trainer import prepare_training_data

    cfg = TrainConfig.from_dict({**TINY, "second_pass": {"share": 0.2}})
    data = prepare_training_data(cfg)
    questions = data.pairs.filter(pl.col("question").is_not_null())
    assert 0 < questions.height <= 30 and sum(data.questions.values()) == questions.height
    assert set(questions["answer"]) <= {"True", "False", "100", "0"}
    assert int(data.encoded.lengths.max()) <= cfg.model.max_positions
    asked = questions["input"][0]
    fewer = prepare_training_data(cfg, eval_inputs=[asked])
    assert (
        asked not in fewer.pairs["input"].to_list()
        and fewer.n_dropped == data.pairs.filter(pl.col("input") == asked).height
    )
    short = TrainConfig.from_dict(
        {**TINY, "second_pass": {"share": 0.2}, "model": {**TINY["model"], "max_positions": 200}}
    )
    kept = prepare_training_data(short)
    assert sum(kept.questions.values()) < questions.height  # the longer questions are left out
    assert int(kept.encoded.lengths.max()) <= 200
    assert prepare_training_data(TrainConfig.from_dict(TINY)).questions == {}
