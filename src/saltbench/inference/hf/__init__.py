"""The ``hf`` backend: transformers forward passes in this process (docs/backends.md §3).

* :mod:`~saltbench.inference.hf.model` — :class:`HfModel` and its loader :func:`load` (the entry point
  ``saltbench.backends:hf``);
* :mod:`~saltbench.inference.hf.loading` — a model and tokenizer from a directory or hub id;
* :mod:`~saltbench.inference.hf.generation` — batched greedy generation;
* :mod:`~saltbench.inference.hf.teacher` — teacher forcing and many continuations of one prompt;
* :mod:`~saltbench.inference.hf.forced` — the interventions' forced pass;
* ``_decoding`` and ``_logit_stats`` — the decoding core all of them run (docs/generation.md §6).

Only :mod:`~saltbench.inference.hf.model` is imported with the package; the modules that import torch are
imported when one of their names is first read.
"""

from typing import TYPE_CHECKING

from saltbench.core.lazy import lazy_getattr
from saltbench.inference.hf.model import HfModel, load

__getattr__ = lazy_getattr(
    __name__,
    {
        "PromptCache": "_decoding",
        "encode_prompt_cache": "_decoding",
        "greedy_decode": "_decoding",
        "generate": "generation",
        "pad_token_id": "generation",
        "load_model": "loading",
        "load_model_from_spec": "loading",
        "Continuation": "teacher",
        "continue_from_cache": "teacher",
        "greedy_continue_many": "teacher",
        "teacher_force": "teacher",
        "force_and_continue": "forced",
    },
)

if TYPE_CHECKING:
    from saltbench.inference.hf._decoding import PromptCache, encode_prompt_cache, greedy_decode
    from saltbench.inference.hf.forced import force_and_continue
    from saltbench.inference.hf.generation import generate, pad_token_id
    from saltbench.inference.hf.loading import load_model, load_model_from_spec
    from saltbench.inference.hf.teacher import (
        Continuation,
        continue_from_cache,
        greedy_continue_many,
        teacher_force,
    )

__all__ = [
    "Continuation",
    "HfModel",
    "PromptCache",
    "continue_from_cache",
    "encode_prompt_cache",
    "force_and_continue",
    "generate",
    "greedy_continue_many",
    "greedy_decode",
    "load",
    "load_model",
    "load_model_from_spec",
    "pad_token_id",
    "teacher_force",
]
