"""Draws of the simulated model (docs/generation.md §7): draw ``d`` of a prompt is the planted process run
again with the draw's seed (:func:`~saltbench.inference.base.draw_seed` of the prompt's seed and ``d``) in
place of the parameters' seed — an independent response of the same model, a function of that seed and the
prompt only. ``temperature`` and ``top_p`` do not change the planted process (a planted sampling signal is
not part of it yet)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from saltbench.inference.base import DrawSettings, draw_seed

if TYPE_CHECKING:
    from saltbench.inference.records import GenerationRecord
    from saltbench.inference.simulated.model import SimulatedModel


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
        draws = []
        for d in range(settings.n):
            params = dataclasses.replace(model.params, seed=draw_seed(seed, d))
            draws.extend(dataclasses.replace(model, params=params).generate([prompt], [budget]))
        out.append(draws)
    return out
