"""The declared generative model of a simulated model: its parameters and the probabilities they plant.

A simulated model (docs/simulation.md) answers every prompt with the reference answer, each atom replaced by
a wrong one with a planted probability, and gives every token a log-probability whose relation to the atom's
correctness is planted too. Atom ``k`` of an answer of ``n`` atoms (``1 ≤ k ≤ n``) is correct with

    P(correct_k) = σ(η_k),  η_k = logit(accuracy[task]) + style_shift + position_effect · k/n
                              + propagation_fraction · e_k/(k−1) + propagation_local · w_{k−1}

where ``e_k`` is the number of wrong atoms among ``1..k−1`` (the model's own errors, or the corrupted atoms
an intervention forced; ``e_1/0 = 0``), ``w_{k−1}`` is 1 when atom ``k−1`` is wrong, and ``style_shift`` is
``cot.accuracy_shift`` in the ``cot`` style (0 in ``direct``). These are exactly the terms of the
interventions' regression (``corrupted_fraction``, ``placement_local`` against ``distant``,
``position_fraction``; docs/interventions.md), so its coefficients are planted.

Confidence: each atom draws a latent score ``s ~ N(d·correct, 1)`` with ``d = separation`` (plus
``cot.separation_shift`` in ``cot``), and every token of the atom gets the probability

    p = P_FLOOR + (1 − P_FLOOR) · σ(calibration_shift + calibration_slope · s)

as its chosen (greedy, most likely) token, the rest ``(1 − p)`` spread evenly over 19 alternatives. Every
confidence function of docs/confidence.md except ``log_probability_sum`` (which also counts the atom's
tokens) is a monotone function of ``s`` at atom level, so the planted atom-level AUROC is
``Φ(d / √2)`` (correct above incorrect), the same for all of them and for both flavours.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

P_FLOOR = 0.05
"""The least probability of a chosen token: with the rest spread over 19 alternatives it stays the most likely
token (``p ≥ (1 − p)/19``), as greedy decoding requires, and the top-k entropy decreases in ``p``."""
STRUCTURE_PROB = 0.999
"""Probability of every token outside the answer's atoms (fences, separators, reasoning, EOS)."""


@dataclass(frozen=True)
class CotEffect:
    """What the ``cot`` prompt style changes: ``accuracy_shift`` is added to every atom's logit ``η``,
    ``separation_shift`` to the latent separation ``d``."""

    accuracy_shift: float = 0.5
    separation_shift: float = -0.5


@dataclass(frozen=True)
class SimulationParams:
    """The parameters of one simulated model (module docstring; docs/simulation.md §2).

    ``accuracy`` maps a task slug to the probability that its first atom is correct in the direct style on a
    clean prefix (``default`` for tasks it does not name). ``truncation_rate``: share of responses cut by
    the token budget inside the answer (``finish_reason = length``, no closing fence); ``no_fence_rate``:
    share answering without fences; ``reasoning_rate``: share that write a ``<think>`` trace of
    ``reasoning_tokens`` tokens before the answer (a model with ``reasoning_format: think``). ``seed``:
    every response is a function of the seed and its prompt (and forced prefix) only.
    """

    seed: int = 0
    accuracy: Mapping[str, float] = field(default_factory=lambda: {"default": 0.85})
    position_effect: float = -1.0
    propagation_fraction: float = -1.5
    propagation_local: float = -1.0
    separation: float = 1.5
    calibration_shift: float = 1.0
    calibration_slope: float = 1.0
    cot: CotEffect = CotEffect()
    truncation_rate: float = 0.0
    no_fence_rate: float = 0.0
    reasoning_rate: float = 0.0
    reasoning_tokens: int = 200

    def base_logit(self, task: str, style: str) -> float:
        """``logit(accuracy[task]) + style_shift``: the intercept of ``η`` (module docstring)."""
        p = self.accuracy.get(task, self.accuracy.get("default", 0.85))
        return math.log(p / (1 - p)) + (self.cot.accuracy_shift if style == "cot" else 0.0)

    def separation_for(self, style: str) -> float:
        """The latent separation ``d`` in ``style``."""
        return self.separation + (self.cot.separation_shift if style == "cot" else 0.0)

    def planted_atom_auroc(self, style: str) -> float:
        """``Φ(d/√2) = P(s_correct > s_wrong)`` for two independent unit-variance normals ``d`` apart."""
        return 0.5 * (1.0 + math.erf(self.separation_for(style) / 2.0))


_RATES = ("truncation_rate", "no_fence_rate", "reasoning_rate")


def parse_simulation_params(raw: Mapping[str, Any] | None, where: str = "parameters") -> SimulationParams:
    """:class:`SimulationParams` from a registry entry's ``source.parameters``; a ``ValueError`` names an
    unknown key or a bad value (``where`` prefixes the key)."""
    raw = dict(raw or {})
    known = {f.name for f in fields(SimulationParams)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; allowed: {sorted(known)}")
    values: dict[str, Any] = {}
    for name, value in raw.items():
        key = f"{where}.{name}"
        if name == "accuracy":
            table = {"default": float(value)} if _number(value) else value
            if not isinstance(table, Mapping) or not all(_number(v) and 0 < v < 1 for v in table.values()):
                raise ValueError(
                    f"{key}: expected a probability in (0, 1) or a mapping task -> one, got {value!r}"
                )
            values[name] = {str(k): float(v) for k, v in table.items()}
        elif name == "cot":
            if not isinstance(value, Mapping) or set(value) - {"accuracy_shift", "separation_shift"}:
                raise ValueError(
                    f"{key}: expected a mapping with accuracy_shift and/or separation_shift, got {value!r}"
                )
            if not all(_number(v) for v in value.values()):
                raise ValueError(f"{key}: expected numbers, got {value!r}")
            values[name] = CotEffect(**{k: float(v) for k, v in value.items()})
        elif name in ("seed", "reasoning_tokens"):
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "seed" else 1):
                raise ValueError(f"{key}: expected an integer >= {0 if name == 'seed' else 1}, got {value!r}")
            values[name] = value
        elif name in _RATES:
            if not (_number(value) and 0 <= value <= 1):
                raise ValueError(f"{key}: expected a share in [0, 1], got {value!r}")
            values[name] = float(value)
        else:
            if not _number(value):
                raise ValueError(f"{key}: expected a number, got {value!r}")
            values[name] = float(value)
    if sum(values.get(r, 0.0) for r in ("truncation_rate", "no_fence_rate")) > 1:
        raise ValueError(f"{where}: truncation_rate + no_fence_rate exceed 1")
    return SimulationParams(**values)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


__all__ = ["P_FLOOR", "STRUCTURE_PROB", "CotEffect", "SimulationParams", "parse_simulation_params"]
