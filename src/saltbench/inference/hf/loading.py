"""Loading a causal language model and its tokenizer for inference with transformers (the ``hf`` backend)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from saltbench.core.vocabulary import Dtype
from saltbench.inference.chat import load_tokenizer
from saltbench.inference.sources import prepare_model

if TYPE_CHECKING:
    from saltbench.inference.registry import ModelSpec

logger = logging.getLogger(__name__)


def load_model(
    path: str | Path,
    dtype: Dtype = "float32",
    device: str | None = None,
    *,
    revision: str | None = None,
    num_gpus: int = 0,
    attn_implementation: str | None = None,
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a ``save_pretrained`` directory or a hub id, ready for inference.

    * ``dtype``: ``float32`` | ``bfloat16`` | ``float16`` (weights and computation);
    * ``device``: ``None`` → ``"cuda"`` when available, else ``"cpu"``; with ``num_gpus > 1`` and
      several visible GPUs the model is sharded with ``device_map="auto"`` instead;
    * the model is in eval mode; the tokenizer pads on the left and falls back to EOS as pad token.
    """
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
    if isinstance(path, Path) or not _looks_like_hub_id(str(path)):
        local = Path(path)
        if not (local / "config.json").is_file():
            raise FileNotFoundError(
                f"model path {str(local)!r} is not a saved model directory (no config.json"
                f"{'' if local.exists() else '; the path does not exist'})"
            )
    import torch
    from transformers import AutoModelForCausalLM

    started = time.perf_counter()
    tokenizer = load_tokenizer(path, revision=revision)
    kwargs: dict[str, Any] = {"dtype": getattr(torch, dtype), "revision": revision}
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    cuda = torch.cuda.is_available()
    if device is None:
        device = "cuda" if cuda else "cpu"
    sharded = cuda and num_gpus > 1 and torch.cuda.device_count() > 1 and device.startswith("cuda")
    if sharded:
        kwargs["device_map"] = "auto"
    model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    if not sharded:
        # transformers wraps PreTrainedModel.to in functools.wraps; typeshed's _Wrapped binds no `self`
        model = model.to(device)  # type: ignore[arg-type]
    model.eval()
    logger.info(
        "loaded %s (%s, %s) in %.2f s",
        path,
        dtype,
        "sharded" if sharded else device,
        time.perf_counter() - started,
    )
    return model, tokenizer


def load_model_from_spec(
    spec: ModelSpec, cache_dir: str | Path, device: str | None = None
) -> tuple[Any, Any]:
    """Prepare (e.g. convert a GGUF once) and load the model a registry entry describes."""
    target = prepare_model(spec, cache_dir)
    return load_model(target, spec.dtype, device, revision=spec.revision, num_gpus=spec.resources.gpus)


def _looks_like_hub_id(text: str) -> bool:
    """``owner/name`` with no local directory of that name."""
    parts = text.split("/")
    return len(parts) == 2 and all(parts) and not Path(text).exists() and not text.startswith((".", "~"))
