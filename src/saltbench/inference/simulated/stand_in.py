"""Simulated stand-ins for a study's roster: the paper configuration's shape without its weights.

:func:`stand_in_registry` gives every model of a configuration a simulated model under the same name, with
the roster's reasoning flags and pairs (docs/simulation.md §6): a reasoning model writes a ``<think>``
trace of ``reasoning_tokens`` tokens before every answer and has 5 % of its answers cut by the budget; every
stand-in repeats an atom in :data:`STAND_IN_SHAPES` ``insertion_rate`` of its answers, leaves one out in
``deletion_rate`` and swaps two neighbouring lines in ``reorder_rate`` (drawn independently), so the scoring
stage's alignment sees answers that do not match the reference one to one.
Each stand-in's accuracy and separation are spread over the roster by its position in it, so tables and
figures see models that differ. :func:`scaled_config` keeps a configuration's tasks, styles, models and
intervention design and scales its sample counts by a fraction, so the analysis half can be measured at
1/64 … 1/2 of the paper's size (``bench/bench_paper_size.py``; docs/performance.md §5).

The simulated tokenizer writes one token per character, so a stand-in's answers have about three times the
tokens of a real model's: the measured cost is an upper bound on the real one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

STAND_IN_SHAPES = {"insertion_rate": 0.1, "deletion_rate": 0.1, "reorder_rate": 0.1}
"""Shares of a stand-in's answers with an atom repeated, one left out, two neighbouring lines (or atoms)
swapped (:mod:`saltbench.inference.simulated.shapes`): about 27 % of answers get at least one."""
STAND_IN_BUDGET = 32768
"""Every stand-in's ``max_new_tokens``: a character per token must not cut answers a real tokenizer fits."""


def stand_in_entry(
    entry: Mapping[str, Any], position: float, *, seed: int, reasoning_tokens: int, datasets: str
) -> dict[str, Any]:
    """The registry entry of one stand-in: ``entry`` is the real model's (its ``reasoning``, ``pair_with``
    are kept), ``position`` in [0, 1] its place in the roster (accuracy 0.75 → 0.97 and separation
    0.8 → 2.0 along it)."""
    reasoning = bool(entry.get("reasoning", False))
    parameters: dict[str, Any] = {
        "seed": seed,
        "accuracy": round(0.75 + 0.22 * position, 4),
        "separation": round(0.8 + 1.2 * position, 4),
        **STAND_IN_SHAPES,
    }
    if reasoning:
        parameters |= {"reasoning_rate": 1.0, "reasoning_tokens": reasoning_tokens, "truncation_rate": 0.05}
    out: dict[str, Any] = {
        "source": {"kind": "simulated", "datasets": datasets, "parameters": parameters},
        "backend": "simulated",
        "chat_template": "none",
        "reasoning": reasoning,
        "max_new_tokens": STAND_IN_BUDGET,
        "resources": {"gpus": 0, "gpu_model": None, "mem_mb": 2000, "runtime_min": 60, "cpus": 1},
    }
    if reasoning:
        out["reasoning_format"] = "think"
    if entry.get("pair_with"):
        out["pair_with"] = entry["pair_with"]
    return out


def stand_in_registry(
    registry: Mapping[str, Mapping[str, Any]],
    names: Sequence[str],
    *,
    reasoning_tokens: int = 2000,
    datasets: str = "data/datasets",
) -> dict[str, Any]:
    """A model registry (the ``models:`` document of docs/configuration.md) with a stand-in for each of
    ``names``, taken from the raw entries of ``registry``; a pair whose partner is not in ``names`` is
    dropped."""
    missing = [n for n in names if n not in registry]
    if missing:
        raise ValueError(f"models not in the registry: {missing}")
    last = max(len(names) - 1, 1)
    models = {
        name: stand_in_entry(
            registry[name],
            i / last,
            seed=1000 + i,
            reasoning_tokens=reasoning_tokens,
            datasets=datasets,
        )
        for i, name in enumerate(names)
    }
    for entry in models.values():
        if entry.get("pair_with") not in models:
            entry.pop("pair_with", None)
    return {"models": models}


def scaled_config(
    config: Mapping[str, Any],
    fraction: float,
    registry_path: str,
    models: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``config`` with its sample counts (``datasets.n_samples``, ``interventions.samples_per_task``) scaled
    by ``fraction`` (rounded up, at least 2), its models from ``registry_path`` — only ``models`` of its
    roster when given (then interventions on those of its intervention models among them) — and one
    inference job per model."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    if models is not None and set(models) - set(config["models"]):
        raise ValueError(f"models not in the configuration: {sorted(set(models) - set(config['models']))}")

    def scale(n: int) -> int:
        return max(2, math.ceil(n * fraction))

    out = dict(config)
    datasets = dict(out["datasets"])
    counts = datasets["n_samples"]
    datasets["n_samples"] = (
        {task: scale(n) for task, n in counts.items()} if isinstance(counts, Mapping) else scale(counts)
    )
    out["datasets"] = datasets
    out["model_registry"] = registry_path
    if models is not None:
        out["models"] = list(models)
    out["inference"] = {**out.get("inference", {}), "jobs": "per_model"}
    if out.get("interventions", {}).get("enabled"):
        interventions = dict(out["interventions"])
        interventions["samples_per_task"] = scale(interventions["samples_per_task"])
        interventions["shard_size"] = interventions["samples_per_task"]
        if models is not None:
            interventions["models"] = [m for m in interventions.get("models") or () if m in models]
            interventions["enabled"] = bool(interventions["models"])
        out["interventions"] = interventions
    out["training"] = {"enabled": False}
    return out


__all__ = ["STAND_IN_BUDGET", "STAND_IN_SHAPES", "scaled_config", "stand_in_entry", "stand_in_registry"]
