"""Fixtures for the intervention tests: the SmolLM2 tokenizer (cheap) and model (``@pytest.mark.model``).

The tokenizer fixtures serve the Rust ``tokenizers`` objects through :class:`RustTokenizer`, which
answers the two calls the intervention code makes (``tokenizer(text, add_special_tokens=False)`` and
decoding through ``backend_tokenizer``) without importing transformers (~20 s on the shared machine).

The converted SmolLM2-135M-Instruct directory is looked up in ``$SALTBENCH_SMOLLM2_DIR``, then where
the workflow writes it (``data/models/converted/smollm2-135m``), then in the pytest cache shared with
the inference tests (converted there from the GGUF package when missing).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smollm2_path(smollm2_dir: Path) -> Path:
    """The shared SmolLM2 directory (tests/conftest.py::smollm2_dir)."""
    return smollm2_dir


class RustTokenizer:
    """A ``tokenizers.Tokenizer`` with the calling convention of a transformers fast tokenizer."""

    def __init__(self, backend) -> None:  # noqa: ANN001 - a tokenizers.Tokenizer
        self.backend_tokenizer = backend

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens).ids}

    def decode(self, ids, skip_special_tokens: bool = True, **_: object) -> str:  # noqa: ANN001
        return self.backend_tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_path: Path) -> RustTokenizer:
    from tokenizers import Tokenizer

    return RustTokenizer(Tokenizer.from_file(str(smollm2_path / "tokenizer.json")))


@pytest.fixture(scope="session")
def smollm2_model(smollm2_path: Path):
    """``(model, tokenizer)``: float32 on CPU, one intra-op thread (the test machine is shared)."""
    import torch

    from saltbench.inference import load_model

    torch.set_num_threads(int(os.environ.get("SALTBENCH_TEST_THREADS", "1")))
    return load_model(smollm2_path, "float32", "cpu")


def smollm2_spec(repo_root: Path):
    """The registry entry of SmolLM2 (config/models.yaml): system prompt, chat template, context."""
    from saltbench.inference import get_model_spec, load_model_registry

    return get_model_spec(load_model_registry(repo_root / "config" / "models.yaml"), "smollm2-135m")


@pytest.fixture(scope="session")
def smollm2_loaded(smollm2_model, repo_root: Path):
    """:data:`smollm2_model` behind the transformers backend (what the intervention stage runs on)."""
    from saltbench.inference.hf import HfModel

    model, tokenizer = smollm2_model
    return HfModel(smollm2_spec(repo_root), tokenizer, model, batch_size=16, top_k=20)


@pytest.fixture(scope="session")
def char_tokenizer() -> RustTokenizer:
    """A character-level tokenizer (the salt-tiny kind): every printable character is one token."""
    import string

    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(["<unk>", *sorted(set(string.printable))])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    return RustTokenizer(backend)
