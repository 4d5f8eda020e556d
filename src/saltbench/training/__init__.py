"""A tiny model family trained from scratch on SALT tasks, so the CPU workflow has partly-right models.

``train(TrainConfig.from_dict(DEFAULT_TRAIN_CONFIG), out_dir, eval_inputs)`` builds a character
tokenizer (with a chat template that keeps only the prompt's test block), generates training pairs
with seeds disjoint from the evaluation seed, trains a small ``LlamaForCausalLM`` for a fixed number
of steps and saves named checkpoints that load with ``AutoModelForCausalLM`` / ``AutoTokenizer``.
``quick_eval`` scores a checkpoint's greedy answers with atom precision.

The recipe (``TrainConfig`` and its parts, ``DEFAULT_TRAIN_CONFIG``, ``GPU_TRAIN_CONFIG``) comes from the
torch-free :mod:`saltbench.training.recipe`, so validating a config does not import torch; the names
whose modules import torch or transformers are loaded on first access.
"""

from typing import TYPE_CHECKING

from saltbench.core.lazy import lazy_getattr
from saltbench.core.vocabulary import DEVICES, PRECISIONS, Device, Precision
from saltbench.training.recipe import (
    DEFAULT_TRAIN_CONFIG,
    GPU_TRAIN_CONFIG,
    ArchitectureSpec,
    OptimSpec,
    TaskMix,
    TrainConfig,
    parse_tasks_config,
)

# Names whose modules import torch or transformers (data and tokenizer import transformers too).
_LAZY = {
    "EncodedPairs": "pairs",
    "assert_disjoint": "pairs",
    "build_training_pairs": "pairs",
    "drop_inputs": "pairs",
    "encode_pairs": "pairs",
    "length_bucketed_batches": "pairs",
    "load_eval_inputs": "pairs",
    "task_alphabet_corpus": "pairs",
    "build_model": "model",
    "greedy_generate": "model",
    "CHAT_TEMPLATE": "tokenizer",
    "SPECIAL_TOKENS": "tokenizer",
    "build_char_tokenizer": "tokenizer",
    "extract_test_block": "tokenizer",
    "load_tokenizer": "tokenizer",
    "render_prompt": "tokenizer",
    "CheckpointInfo": "trainer",
    "QuickEvalResult": "trainer",
    "TrainResult": "trainer",
    "lr_at": "trainer",
    "quick_eval": "trainer",
    "train": "trainer",
}

__getattr__ = lazy_getattr(__name__, _LAZY)


if TYPE_CHECKING:
    from saltbench.training.model import build_model, greedy_generate
    from saltbench.training.pairs import (
        EncodedPairs,
        assert_disjoint,
        build_training_pairs,
        drop_inputs,
        encode_pairs,
        length_bucketed_batches,
        load_eval_inputs,
        task_alphabet_corpus,
    )
    from saltbench.training.tokenizer import (
        CHAT_TEMPLATE,
        SPECIAL_TOKENS,
        build_char_tokenizer,
        extract_test_block,
        load_tokenizer,
        render_prompt,
    )
    from saltbench.training.trainer import (
        CheckpointInfo,
        QuickEvalResult,
        TrainResult,
        lr_at,
        quick_eval,
        train,
    )

__all__ = [
    "CHAT_TEMPLATE",
    "DEFAULT_TRAIN_CONFIG",
    "DEVICES",
    "GPU_TRAIN_CONFIG",
    "PRECISIONS",
    "SPECIAL_TOKENS",
    "CheckpointInfo",
    "Device",
    "EncodedPairs",
    "ArchitectureSpec",
    "OptimSpec",
    "Precision",
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
