"""The model: a small decoder-only Llama built from scratch, and greedy batched generation.

The architecture is ``transformers``' ``LlamaForCausalLM`` (RMSNorm, rotary positions, SwiGLU MLP),
so a trained directory loads with ``AutoModelForCausalLM.from_pretrained`` and runs through any
generic inference code. Parameter count for vocabulary ``V``, width ``d``, ``L`` layers, MLP ``f``
(tied embeddings, full multi-head attention): ``V*d + L*(4*d*d + 3*d*f + 2*d) + d``. The architecture's
settings, :class:`~saltbench.training.recipe.ArchitectureSpec`, are part of the torch-free recipe module.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from saltbench.training.recipe import ArchitectureSpec


def llama_config(spec: ArchitectureSpec, tokenizer: PreTrainedTokenizerFast) -> LlamaConfig:
    """The ``LlamaConfig`` for ``spec`` with the tokenizer's vocabulary and special-token ids."""
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.d_model,
        intermediate_size=spec.d_ff,
        num_hidden_layers=spec.n_layers,
        num_attention_heads=spec.n_heads,
        num_key_value_heads=spec.n_kv_heads or spec.n_heads,
        max_position_embeddings=spec.max_positions,
        rope_parameters={"rope_theta": spec.rope_theta, "rope_type": "default"},
        tie_word_embeddings=spec.tie_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        initializer_range=0.02,
        attention_bias=False,
        mlp_bias=False,
    )


def generation_config(tokenizer: PreTrainedTokenizerFast, max_positions: int) -> GenerationConfig:
    """Greedy decoding that stops at ``</s>`` and pads with ``<pad>`` (saved next to the weights)."""
    return GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
        max_length=max_positions,
    )


def build_model(spec: ArchitectureSpec, tokenizer: PreTrainedTokenizerFast, seed: int) -> LlamaForCausalLM:
    """A freshly initialised model (``torch.manual_seed(seed)`` before the weights are drawn), float32."""
    torch.manual_seed(seed)
    model = LlamaForCausalLM(llama_config(spec, tokenizer))
    model.generation_config = generation_config(tokenizer, spec.max_positions)
    return model


def count_parameters(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied tensors counted once)."""
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def greedy_generate(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerFast,
    texts: Sequence[str],
    max_new_tokens: int,
    batch_size: int = 16,
) -> list[str]:
    """Greedy continuations of already-rendered prompts, decoded without special tokens.

    Prompts are left-padded in batches of ``batch_size`` (sorted by length to limit padding) and fed
    to ``model.generate``; results come back in the input order.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    model.eval()
    device = next(model.parameters()).device
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: list[str] = [""] * len(texts)
    previous_side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            enc = tokenizer(
                [texts[i] for i in chunk],
                add_special_tokens=False,
                padding=True,
                return_tensors="pt",
                return_token_type_ids=False,
            )
            enc = {k: v.to(device) for k, v in enc.items()}
            # a causal LM; torch types an nn.Module attribute as `Tensor | Module` (not callable)
            generated = model.generate(  # type: ignore[operator]
                **enc,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id,
            )
            new = generated[:, enc["input_ids"].shape[1] :]
            for i, text in zip(chunk, tokenizer.batch_decode(new, skip_special_tokens=True)):
                out[i] = text
    finally:
        tokenizer.padding_side = previous_side
    return out


__all__ = [
    "ArchitectureSpec",
    "build_model",
    "count_parameters",
    "generation_config",
    "greedy_generate",
    "llama_config",
]
