"""Generation caches as the SALT authors' release writes them (docs/backends.md §9.1), for the import tests.

The authors' prompts: their template's layout (instruction line, fence instruction, for Code the function
source, the few-shot block, the test block; docs/tasks.md §1.3), rendered by a ChatML chat template with
their default system message. Their instruction sentences are not in our references, so the head here is in
words of our own — which is what makes these prompts differ from saltbench's, as the authors' do. Their
vLLM wrapper's results: ``input`` (what the caller passed), ``prompt``, the stripped ``text`` and
``logprobs``, one mapping per generated position with the generated token first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from saltbench.tasks import get_task
from saltbench.tasks.base import render_few_shots

AUTHORS_SYSTEM = "You are a helpful AI assistant."
"""The authors' default system message (their chat rendering adds it when the template has a system role)."""


def authors_prompt(task: str, variant: str | None, text: str, n_shots: int | None = None) -> str:
    """A chat-rendered prompt laid out by the authors' template (module docstring) for the input ``text``."""
    task_object = get_task(task, variant)
    head = [
        f"Solve this {task_object.display_name} problem the way the examples below do.",
        "Write what you like first; then print '********' on a line of its own, the answer, and '********' "
        "again. ANSWERS NOT BETWEEN '********' LINES FAIL.",
    ]
    if task == "code":
        head += ["Function Code:", task_object.spec.source]  # type: ignore[attr-defined]
    body = (
        "\n".join(head)
        + "\n"
        + render_few_shots(task_object.few_shots, n_shots)
        + task_object.test_block(text)
    )
    return (
        f"<|im_start|>system\n{AUTHORS_SYSTEM}<|im_end|>\n<|im_start|>user\n{body}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def vllm_positions(
    tokens: Sequence[str],
    logprobs: Sequence[float],
    alternatives: Sequence[Sequence[tuple[int, float]]],
    ids: Sequence[int],
    *,
    eos: bool = True,
) -> list[dict[str, Any]]:
    """Serialised vLLM ``Logprob`` dicts, one per position: the generated token first with its
    ``decoded_token``, then its alternatives ``(id, logprob)`` by id only; ``eos``: a last position, the
    end-of-sequence token, decoded as ``""``."""
    positions = []
    for token, logprob, alts, token_id in zip(tokens, logprobs, alternatives, ids):
        position = {str(token_id): {"logprob": logprob, "rank": 1, "decoded_token": token}}
        position.update(
            {str(i): {"logprob": lp, "rank": r + 2} for r, (i, lp) in enumerate(alts) if i != token_id}
        )
        positions.append(position)
    if eos:
        positions.append({"151645": {"logprob": -0.0001, "rank": 1, "decoded_token": ""}})
    return positions


def pair_positions(
    tokens: Sequence[str], logprobs: Sequence[float], alternatives: Sequence[Sequence[tuple[str, float]]]
) -> list[dict[str, list[Any]]]:
    """``{token_id: [logprob, token]}`` per position, the generated token first."""
    return [
        {"0": [logprob, token], **{str(k + 1): [lp, text] for k, (text, lp) in enumerate(alts)}}
        for token, logprob, alts in zip(tokens, logprobs, alternatives)
    ]


def write_cache(path: Path, payload: Any) -> Path:
    """The cache envelope, as the release's ``save_generation_cache`` writes it (indent 2, UTF-8)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"version": 1, "payload": payload}, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    return path
