"""A tiny model family trained from scratch on SALT tasks, so the CPU workflow has partly-right models.

``train(TrainConfig.from_dict(DEFAULT_TRAIN_CONFIG), out_dir, eval_inputs)`` builds a character
tokenizer (with a chat template that keeps only the prompt's test block), generates training pairs
with seeds disjoint from the evaluation seed, trains a small ``LlamaForCausalLM`` for a fixed number
of steps and saves named checkpoints that load with ``AutoModelForCausalLM`` / ``AutoTokenizer``.
``quick_eval`` scores a checkpoint's greedy answers with atom precision.
"""

from saltbench.training.data import (
    EncodedPairs,
    TaskMix,
    assert_disjoint,
    build_training_pairs,
    drop_inputs,
    encode_pairs,
    length_bucketed_batches,
    load_eval_inputs,
    parse_tasks_config,
    task_alphabet_corpus,
)
from saltbench.training.model import ModelSpec, build_model, greedy_generate
from saltbench.training.tokenizer import (
    CHAT_TEMPLATE,
    SPECIAL_TOKENS,
    build_char_tokenizer,
    extract_test_block,
    load_tokenizer,
    render_prompt,
)
from saltbench.training.train import (
    DEFAULT_TRAIN_CONFIG,
    GPU_TRAIN_CONFIG,
    CheckpointInfo,
    OptimSpec,
    QuickEvalResult,
    TrainConfig,
    TrainResult,
    lr_at,
    quick_eval,
    train,
)

__all__ = [
    "CHAT_TEMPLATE",
    "DEFAULT_TRAIN_CONFIG",
    "GPU_TRAIN_CONFIG",
    "SPECIAL_TOKENS",
    "CheckpointInfo",
    "EncodedPairs",
    "ModelSpec",
    "OptimSpec",
    "QuickEvalResult",
    "TaskMix",
    "TrainConfig",
    "TrainResult",
    "assert_disjoint",
    "build_char_tokenizer",
    "build_model",
    "build_training_pairs",
    "drop_inputs",
    "encode_pairs",
    "extract_test_block",
    "greedy_generate",
    "length_bucketed_batches",
    "load_eval_inputs",
    "load_tokenizer",
    "lr_at",
    "parse_tasks_config",
    "quick_eval",
    "render_prompt",
    "task_alphabet_corpus",
    "train",
]
