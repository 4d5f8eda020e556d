"""A simulated reasoning model's ``<think>`` trace: its text, its planted length and where the budget cuts it
(docs/simulation.md §1, §8).

**Length.** A trace's length ``L`` is the number of tokens the scoring stage counts as reasoning
(``num_reasoning_tokens``: every token before the final content, docs/reasoning.md §2), so from ``<think>``
through ``</think>``: the two tag lines (:data:`TRACE_TAGS` = 17 tokens) and a body of ``L − 17``. The
body's length is drawn as

    X = L − 17 = ⌊Y + U⌋,  Y ~ Gamma(mean m, sd σ),  U ~ Uniform[0, 1),  m = reasoning_tokens − 17

(``σ = reasoning_tokens_sd``; ``σ = 0``: every trace has ``reasoning_tokens`` tokens). ``E⌊y + U⌋ = y``
for every ``y``, so ``E[L] = reasoning_tokens`` exactly, and the distribution function is exact too:

    P(X ≤ x) = P(Y + U < x + 1) = G(x + 1) − G(x),  G(t) = ∫₀ᵗ F(s) ds = t·F_a(t) − m·F_{a+1}(t)

with ``F_a`` the gamma distribution function of shape ``a = (m/σ)²`` and scale ``σ²/m``.

**Cut inside the thinking.** A share ``reasoning_truncation_rate`` of traces never end (the model keeps
thinking until its budget runs out); the others end after ``L`` tokens, and one with ``L ≥ B`` (the budget)
leaves no token for the answer. Either is cut inside its reasoning: ``finish_reason = length``, every token
reasoning, status ``truncated``, no answer units. The draws are the response's own (never its atoms'), so
whether a trace is cut does not depend on the answer's correctness.
"""

from __future__ import annotations

import math

import numpy as np

from saltbench.inference.simulated.params import TRACE_TAGS, SimulationParams

THINK_START = "<think>\n"
THINK_END = "\n</think>"
TRACE_BODY = "I must print '********' on its own line before and after the answer. "
"""How a trace's body opens: it quotes the fence, as real reasoning models do (docs/reasoning.md §1)."""
TRACE_FILLER = "Let me check each part once more. "


def trace_text(length: int, *, closed: bool = True) -> str:
    """A trace of ``length`` tokens (characters): ``<think>``, the body (:data:`TRACE_BODY`, then
    :data:`TRACE_FILLER` repeated, cut to fit) and, when ``closed``, ``</think>`` (at least
    :data:`TRACE_TAGS` tokens); an open trace is the first ``length`` tokens of one that never ends."""
    if closed and length < TRACE_TAGS:
        raise ValueError(f"a closed trace has at least {TRACE_TAGS} tokens, not {length}")
    body = length - TRACE_TAGS if closed else length
    text = THINK_START + TRACE_BODY + TRACE_FILLER * (max(body - len(TRACE_BODY), 0) // len(TRACE_FILLER) + 1)
    return text[: len(THINK_START) + body] + THINK_END if closed else text[:length]


def draw_trace_length(params: SimulationParams, rng: np.random.Generator) -> int | None:
    """The length of one response's trace (module docstring), ``None`` for a trace that never ends. Always
    takes two uniforms from ``rng``, then a gamma draw when ``reasoning_tokens_sd > 0``."""
    endless, rounding = rng.random(2)
    if endless < params.reasoning_truncation_rate:
        return None
    mean, sd = params.reasoning_tokens - TRACE_TAGS, params.reasoning_tokens_sd
    if sd == 0:
        return params.reasoning_tokens
    body = rng.standard_gamma((mean / sd) ** 2) * sd**2 / mean
    return TRACE_TAGS + math.floor(body + rounding)


def trace_length_cdf(params: SimulationParams, lengths: np.ndarray) -> np.ndarray:
    """``P(L ≤ l)`` of an ending trace for each of ``lengths`` (module docstring; without the traces that
    never end)."""
    from scipy.special import gammainc

    x = np.asarray(lengths, np.float64) - TRACE_TAGS
    mean, sd = float(params.reasoning_tokens - TRACE_TAGS), params.reasoning_tokens_sd
    if sd == 0:
        return (x >= mean).astype(np.float64)
    shape, scale = (mean / sd) ** 2, sd**2 / mean

    def integral(t: np.ndarray) -> np.ndarray:  # G(t) = ∫₀ᵗ F(s) ds
        t = np.maximum(t, 0.0)
        return t * gammainc(shape, t / scale) - mean * gammainc(shape + 1, t / scale)

    return np.clip(integral(np.floor(x) + 1) - integral(np.floor(x)), 0.0, 1.0)


def planted_thinking(params: SimulationParams, budget: int) -> tuple[float, float]:
    """Under a budget of ``budget`` tokens: the share of traces cut inside the thinking
    (``r + (1 − r)·P(L ≥ B)``, ``r = reasoning_truncation_rate``) and the mean length of the others
    (``E[L | L < B]``; NaN when none ends before the budget)."""
    r = params.reasoning_truncation_rate
    lengths = np.arange(TRACE_TAGS, max(budget, TRACE_TAGS))  # the lengths that end before the budget
    cdf = trace_length_cdf(params, np.concatenate(([TRACE_TAGS - 1], lengths)))
    pmf = np.diff(cdf)
    ended = float(pmf.sum())
    mean = float(lengths @ pmf / ended) if ended > 0 else float("nan")
    return r + (1 - r) * (1 - ended), mean


__all__ = [
    "THINK_END",
    "THINK_START",
    "TRACE_BODY",
    "TRACE_FILLER",
    "TRACE_TAGS",
    "draw_trace_length",
    "planted_thinking",
    "trace_length_cdf",
    "trace_text",
]
