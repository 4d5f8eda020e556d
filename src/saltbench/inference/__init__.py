"""Inference with real models, recording per-token log-probabilities (docs/generation.md).

One package per backend, each with its loader and model class (docs/backends.md §7): :mod:`.hf`
(transformers forward passes, :func:`generate`), :mod:`.vllm` (the vLLM engine, :func:`load_vllm`,
:func:`generate_vllm`; full-vocabulary entropy stored as NaN there), :mod:`.openai` (served and hosted
models), :mod:`.server` (a workflow-managed vLLM server) and :mod:`.simulated` (planted effects). They
write the same records (:mod:`.records`) and share the torch-free contract of :mod:`.base`; the registry
of backends is :mod:`.backends`, the model registry :mod:`.registry` (its ``backend`` key chooses per
model), the sources of the weights :mod:`.sources`, and generations made elsewhere are read by
:mod:`.imports`.

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
    ModelSpec,
    RegistryError,
    Resources,
    get_model_spec,
    load_model_registry,
    parse_model_registry,
)
from saltbench.inference.sources import (
    GenerationsSource,
    GgufPackageSource,
    HubSource,
    LocalSource,
    ModelSource,
)

# Names whose modules import torch (or convert files) are loaded on first access, so that reading the
# registry (e.g. from the Snakefile) stays fast.
_LAZY = {
    "eos_token_ids": "base",
    "load_tokenizer": "chat",
    "SOURCE_RECORD": "sources",
    "convert_gguf_to_safetensors": "sources",
    "file_sha256": "sources",
    "prepare_model": "sources",
    "resolve_gguf": "sources",
    "generate": "hf",
    "greedy_decode": "hf",
    "load_model": "hf",
    "load_model_from_spec": "hf",
    "Continuation": "hf",
    "PromptCache": "hf",
    "continue_from_cache": "hf",
    "encode_prompt_cache": "hf",
    "greedy_continue_many": "hf",
    "teacher_force": "hf",
    "generate_vllm": "vllm",
    "load_vllm": "vllm",
    "VllmEngine": "vllm",
}

__getattr__ = lazy_getattr(__name__, _LAZY)


if TYPE_CHECKING:
    from saltbench.inference.base import eos_token_ids
    from saltbench.inference.chat import load_tokenizer
    from saltbench.inference.hf import (
        Continuation,
        PromptCache,
        continue_from_cache,
        encode_prompt_cache,
        generate,
        greedy_continue_many,
        greedy_decode,
        load_model,
        load_model_from_spec,
        teacher_force,
    )
    from saltbench.inference.sources import (
        SOURCE_RECORD,
        convert_gguf_to_safetensors,
        file_sha256,
        prepare_model,
        resolve_gguf,
    )
    from saltbench.inference.vllm import VllmEngine, generate_vllm, load_vllm

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
