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

Line latent (``line_separation`` set, docs/simulation.md §1): the latent is drawn per line instead,
``s_L ~ N(d_L·[every atom of the line correct], 1)`` with ``d_L = line_separation`` (plus
``cot.separation_shift`` in ``cot``), and every character of the line (its atoms and the separators between
them) gets the probability of ``s_L``: the planted line-level AUROC is ``Φ(d_L/√2)``, and an atom carries its
line's score, so the atom level only sees whether its line is right.

Draws (``repeat_correct`` and ``repeat_wrong`` set, docs/simulation.md §9): a draw is the greedy response
with each atom of the answer repeated with probability ``r_1 = repeat_correct`` when the greedy atom is
correct and ``r_0 = repeat_wrong`` when it is wrong, independently per atom and draw; an atom not repeated
is written as its one alternative (a wrong atom fixed per prompt and atom for a correct greedy atom, the
reference atom for a wrong one). A unit of ``a`` correct and ``b`` wrong atoms is repeated by a draw with
probability ``r_1^a r_0^b``, so its agreement over ``n`` draws is ``Binomial(n, r_1^a r_0^b)/n``.

Second pass (:class:`SecondPassEffect`, docs/simulation.md §10): asked about one unit of its answer, the
model states ``V = min(step·⌊100 σ(shift_v + z)/step + ½⌋, 100)`` with ``z ~ N(d_v·y, 1)`` (``y``: the unit is
correct), a share ``unparsable_rate`` of replies being no number; asked for True/False, its first token puts
``P(True) = σ(shift_t + z')`` with ``z' ~ N(d_t·y, 1)``.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from saltbench.core.blocks import Block, Count, Keywords, OpenUnit, setting

P_FLOOR = 0.05
"""The least probability of a chosen token: with the rest spread over 19 alternatives it stays the most likely
token (``p ≥ (1 − p)/19``), as greedy decoding requires, and the top-k entropy decreases in ``p``."""
STRUCTURE_PROB = 0.999
"""Probability of every token outside the answer's atoms (fences, separators, reasoning, EOS)."""


Rate = Annotated[float, Keywords(minimum=0, maximum=1)]
"""A share in [0, 1]."""
NonNegative = Annotated[float, Keywords(minimum=0)]
TRACE_TAGS = 17
"""Tokens of ``<think>\\n`` and ``\\n</think>``: the shortest trace (docs/simulation.md §8)."""
TraceLength = Annotated[int, Keywords(minimum=TRACE_TAGS)]


@dataclass(frozen=True, kw_only=True)
class CotEffect(Block):
    """What the ``cot`` prompt style changes: ``accuracy_shift`` is added to every atom's logit ``η``,
    ``separation_shift`` to the latent separation ``d``."""

    float_values = True

    accuracy_shift: float = setting(0.5, "Added to every atom's logit in the cot style.")
    separation_shift: float = setting(-0.5, "Added to the latent separation d in the cot style.")


@dataclass(frozen=True, kw_only=True)
class SecondPassEffect(Block):
    """How a simulated model answers second-pass prompts (module docstring; docs/simulation.md §10)."""

    float_values = True

    verbalized_shift: float = setting(0.0, "Intercept of the stated confidence's logit.")
    verbalized_separation: float = setting(
        1.5, "Separation d_v of the stated confidence's latent between correct and wrong units."
    )
    verbalized_step: Annotated[int, Keywords(minimum=1, maximum=100)] = setting(
        5, "The stated confidence is rounded to a multiple of this (0..100)."
    )
    unparsable_rate: Rate = setting(0.05, "Share of verbalized replies that are no number (unparsable).")
    p_true_shift: float = setting(0.0, "Intercept of P(True)'s logit.")
    p_true_separation: float = setting(
        1.0, "Separation d_t of P(True)'s latent between correct and wrong units."
    )

    def verbalized_bounds(self, step_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The latent ``z`` interval ``[lo, hi)`` stated as ``step·j`` for each ``j`` of ``step_index``:
        ``100 σ(shift_v + z)/step + ½ ∈ [j, j + 1)`` (±∞ at the ends; the last value takes all above)."""
        j = np.asarray(step_index, np.float64)
        step = float(self.verbalized_step)
        top = math.floor(100 / step + 0.5)
        with np.errstate(divide="ignore"):
            lo = np.clip((j - 0.5) * step / 100, 0.0, 1.0)
            hi = np.where(j >= top, 1.0, np.clip((j + 0.5) * step / 100, 0.0, 1.0))
            lo_z = np.log(lo) - np.log1p(-lo) - self.verbalized_shift
            hi_z = np.log(hi) - np.log1p(-hi) - self.verbalized_shift
        return lo_z, hi_z


@dataclass(frozen=True, kw_only=True)
class SimulationParams(Block):
    """The parameters of one simulated model (module docstring; docs/simulation.md §2).

    ``accuracy`` maps a task slug to the probability that its first atom is correct in the direct style on a
    clean prefix (``default`` for tasks it does not name; one number is ``{default: number}``).
    ``truncation_rate``: share of responses cut by the token budget inside the answer (``finish_reason =
    length``, no closing fence); ``no_fence_rate``: share answering without fences; ``reasoning_rate``: share
    that write a ``<think>`` trace before the answer (a model with ``reasoning_format: think``), of
    ``reasoning_tokens`` tokens on average with standard deviation ``reasoning_tokens_sd``, counted as the
    scoring stage counts reasoning (``<think>`` through ``</think>``); ``reasoning_truncation_rate``: share of
    traces that never end, cut by the budget inside the thinking
    (:mod:`~saltbench.inference.simulated.thinking`). ``insertion_rate``, ``deletion_rate``,
    ``reorder_rate``: shares of responses whose answer repeats an atom, skips one, or swaps two neighbouring
    lines (:mod:`~saltbench.inference.simulated.shapes`). ``seed``: every response is a function of the seed
    and its prompt (and forced prefix) only.
    """

    float_values = True

    seed: Count = setting(0, "Every response is a function of the seed and its prompt only.")
    accuracy: OpenUnit | Mapping[str, OpenUnit] = setting(
        {"default": 0.85},
        "P(first atom correct) in the direct style: one number, or task slug (or default) -> one.",
    )
    position_effect: float = setting(-1.0, "Logit change from the first atom to the last (k/n).")
    propagation_fraction: float = setting(-1.5, "Logit change per share of wrong atoms before (e_k/(k-1)).")
    propagation_local: float = setting(-1.0, "Logit change after a wrong atom right before.")
    separation: float = setting(1.5, "Latent separation d of correct and wrong atoms' scores.")
    calibration_shift: float = setting(1.0, "Intercept of the token probability's logit.")
    calibration_slope: float = setting(1.0, "Slope of the token probability's logit in the latent score.")
    cot: CotEffect = setting(CotEffect, "What the cot prompt style changes.")
    truncation_rate: Rate = setting(0.0, "Share of responses cut by the token budget inside the answer.")
    no_fence_rate: Rate = setting(0.0, "Share of responses without fences.")
    reasoning_rate: Rate = setting(0.0, "Share of responses with a <think> trace before the answer.")
    reasoning_tokens: TraceLength = setting(
        200, "Mean tokens of a <think> trace, from <think> through </think> (17 are the two tags)."
    )
    reasoning_tokens_sd: NonNegative = setting(
        0.0, "Standard deviation of a trace's tokens (gamma-distributed); 0: every trace has the mean."
    )
    reasoning_truncation_rate: Rate = setting(
        0.0, "Share of <think> traces that never end: the budget cuts them inside the thinking."
    )
    line_separation: float | None = setting(
        None,
        "Latent separation d_L of a line's score (null: one latent per atom). Set: every character of a line "
        "gets the probability of one score drawn per line, N(d_L x [line correct], 1).",
    )
    insertion_rate: Rate = setting(0.0, "Share of responses with one atom written twice.")
    deletion_rate: Rate = setting(0.0, "Share of responses with one atom left out.")
    reorder_rate: Rate = setting(0.0, "Share of responses with two neighbouring lines (or atoms) swapped.")
    repeat_correct: Rate | None = setting(
        None,
        "P(a draw repeats a correct atom of the greedy answer) (docs/simulation.md §9); null: every draw is "
        "an independent rerun of the planted process. Set with repeat_wrong.",
    )
    repeat_wrong: Rate | None = setting(
        None, "P(a draw repeats a wrong atom of the greedy answer); set with repeat_correct."
    )
    second_pass: SecondPassEffect = setting(
        SecondPassEffect, "How it answers second-pass prompts (verbalized confidence, P(True))."
    )

    def __post_init__(self, _keys: tuple[str, ...] | None = None) -> None:
        """``accuracy`` as a plain ``{task: probability}`` of floats (one number: ``{"default": it}``)."""
        table = self.accuracy if isinstance(self.accuracy, Mapping) else {"default": self.accuracy}
        object.__setattr__(self, "accuracy", {str(k): float(v) for k, v in table.items()})

    def problems(self) -> Iterator[str]:
        """What cannot be planted: ``truncation_rate + no_fence_rate`` above 1."""
        if self.truncation_rate + self.no_fence_rate > 1:
            yield "truncation_rate + no_fence_rate exceed 1"
        if self.reasoning_tokens_sd > 0 and self.reasoning_tokens <= TRACE_TAGS:
            yield f"reasoning_tokens_sd > 0 needs reasoning_tokens above {TRACE_TAGS} (the two tags)"
        if (self.repeat_correct is None) != (self.repeat_wrong is None):
            yield "repeat_correct and repeat_wrong are set together (or neither)"

    @property
    def shape_rates(self) -> dict[str, float]:
        """The answer-shape rates by shape (``insertion``, ``deletion``, ``reorder``)."""
        rates = (self.insertion_rate, self.deletion_rate, self.reorder_rate)
        return dict(zip(("insertion", "deletion", "reorder"), rates, strict=True))

    def base_logit(self, task: str, style: str) -> float:
        """``logit(accuracy[task]) + style_shift``: the intercept of ``η`` (module docstring)."""
        table = typing.cast(Mapping[str, float], self.accuracy)  # a mapping since __post_init__
        p = table.get(task, table.get("default", 0.85))
        return math.log(p / (1 - p)) + (self.cot.accuracy_shift if style == "cot" else 0.0)

    def separation_for(self, style: str) -> float:
        """The latent separation ``d`` in ``style``."""
        return self.separation + (self.cot.separation_shift if style == "cot" else 0.0)

    def line_separation_for(self, style: str) -> float | None:
        """The line latent's separation ``d_L`` in ``style`` (``None`` without a line latent)."""
        if self.line_separation is None:
            return None
        return float(self.line_separation) + (self.cot.separation_shift if style == "cot" else 0.0)

    def planted_atom_auroc(self, style: str) -> float:
        """``Φ(d/√2) = P(s_correct > s_wrong)`` for two independent unit-variance normals ``d`` apart."""
        return 0.5 * (1.0 + math.erf(self.separation_for(style) / 2.0))


__all__ = ["P_FLOOR", "STRUCTURE_PROB", "TRACE_TAGS", "CotEffect", "SecondPassEffect", "SimulationParams"]
