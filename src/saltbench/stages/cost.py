"""What a configuration's inference will use, before any of it runs (docs/backends.md §8.3).

For every generated model of ``models``, every prompt style and task: the prompts the inference stage will
send (the same datasets, ``inference.max_samples`` and prompt rendering), their prompt tokens and an upper
bound on their completion tokens (the generation budget of each request), and, for a served model whose
registry entry sets both prices, the cost. Prompt tokens are counted with ``backend_options.tokenizer`` when
a served entry names one (exact for the ``completions`` endpoint; for ``chat`` the server's template adds a
few tokens per message), and estimated as characters / 4 otherwise (marked ``~``).

The extra tokens of the other estimator families (docs/generation.md §7.5):

* **draws** (``inference.samples.n > 0``, for the models that draw): one more request per prompt asking
  ``n`` answers (the prompt's tokens once, its prefix shared), ``n`` × the greedy answers' generated
  tokens — counted from the greedy generations when they are on disk, else at most ``n`` × the budget;
* **second pass** (``inference.second_pass``: its ``kinds`` and ``granularities``, for the models it asks):
  one request per unit asked about and kind — the prompt
  and the answer scored (estimated with the reference answer's text and units, the greedy answer's being
  unknown before the run), ``VERBALIZED_BUDGET`` tokens generated at most for verbalized confidence, 1 for
  P(True).

Run::

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
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from saltbench.config import WorkflowConfig
from saltbench.inference.openai.options import api_settings
from saltbench.inference.registry import ModelSpec

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4.0
"""The estimate of prompt tokens without a tokenizer: characters / 4 (English text, byte-level BPE)."""


@dataclass(frozen=True)
class RequestEstimate:
    """The requests of one (model, style, task): count, prompt tokens, completion tokens at most, cost
    (greedy, draws and second pass together; module docstring), and the extra tokens of the draws and of
    the second pass apart. ``draw_tokens_known``: the draws' completion tokens are ``n`` × the greedy
    answers' generated tokens (their generations on disk), not the bound ``n`` × budget."""

    model: str
    style: str
    task: str
    requests: int
    prompt_tokens: int
    max_completion_tokens: int
    counted: bool
    cost: float | None
    draw_requests: int = 0
    draw_prompt_tokens: int = 0
    draw_completion_tokens: int = 0
    draw_tokens_known: bool = False
    second_pass_requests: int = 0
    second_pass_prompt_tokens: int = 0
    second_pass_completion_tokens: int = 0


def estimate(settings: WorkflowConfig, generations: str | Path = "data/generations") -> list[RequestEstimate]:
    """The :class:`RequestEstimate` of every generated model, style and task of a resolved configuration
    (``generations``: where the greedy generations are, for the draws' tokens)."""
    from saltbench.data import build_dataset
    from saltbench.inference import load_model_registry

    registry = load_model_registry(settings.model_registry)
    generated = [registry[name] for name in settings.models if not registry[name].imported]
    datasets = (
        {task: build_dataset(settings.datasets, settings.seed, task) for task in settings.tasks}
        if generated
        else {}
    )
    second = settings.inference.second_pass
    asked = second.asked(settings.models, [name for name in settings.models if registry[name].imported])
    out = []
    for spec in generated:
        tokenizer = _tokenizer(spec)
        plan = (second.kinds, second.granularities) if spec.name in asked else None
        for style in settings.prompt_styles:
            for task in settings.tasks:
                cell = (style, task, datasets[task], Path(generations))
                out.append(_cell_estimate(settings, spec, tokenizer, cell, plan))
    return out


def _cell_estimate(
    settings: WorkflowConfig,
    spec: ModelSpec,
    tokenizer: Any,
    cell: tuple[str, str, pl.DataFrame, Path],
    second_pass: tuple[tuple[str, ...], tuple[str, ...]] | None,
) -> RequestEstimate:
    """The estimate of one (model, style, task): greedy, draws and second pass (module docstring)."""
    from saltbench.stages.generation import answered_rows, build_prompts

    style, task, dataset, generations = cell
    count = _counter(tokenizer)
    rows = answered_rows(dataset, settings.inference.max_samples.get(spec.name))
    prompts = _rendered(spec, tokenizer, build_prompts(rows, style, settings.datasets.n_shots))
    budget = spec.generation_budget(settings.inference.max_new_tokens_for(task, style))
    prompt_tokens = sum(count(p) for p in prompts)
    n = settings.inference.samples.n if spec.name in settings.inference.samples.drawn(settings.models) else 0
    greedy = _greedy_tokens(generations / spec.name / style / f"{task}.parquet") if n else None
    draws = n * (budget * len(prompts) if greedy is None else greedy)
    extra = {"draw_requests": len(prompts) if n else 0, "draw_prompt_tokens": prompt_tokens if n else 0}
    if second_pass is not None:
        extra.update(_second_pass_tokens(rows, task, prompts, count, *second_pass))
    scored = prompt_tokens + extra["draw_prompt_tokens"] + extra.get("second_pass_prompt_tokens", 0)
    completion = budget * len(prompts)
    generated = completion + draws + extra.get("second_pass_completion_tokens", 0)
    return RequestEstimate(
        spec.name,
        style,
        task,
        len(prompts),
        prompt_tokens,
        completion,
        counted=tokenizer is not None,
        cost=_cost(spec, scored, generated) if spec.served else None,
        draw_completion_tokens=draws,
        draw_tokens_known=greedy is not None,
        **extra,
    )


