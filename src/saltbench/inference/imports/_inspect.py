"""inspect_ai evaluation logs (docs/backends.md §9.3), read through inspect_ai's own log API
(``inspect_ai.log.read_eval_log``; ``.eval`` and ``.json`` logs alike). inspect_ai is an optional extra
(``pip install -e ".[inspect]"``).

One response per sample: the sample's dataset row is ``metadata["sample_id"]`` when the task recorded it,
else the sample's ``id``; the prompt is its ``input`` (a string, or the text of its last user message);
``metadata["style"]`` its prompt style. From the first choice of its output: the text (``message.text``,
reasoning blocks excluded), the reasoning blocks (``ContentReasoning``) as reasoning returned apart, and
``logprobs.content`` — each token's text (from its ``bytes`` when given, else ``token``), log-probability and
``top_logprobs``. No reasoning block is empty reasoning returned apart: for a model with a
``reasoning_format`` the text is the final content (docs/backends.md §9.4). The stop reason ``stop`` (and
``unknown``) is ``eos``, ``max_tokens`` and ``model_length`` are ``length``; a sample with an error, or an
output with one, is an error row. A log of several epochs (docs/backends.md §9.7): a sample's first epoch is
its response, the answer scored; its later epochs, in epoch order, are that response's draws (read when the
run asks for draws, ``inference.samples.n > 0``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from saltbench.core.vocabulary import FinishReason
from saltbench.inference.imports._response import GenerationsFileError, ImportedResponse

STOP_REASONS: dict[str, FinishReason] = {
    "stop": "eos",
    "unknown": "eos",
    "max_tokens": "length",
    "model_length": "length",
}
"""inspect_ai stop reasons read, and the generations table's finish reason each stands for."""


def _prompt(sample: Any) -> str | None:
    if isinstance(sample.input, str):
        return str(sample.input)
    users = [m for m in sample.input if getattr(m, "role", None) == "user"]
    return str(users[-1].text) if users else None


def _sample(sample: Any, path: Path) -> ImportedResponse:
    where = f"sample {sample.id!r} epoch {sample.epoch}"
    metadata = sample.metadata or {}
    sample_id = str(metadata.get("sample_id", sample.id))
    style = metadata.get("style")
    prompt = _prompt(sample)
    output = sample.output
    error = sample.error.message if sample.error is not None else getattr(output, "error", None)
    if error:
        return ImportedResponse(where, "", sample_id, prompt, style, "error", error=str(error))
    if not output.choices:
        raise GenerationsFileError(path, where, "the output has no choice")
    choice = output.choices[0]
    finish = STOP_REASONS.get(choice.stop_reason)
    if finish is None:
        raise GenerationsFileError(
            path, where, f"stop reason {choice.stop_reason!r} is not one of {sorted(STOP_REASONS)}"
        )
    message = choice.message
    content = message.content if isinstance(message.content, list) else []
    # inspect_ai returns reasoning apart (ContentReasoning blocks): none means the text is the final content
    reasoning = "".join(c.reasoning for c in content if getattr(c, "type", None) == "reasoning")
    usage = output.usage
    n_prompt = int(usage.input_tokens) if usage is not None and usage.input_tokens else 0
    base = ImportedResponse(
        where, message.text, sample_id, prompt, style, finish, num_prompt_tokens=n_prompt, reasoning=reasoning
    )
    if choice.logprobs is None:
        return base
    entries = choice.logprobs.content
    if all(e.bytes is not None for e in entries):
        from saltbench.inference.detokenize import byte_token_texts

        tokens = byte_token_texts([e.bytes for e in entries], [e.token for e in entries])
    else:
        tokens = [e.token for e in entries]
    tops = [e.top_logprobs or [] for e in entries]
    return replace(
        base,
        token_texts=tokens,
        logprobs=[e.logprob for e in entries],
        top_logprobs=[[t.logprob for t in row] for row in tops],
        top_tokens=[[t.token for t in row] for row in tops],
    )


def read_inspect_log(path: str | Path) -> list[ImportedResponse]:
    """One response per sample of the inspect_ai log ``path`` (module docstring).

    Raises:
        ModuleNotFoundError: inspect_ai is not installed (the message says how to install it).
        GenerationsFileError: the log cannot be read, holds no samples, or a sample's output does not fit
            (naming the sample and epoch).
    """
    try:
        from inspect_ai.log import read_eval_log
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "importing an inspect_ai log needs inspect_ai: pip install -e '.[inspect]' "
            "(docs/backends.md §9.3)"
        ) from None
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no inspect_ai log at {str(path)!r}")
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # inspect_ai raises its own and pydantic errors for a file it cannot read
        raise GenerationsFileError(path, "", f"not an inspect_ai log ({type(exc).__name__}: {exc})") from None
    if not log.samples:
        raise GenerationsFileError(path, "", "the log holds no samples (was it written with header_only?)")
    return _epochs_as_draws(log.samples, path)


def _epochs_as_draws(samples: list[Any], path: Path) -> list[ImportedResponse]:
    """One response per sample id, in the order of first appearance: its first epoch, with its later epochs
    as its draws (in epoch order)."""
    epochs: dict[Any, list[tuple[int, ImportedResponse]]] = {}
    for sample in samples:
        epochs.setdefault(sample.id, []).append((int(sample.epoch), _sample(sample, path)))
    responses = []
    for runs in epochs.values():
        ordered = [response for _, response in sorted(runs, key=lambda run: run[0])]
        responses.append(replace(ordered[0], draws=tuple(ordered[1:])))
    return responses


__all__ = ["STOP_REASONS", "read_inspect_log"]
