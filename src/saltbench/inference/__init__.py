"""Inference with real models, recording per-token log-probabilities (docs/generation.md).

Two backends write the same records: transformers forward passes (:func:`generate`) and the vLLM
engine (:func:`load_vllm`, :func:`generate_vllm`; full-vocabulary entropy stored as NaN there). The
model registry's ``backend`` key chooses per model (:mod:`saltbench.inference.registry`).

Typical use::

    from saltbench.inference import (
        load_model_registry, get_model_spec, load_model_from_spec, render_prompts, generate, records_to_frame,
    )

    spec = get_model_spec(load_model_registry("config/models.yaml"), "smollm2-135m")
    model, tokenizer = load_model_from_spec(spec, cache_dir="data/models")
    prompts = render_prompts(tokenizer, instructions, system_prompt=spec.system_prompt,
                             chat_template=spec.chat_template, template_kwargs=spec.template_kwargs)
    records = generate(model, tokenizer, prompts, max_new_tokens=spec.generation_budget(512),
                       max_context=spec.max_context)
    frame = records_to_frame(records, {"sample_id": sample_ids})
"""

from typing import TYPE_CHECKING

from saltbench.core.lazy import lazy_getattr
from saltbench.core.vocabulary import BACKENDS, DTYPES, FINISH_REASONS, Backend, Dtype, FinishReason
from saltbench.inference.chat import (
    MissingChatTemplateError,
    encode_prompt,
    render_prompts,
    resolve_chat_template,
)
from saltbench.inference.detokenize import token_texts
from saltbench.inference.records import (
    GENERATION_COLUMNS,
    TOP_K,
    GenerationRecord,
    TokenScores,
    frame_to_records,
    records_to_frame,
)
from saltbench.inference.registry import (
    DEFAULT_SYSTEM_PROMPT,
    GenerationsSource,
    GgufPackageSource,
    HubSource,
    LocalSource,
    ModelSource,
    ModelSpec,
    RegistryError,
    Resources,
    get_model_spec,
    load_model_registry,
    parse_model_registry,
    prepare_model,
)
from saltbench.inference.sources import SOURCE_RECORD, convert_gguf_to_safetensors, file_sha256, resolve_gguf

# Names whose modules import torch are loaded on first access, so that reading the registry
# (e.g. from the Snakefile) stays fast.
_LAZY = {
    "eos_token_ids": "generation",
    "generate": "generation",
    "greedy_decode": "_decoding",
    "load_model": "loading",
    "load_tokenizer": "loading",
    "generate_vllm": "vllm_engine",
    "load_vllm": "vllm_engine",
    "VllmEngine": "vllm_engine",
    "load_model_from_spec": "loading",
    "Continuation": "teacher",
    "PromptCache": "_decoding",
    "continue_from_cache": "teacher",
    "encode_prompt_cache": "_decoding",
    "greedy_continue_many": "teacher",
    "teacher_force": "teacher",
}

__getattr__ = lazy_getattr(__name__, _LAZY)


if TYPE_CHECKING:
    from saltbench.inference._decoding import PromptCache, encode_prompt_cache, greedy_decode
    from saltbench.inference.generation import eos_token_ids, generate
    from saltbench.inference.loading import load_model, load_model_from_spec, load_tokenizer
    from saltbench.inference.teacher import (
        Continuation,
        continue_from_cache,
        greedy_continue_many,
        teacher_force,
    )
    from saltbench.inference.vllm_engine import VllmEngine, generate_vllm, load_vllm

__all__ = [
    "BACKENDS",
    "DEFAULT_SYSTEM_PROMPT",
    "DTYPES",
    "FINISH_REASONS",
    "GENERATION_COLUMNS",
    "SOURCE_RECORD",
    "TOP_K",
    "Backend",
    "Continuation",
    "Dtype",
    "FinishReason",
    "GenerationRecord",
    "GenerationsSource",
    "GgufPackageSource",
    "HubSource",
    "LocalSource",
    "MissingChatTemplateError",
    "ModelSource",
    "ModelSpec",
    "RegistryError",
    "PromptCache",
    "Resources",
    "TokenScores",
    "VllmEngine",
    "continue_from_cache",
    "convert_gguf_to_safetensors",
    "encode_prompt",
    "encode_prompt_cache",
    "eos_token_ids",
    "file_sha256",
    "frame_to_records",
    "generate",
    "get_model_spec",
    "greedy_continue_many",
    "greedy_decode",
    "load_model",
    "load_model_from_spec",
    "load_tokenizer",
    "load_vllm",
    "generate_vllm",
    "load_model_registry",
    "parse_model_registry",
    "prepare_model",
    "records_to_frame",
    "render_prompts",
    "resolve_chat_template",
    "resolve_gguf",
    "teacher_force",
    "token_texts",
]
