"""Draws of the simulated model (docs/generation.md §7, docs/simulation.md §9), seeded by
:func:`~saltbench.inference.base.draw_seed` of the prompt's seed and the draw ``d``.

* **No planted sampling signal** (``repeat_correct`` null, the default): draw ``d`` of a prompt is the
  planted process run again with the draw's seed in place of the parameters' seed — an independent response
  of the same model, a function of that seed and the prompt only.
* **Planted sampling signal** (``repeat_correct`` and ``repeat_wrong`` set): draw ``d`` is the greedy
  response (its plan: shape, trace, cut, token probabilities) with each atom of the answer repeated with
  probability ``repeat_correct`` when the greedy atom is correct and ``repeat_wrong`` when it is wrong
  (uniforms from the draw's seed and the prompt); an atom not repeated is written as its one alternative —
  for a correct greedy atom a wrong atom (:func:`~saltbench.inference.simulated.answers.wrong_atom`) drawn
  once per prompt from the parameters' seed, the same in every draw; for a wrong one the reference atom.

``temperature`` and ``top_p`` do not change either process.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from saltbench.inference.base import DrawSettings, draw_seed
from saltbench.inference.simulated.answers import Plan, _rng, wrong_atom

if TYPE_CHECKING:
    from saltbench.inference.records import GenerationRecord
    from saltbench.inference.simulated.model import SimulatedModel


def greedy_texts(plan: Plan) -> dict[int, str]:
    """The texts of the greedy response's wrong atoms (index from 0 -> text), drawn as
    :func:`~saltbench.inference.simulated.answers.answer_body` draws them."""
    rng = random.Random(plan.wrong_seed)
    return {j: wrong_atom(plan.answer.atoms[j], rng) for j in np.flatnonzero(~plan.correct).tolist()}


def alternative_texts(plan: Plan, seed: int, prompt: str) -> dict[int, str]:
    """The one alternative of each correct greedy atom (a wrong atom), fixed by the seed and the prompt."""
    rng = random.Random(int(_rng(seed, "alternatives", prompt).integers(2**63)))
    return {j: wrong_atom(plan.answer.atoms[j], rng) for j in np.flatnonzero(plan.correct).tolist()}


def repeated(plan: Plan, repeat_correct: float, repeat_wrong: float, seed: int, prompt: str) -> np.ndarray:
    """Which atoms a draw seeded ``seed`` repeats: uniform ``< repeat_correct`` (greedy atom correct) or
    ``< repeat_wrong`` (wrong)."""
    uniforms = _rng(seed, "draw", prompt).random(plan.correct.size)
    return uniforms < np.where(plan.correct, repeat_correct, repeat_wrong)


def planted_draws(
    model: SimulatedModel, prompt: str, budget: int, seed: int, n: int
) -> list[GenerationRecord]:
    """``n`` draws of a prompt seeded ``seed`` with the planted sampling signal (module docstring)."""
    params = model.params
    assert params.repeat_correct is not None and params.repeat_wrong is not None
    plan = model.plan(prompt)
    greedy = greedy_texts(plan)
    alternative = alternative_texts(plan, params.seed, prompt)
    out = []
    for d in range(n):
        keep = repeated(plan, params.repeat_correct, params.repeat_wrong, draw_seed(seed, d), prompt)
        texts = {j: text for j, text in greedy.items() if keep[j]}
        texts |= {j: text for j, text in alternative.items() if not keep[j]}
        out.append(model.respond(plan, prompt, budget, texts))
    return out


def sample(
    model: SimulatedModel,
    prompts: Sequence[str],
    budgets: Sequence[int],
    seeds: Sequence[int],
    settings: DrawSettings,
) -> list[list[GenerationRecord]]:
    """``settings.n`` draws per prompt, in order (module docstring)."""
    if not len(prompts) == len(budgets) == len(seeds):
        raise ValueError(f"{len(prompts)} prompts, {len(budgets)} budgets and {len(seeds)} seeds")
    out: list[list[GenerationRecord]] = []
    for prompt, budget, seed in zip(prompts, budgets, seeds, strict=True):
        if model.params.repeat_correct is not None:
            cap = model.spec.generation_budget(budget)
            out.append(planted_draws(model, prompt, cap, seed, settings.n))
            continue
        draws = []
        for d in range(settings.n):
            params = dataclasses.replace(model.params, seed=draw_seed(seed, d))
            draws.extend(dataclasses.replace(model, params=params).generate([prompt], [budget]))
        out.append(draws)
    return out