def _greedy_tokens(path: Path) -> int | None:
    """The generated tokens of a greedy generations file, ``None`` where there is none yet."""
    if not path.is_file():
        return None
    return int(pl.read_parquet(path, columns=["num_generated_tokens"])["num_generated_tokens"].sum())


def _second_pass_tokens(
    rows: pl.DataFrame,
    task: str,
    prompts: Sequence[str],
    count: Callable[[str], int],
    kinds: Sequence[str],
    granularities: Sequence[str],
) -> dict[str, int]:
    """The second pass's requests and tokens of one cell: per prompt, one request per unit of its reference
    answer at each granularity asked and per kind; each scores the prompt and the answer, and generates
    ``VERBALIZED_BUDGET`` tokens (verbalized) or 1 (P(True))."""
    from saltbench.evaluation import VERBALIZED_BUDGET

    references = rows["reference"].to_list()
    units = _reference_units(rows, task, granularities)
    scored = np.asarray([count(p) + count(r) for p, r in zip(prompts, references, strict=True)], np.int64)
    asked = int(units.sum())
    budget = sum(VERBALIZED_BUDGET if kind == "verbalized" else 1 for kind in kinds)
    return {
        "second_pass_requests": asked * len(kinds),
        "second_pass_prompt_tokens": int((units * scored).sum()) * len(kinds),
        "second_pass_completion_tokens": asked * budget,
    }


def _reference_units(rows: pl.DataFrame, task: str, granularities: Sequence[str]) -> np.ndarray:
    """Per row, the units of its reference answer at ``granularities`` (the generation counting one): the
    stand-in for the units of the answer the model will give."""
    from saltbench.evaluation import evaluate_many

    units = np.full(rows.height, int("generation" in granularities), dtype=np.int64)
    finer = [g for g in granularities if g != "generation"]
    if not finer:
        return units
    for (variant,), group in rows.with_row_index("_i").group_by(["variant"], maintain_order=True):
        references = group["reference"].to_list()
        evaluated = evaluate_many(references, references, task, variant=variant, granularities=finer)  # type: ignore[arg-type]
        units[group["_i"].to_numpy()] += np.bincount(
            evaluated["sample_idx"].to_numpy(), minlength=group.height
        )
    return units


def _tokenizer(spec: ModelSpec) -> Any:
    """A served entry's ``backend_options.tokenizer``, loaded once per model (``None`` when it names none,
    and for a model run locally)."""
    if not spec.served:
        return None
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
    if spec.served and api_settings(spec).endpoint == "completions":
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
    """A Markdown table of the estimates with a total row per model: the greedy requests, then the draws'
    and the second pass's extra requests and tokens (``≤``: a bound; ``~``: estimated), then the cost of all
    of them."""
    lines = [
        "| model | style | task | requests | prompt tokens | completion tokens (at most) | draws: requests, "
        "prompt, completion tokens | second pass: requests, prompt, completion tokens | cost (at most) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in estimates:
        lines.append(_row(e.model, e.style, e.task, [e]))
    for model in dict.fromkeys(e.model for e in estimates):
        lines.append(_row(f"**{model}**", "", "", [e for e in estimates if e.model == model]))
    return "\n".join(lines)


def _row(model: str, style: str, task: str, mine: Sequence[RequestEstimate]) -> str:
    """One line of :func:`report`: the sums of ``mine``."""

    def total(name: str) -> int:
        return sum(getattr(e, name) for e in mine)

    mark = "" if all(e.counted for e in mine) else "~"
    bound = "" if all(e.draw_tokens_known for e in mine) else "≤"
    costs = [e.cost for e in mine]
    cost = "" if any(c is None for c in costs) else f"{sum(c for c in costs if c is not None):.4f}"
    draws = (
        f"{total('draw_requests')}, {mark}{total('draw_prompt_tokens'):,}, "
        f"{bound}{total('draw_completion_tokens'):,}"
        if total("draw_requests")
        else ""
    )
    second = (
        f"{total('second_pass_requests')}, ~{total('second_pass_prompt_tokens'):,}, "
        f"≤{total('second_pass_completion_tokens'):,}"
        if total("second_pass_requests")
        else ""
    )
    return (
        f"| {model} | {style} | {task} | {total('requests')} | {mark}{total('prompt_tokens'):,} | "
        f"{total('max_completion_tokens'):,} | {draws} | {second} | {cost} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m saltbench.stages.cost CONFIG``: print the estimate table (no request is sent)."""
    from saltbench.config import load_config, resolve_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a workflow config file (config/*.yaml)")
    args = parser.parse_args(argv)
    estimates = estimate(resolve_config(load_config(args.config)))
    if not estimates:
        print(f"{args.config}: every model of `models` is imported: nothing to generate")
        return 0
    print(report(estimates))
    return 0


__all__ = ["CHARS_PER_TOKEN", "RequestEstimate", "estimate", "main", "report"]


if __name__ == "__main__":
    sys.exit(main())
