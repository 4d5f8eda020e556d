"""An example inference backend for saltbench (docs/extending.md §9): greedy generation through transformers'
own ``generate`` instead of saltbench's decoding loop, writing the same records.

A backend is three things: a model class that keeps the protocol of
``saltbench.inference.base.LoadedModel`` (``render``, ``generate``, ``prompt_cache``, ``force_and_continue``
and three class attributes), a loader whose keyword parameters are the settings a job offers it and whose
``options`` parameter is annotated with the block of its registry options, and an entry point naming the
loader (``pyproject.toml``). A registry entry then runs on it:

    my-model:
      source: {kind: local, path: data/models/my-model}
      backend: hf_generate
      backend_options: {attention: eager}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from saltbench.core.blocks import Block, setting
from saltbench.inference import GenerationRecord, ModelSpec, TokenScores, load_tokenizer, token_texts
from saltbench.inference.base import (
    ForcedContinuation,
    ModelBase,
    StopRule,
    cut_continuation,
    eos_token_ids,
    screen_prompts,
)


@dataclass(frozen=True, kw_only=True)
class GenerateOptions(Block):
    """The ``backend_options`` of a ``backend: hf_generate`` entry."""

    attention: Literal["sdpa", "eager"] = setting("sdpa", "transformers' attention implementation.")


def token_scores(logits: Any, ids: Any, top_k: int) -> TokenScores:
    """The statistics saltbench stores per token, from raw logits ``[T, V]`` and the chosen ids ``[T]``:
    float32 ``log_softmax``, the chosen token's log-probability, the top-``k`` and the entropy (nats)."""
    import torch

    logprobs = torch.log_softmax(logits.float(), dim=-1)
    top = logprobs.topk(top_k, dim=-1)
    p = logprobs.exp()
    entropy = -torch.where(p > 0, p * logprobs, torch.zeros_like(p)).sum(-1)
    return TokenScores(
        token_ids=ids.numpy().astype(np.int32),
        chosen_logprobs=logprobs.gather(-1, ids[:, None])[:, 0].numpy(),
        topk_ids=top.indices.numpy().astype(np.int32),
        topk_logprobs=top.values.numpy(),
        entropy=entropy.numpy(),
    )


@dataclass
class GenerateModel(ModelBase):
    """A transformers model decoded by its own ``generate`` (greedy), in batches of ``batch_size``."""

    backend: ClassVar[str] = "hf_generate"
    continuous_batching: ClassVar[bool] = False
    full_entropy: ClassVar[bool] = True

    def _decode(self, contexts: Sequence[Sequence[int]], max_new_tokens: int) -> list[TokenScores]:
        """Greedy continuations of the token-id ``contexts`` (left-padded into one batch), each cut after its
        first EOS token."""
        import torch

        eos = eos_token_ids(self.engine, self.tokenizer)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos[0]
        width = max(len(c) for c in contexts)
        ids = torch.tensor([[pad] * (width - len(c)) + list(c) for c in contexts])
        mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
        with torch.inference_mode():
            out = self.engine.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=pad,
                eos_token_id=eos,
            )
        new = out.sequences[:, width:]
        logits = torch.stack(out.logits, dim=1)  # [B, T, V]
        ended = np.isin(new.numpy(), eos)
        lengths = np.where(ended.any(axis=1), ended.argmax(axis=1) + 1, new.shape[1])
        return [token_scores(logits[b, :n], new[b, :n], self.top_k) for b, n in enumerate(lengths)]

    def generate(
        self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True
    ) -> list[GenerationRecord]:
        """One greedy record per prompt, in order; a prompt that cannot fit the context is an error record."""
        capped = self.capped(prompts, budgets)
        limit = self.spec.max_context or self.engine.config.max_position_embeddings
        encoded, records = screen_prompts(
            self.tokenizer, prompts, max_context=limit, max_new_tokens=capped, top_k=self.top_k
        )
        todo = [i for i, record in enumerate(records) if record is None]
        for lo in range(0, len(todo), self.batch_size):
            batch = todo[lo : lo + self.batch_size]
            decoded = self._decode([encoded[i] for i in batch], max(capped[i] for i in batch))
            for i, scores in zip(batch, decoded):
                scores = scores.slice(0, capped[i])  # a greedy run to a longer budget starts the same
                eos = len(scores) > 0 and int(scores.token_ids[-1]) in eos_token_ids(
                    self.engine, self.tokenizer
                )
                records[i] = GenerationRecord.from_scores(
                    scores,
                    token_texts(self.tokenizer, scores.token_ids, context_ids=encoded[i]),
                    finish_reason="eos" if eos else "length",
                    num_prompt_tokens=len(encoded[i]),
                )
        return [record for record in records if record is not None]

    def prompt_cache(self, prompt_ids: Sequence[int]) -> None:
        """Nothing: every row runs its whole context."""
        return None

    def _target_logprobs(self, context: Sequence[int], target: Sequence[int]) -> np.ndarray:
        """``log p(target_j | context, target_<j)``: one forward pass over ``context + target``."""
        import torch

        if not target:
            return np.zeros(0)
        with torch.inference_mode():
            logits = self.engine(input_ids=torch.tensor([[*context, *target]])).logits[0]
        logprobs = torch.log_softmax(logits[len(context) - 1 : -1].float(), dim=-1)
        return logprobs.gather(-1, torch.tensor(list(target))[:, None])[:, 0].double().numpy()

    def force_and_continue(
        self,
        prompt_ids: Sequence[int],
        rows: Sequence[tuple[Sequence[int], Sequence[int]]],
        *,
        max_new_tokens: int,
        cache: Any = None,
        stop: StopRule | None = None,
    ) -> list[ForcedContinuation]:
        """Per row ``(prefix, target)``: the target's teacher-forced log-probabilities after
        ``prompt + prefix``, and the greedy continuation of ``prompt + prefix`` cut by ``stop``."""
        eos = eos_token_ids(self.engine, self.tokenizer)
        out = []
        for row, (prefix, target) in enumerate(rows):
            context = [*map(int, prompt_ids), *map(int, prefix)]
            forced = self._target_logprobs(context, [int(t) for t in target])
            scores = (
                self._decode([context], max_new_tokens)[0]
                if max_new_tokens
                else TokenScores.empty(self.top_k)
            )
            length, finish = cut_continuation(scores, eos, row, stop)
            scores = scores.slice(0, length)
            record = GenerationRecord.from_scores(
                scores,
                token_texts(self.tokenizer, scores.token_ids, context_ids=context),
                finish_reason="eos" if finish == "eos" else "length",
                num_prompt_tokens=len(context),
            )
            out.append(ForcedContinuation(forced, record, finish))
        return out


def load(
    model_path: str | Path, spec: ModelSpec, *, batch_size: int, top_k: int, options: GenerateOptions
) -> GenerateModel:
    """The loader (entry point ``saltbench.backends:hf_generate``): the model at ``model_path`` on the CPU,
    with the attention implementation of the entry's ``backend_options``."""
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(model_path, revision=spec.revision)
    model = AutoModelForCausalLM.from_pretrained(
        model_path,
        dtype=getattr(torch, spec.dtype),
        revision=spec.revision,
        attn_implementation=options.attention,
    )
    return GenerateModel(spec, tokenizer, model.eval(), batch_size, top_k)
