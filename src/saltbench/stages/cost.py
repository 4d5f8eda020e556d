"""What a configuration's API requests will use, before any is sent (docs/backends.md §8.3).

For every model of ``models`` on ``backend: openai``, every prompt style and task: the prompts the inference
stage will send (the same datasets, ``inference.max_samples`` and prompt rendering), their prompt tokens and
an upper bound on their completion tokens (the generation budget of each request), and, when the registry
entry sets both prices, the cost. Prompt tokens are counted with ``backend_options.tokenizer`` when the entry
names one (exact for the ``completions`` endpoint; for ``chat`` the server's template adds a few tokens per
message), and estimated as characters / 4 otherwise (marked ``~``). Run::

    python -m saltbench.stages.cost config/hosted.yaml

Each inference job logs what it actually used (requests, retries, cache hits, tokens, cost).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from saltbench.config import WorkflowConfig
from saltbench.inference.openai.options import api_settings
from saltbench.inference.registry import ModelSpec

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4.0
"""The estimate of prompt tokens without a tokenizer: characters / 4 (English text, byte-level BPE)."""


@dataclass(frozen=True)
class RequestEstimate:
    """The requests of one (model, style, task): count, prompt tokens, completion tokens at most, cost."""

    model: str
    style: str
    task: str
    requests: int
    prompt_tokens: int
    max_completion_tokens: int
    counted: bool
    cost: float | None


def estimate(settings: WorkflowConfig) -> list[RequestEstimate]:
    """The :class:`RequestEstimate` of every served model, style and task of a resolved configuration."""
    from saltbench.data import build_dataset
    from saltbench.inference import load_model_registry
    from saltbench.stages.generation import answered_rows, build_prompts

    registry = load_model_registry(settings.model_registry)
    served = [registry[name] for name in settings.models if registry[name].served]
    datasets = (
        {task: build_dataset(settings.datasets, settings.seed, task) for task in settings.tasks}
        if served
        else {}
    )
    out = []
    for spec in served:
        tokenizer = _tokenizer(spec)
        count = _counter(tokenizer)
        for style in settings.prompt_styles:
            for task in settings.tasks:
                rows = answered_rows(datasets[task], settings.inference.max_samples.get(spec.name))
                prompts = _rendered(spec, tokenizer, build_prompts(rows, style, settings.datasets.n_shots))
                budget = spec.generation_budget(settings.inference.max_new_tokens_for(task, style))
                prompt_tokens = sum(count(p) for p in prompts)
                completion = budget * len(prompts)
                out.append(
                    RequestEstimate(
                        spec.name,
                        style,
                        task,
                        len(prompts),
                        prompt_tokens,
                        completion,
                        counted=tokenizer is not None,
                        cost=_cost(spec, prompt_tokens, completion),
                    )
                )
    return out


def _tokenizer(spec: ModelSpec) -> Any:
    """The entry's ``backend_options.tokenizer``, loaded once per model (``None`` when it names none)."""
    tokenizer = api_settings(spec).tokenizer
    if tokenizer is None:
        return None
    from saltbench.inference.chat import load_tokenizer

    return load_tokenizer(tokenizer)


def _counter(tokenizer: Any) -> Callable[[str], int]:
    if tokenizer is not None:
        return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])
    return lambda text: math.ceil(len(text) / CHARS_PER_TOKEN)


def _rendered(spec: ModelSpec, tokenizer: Any, instructions: Sequence[str]) -> list[str]:
    """The text of each request: the rendered prompt (``completions``) or system prompt + instruction."""
    if api_settings(spec).endpoint == "completions":
        from saltbench.inference.chat import render_for_spec

        return render_for_spec(tokenizer, instructions, spec)
    return [f"{spec.system_prompt}\n{text}" if spec.system_prompt else text for text in instructions]


def _cost(spec: ModelSpec, prompt_tokens: int, completion_tokens: int) -> float | None:
    api = api_settings(spec)
    if api.price_prompt_per_mtok is None or api.price_completion_per_mtok is None:
        return None
    return (
        prompt_tokens * api.price_prompt_per_mtok + completion_tokens * api.price_completion_per_mtok
    ) / 1e6


def report(estimates: Sequence[RequestEstimate]) -> str:
    """A Markdown table of the estimates with a total row per model."""
    lines = [
        "| model | style | task | requests | prompt tokens | completion tokens (at most) | cost (at most) |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in estimates:
        mark = "" if e.counted else "~"
        cost = "" if e.cost is None else f"{e.cost:.4f}"
        lines.append(
            f"| {e.model} | {e.style} | {e.task} | {e.requests} | {mark}{e.prompt_tokens:,} | "
            f"{e.max_completion_tokens:,} | {cost} |"
        )
    for model in dict.fromkeys(e.model for e in estimates):
        mine = [e for e in estimates if e.model == model]
        costs = [e.cost for e in mine]
        total = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        lines.append(
            f"| **{model}** | | | {sum(e.requests for e in mine)} | {sum(e.prompt_tokens for e in mine):,} | "
            f"{sum(e.max_completion_tokens for e in mine):,} | {'' if total is None else f'{total:.4f}'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m saltbench.stages.cost CONFIG``: print the estimate table (no request is sent)."""
    from saltbench.config import load_config, resolve_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a workflow config file (config/*.yaml)")
    args = parser.parse_args(argv)
    estimates = estimate(resolve_config(load_config(args.config)))
    if not estimates:
        print(f"{args.config}: no model of `models` runs on backend openai: no API request")
        return 0
    print(report(estimates))
    return 0


__all__ = ["CHARS_PER_TOKEN", "RequestEstimate", "estimate", "main", "report"]


if __name__ == "__main__":
    sys.exit(main())
