"""Conformance of a confidence function (docs/extending.md §4).

Checks, in order (:data:`CONFIDENCE_CHECKS`), on seeded random top-20 log-probabilities (absent
alternatives, sentinels and tokens without log-probabilities included) in every flavour the function
supports:

* ``declared``: a name matching the naming rule, ``higher_is_confident`` and ``needs_calibration`` booleans,
  a formula, flavours among ``topk``/``full``, a known reduction and a callable ``token_score``;
* ``finite on valid input``: one finite value per token;
* ``deterministic``: the same values on a second call;
* ``one value per token``: a token's value does not depend on the other tokens of the block (the values of
  a shuffled block are the shuffled values), so units may be scored in any order and any grouping;
* ``invariant to unit order``: the units' values do not depend on the order of their (token, unit) pairs;
* ``NaN on an empty unit``: a unit without tokens gets NaN, not an exception.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from saltbench.confidence import (
    FLAVOURS,
    NAME_PATTERN,
    PAPER_FUNCTIONS,
    REDUCTIONS,
    ConfidenceSpec,
    TokenDistributions,
    extended_confidences,
    token_distributions,
)
from saltbench.conformance.common import Failure, raise_first, run_checks

CONFIDENCE_CHECKS: tuple[str, ...] = (
    "declared",
    "finite on valid input",
    "deterministic",
    "one value per token",
    "invariant to unit order",
    "NaN on an empty unit",
)
"""The names of the confidence-function checks, in the order they run."""

_TOKENS = 64


def sample_distributions(flavour: str, seed: int = 0, n: int = _TOKENS) -> TokenDistributions:
    """``n`` tokens of seeded, valid stored log-probabilities (top-20, a chosen token outside the top-20,
    absent alternatives, a sentinel, a token without log-probabilities) as the flavour's distributions."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 3.0, size=(n, 200))
    logprobs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    top = -np.sort(-logprobs, axis=1)[:, :20]
    chosen = top[:, 0].copy()
    chosen[1] = logprobs[1].min()  # not in the top-20
    top[2, 10:] = np.nan  # fewer alternatives returned
    chosen[3] = -9999.0  # a sentinel
    chosen[4] = np.nan  # no log-probabilities: uniform (topk)
    mask = np.zeros_like(top, dtype=bool)
    mask[:, 0] = chosen == top[:, 0]
    p = np.exp(logprobs)
    entropy = -(p * logprobs).sum(axis=1)
    if flavour == "full":
        chosen[3], chosen[4] = top[3, 0], top[4, 0]  # the full flavour needs every chosen value
        mask[3:5, 0] = True
    return token_distributions(chosen, top, entropy, flavour, chosen_in_topk=mask)  # type: ignore[arg-type]


def confidence_failures(spec: ConfidenceSpec, *, seed: int = 0) -> list[Failure]:
    """Every failed check of ``spec`` (module docstring)."""

    def declared() -> str | None:
        problems = []
        if not isinstance(spec.name, str) or not NAME_PATTERN.fullmatch(spec.name):
            problems.append(f"name {spec.name!r} does not match {NAME_PATTERN.pattern}")
        for key in ("higher_is_confident", "needs_calibration"):
            if not isinstance(getattr(spec, key), bool):
                problems.append(f"{key} must be True or False (the direction), got {getattr(spec, key)!r}")
        if not spec.formula:
            problems.append("no formula")
        if not spec.flavours or not set(spec.flavours) <= set(FLAVOURS):
            problems.append(f"flavours {spec.flavours!r} must be a non-empty subset of {FLAVOURS}")
        if spec.reduce not in REDUCTIONS:
            problems.append(f"reduce {spec.reduce!r} is not one of {REDUCTIONS}")
        if not callable(spec.token_score) and spec not in PAPER_FUNCTIONS:
            problems.append("token_score is not callable")
        return "; ".join(problems) or None

    def per_flavour(check: Callable[[TokenDistributions], str | None]) -> Callable[[], str | None]:
        def run() -> str | None:
            for flavour in spec.flavours:
                problem = check(sample_distributions(flavour, seed))
                if problem:
                    return f"{flavour} flavour: {problem}"
            return None

        return run

    def scores(d: TokenDistributions) -> np.ndarray:
        assert spec.token_score is not None
        return np.asarray(spec.token_score(d), dtype=np.float64)

    def finite(d: TokenDistributions) -> str | None:
        values = scores(d)
        if values.shape != (d.logprobs.shape[0],):
            return f"token_score returned shape {values.shape} for {d.logprobs.shape[0]} tokens"
        bad = np.flatnonzero(~np.isfinite(values))
        return f"token {bad[0]} has value {float(values[bad[0]])!r}" if bad.size else None

    def deterministic(d: TokenDistributions) -> str | None:
        return (
            None
            if np.array_equal(scores(d), scores(d), equal_nan=True)
            else "two calls give different values"
        )

    def per_token(d: TokenDistributions) -> str | None:
        order = np.random.default_rng(seed + 1).permutation(d.logprobs.shape[0])
        shuffled = TokenDistributions(d.flavour, d.logprobs[order], d.entropy[order])
        if not np.allclose(scores(shuffled), scores(d)[order], rtol=1e-12, atol=1e-12, equal_nan=True):
            return "a token's value changes when the other tokens of the block are reordered"
        return None

    def unit_order(d: TokenDistributions) -> str | None:
        n = d.logprobs.shape[0]
        rng = np.random.default_rng(seed + 2)
        unit = np.asarray(rng.integers(0, 8, size=(n,)), dtype=np.intp)
        tokens = np.arange(n)
        base = extended_confidences(d, tokens, unit, 8, (spec,))[spec.name]
        order: np.ndarray = rng.permutation(n)
        moved = extended_confidences(d, tokens[order], unit[order], 8, (spec,))[spec.name]
        return (
            None
            if np.allclose(base, moved, rtol=1e-12, atol=1e-12, equal_nan=True)
            else "values depend on pair order"
        )

    def empty_unit(d: TokenDistributions) -> str | None:
        values = extended_confidences(d, np.arange(3), np.zeros(3, dtype=np.intp), 2, (spec,))[spec.name]
        return None if np.isnan(values[1]) else f"a unit without tokens got {values[1]!r}"

    checks: list[tuple[str, Callable[[], str | None]]] = [(CONFIDENCE_CHECKS[0], declared)]
    if declared() is None and spec.token_score is not None:
        checks += [
            (CONFIDENCE_CHECKS[1], per_flavour(finite)),
            (CONFIDENCE_CHECKS[2], per_flavour(deterministic)),
            (CONFIDENCE_CHECKS[3], per_flavour(per_token)),
            (CONFIDENCE_CHECKS[4], per_flavour(unit_order)),
            (CONFIDENCE_CHECKS[5], per_flavour(empty_unit)),
        ]
    return run_checks(checks)


def check_confidence_function(spec: ConfidenceSpec, *, seed: int = 0) -> None:
    """Raise :class:`~saltbench.conformance.ConformanceError` naming the first failed check of ``spec``.

    The paper's nine have no ``token_score`` (they are computed from unit summaries) and are checked by the
    test suite against reference implementations instead; here they pass ``declared`` only.

    >>> from saltbench.confidence import CONFIDENCE_FUNCTIONS
    >>> check_confidence_function(CONFIDENCE_FUNCTIONS["mean_margin"])
    """
    if not isinstance(spec, ConfidenceSpec):
        raise_first(
            f"confidence function {spec!r}",
            [Failure("declared", f"not a ConfidenceSpec: {type(spec).__name__}")],
        )
    raise_first(f"confidence function {spec.name!r}", confidence_failures(spec, seed=seed))


__all__ = ["CONFIDENCE_CHECKS", "check_confidence_function", "confidence_failures", "sample_distributions"]
