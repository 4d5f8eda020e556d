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
from functools import partial

import numpy as np

from saltbench.confidence import (
    FLAVOURS,
    NAME_PATTERN,
    PAPER_FUNCTIONS,
    REDUCTIONS,
    STAGE_FUNCTIONS,
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


def _declaration_problems(spec: ConfidenceSpec) -> str | None:
    """Check the declared fields of ``spec``: name, direction flags, formula, flavours, reduction and a
    callable ``token_score`` (``None``: all fine, else every problem, joined by ``"; "``)."""
    problems = []
    if not isinstance(spec.name, str) or not NAME_PATTERN.fullmatch(spec.name):
        problems.append(f"name {spec.name!r} does not match {NAME_PATTERN.pattern}")
    for key in ("higher_is_confident", "needs_calibration"):
        if not isinstance(getattr(spec, key), bool):
            problems.append(f"{key} must be True or False (the direction), got {getattr(spec, key)!r}")
    if not spec.formula:
        problems.append("no formula")
    stage = spec in STAGE_FUNCTIONS  # the scoring stage's own: whole units, no token_score, any source
    if not stage and (not spec.flavours or not set(spec.flavours) <= set(FLAVOURS)):
        problems.append(f"flavours {spec.flavours!r} must be a non-empty subset of {FLAVOURS}")
    if spec.reduce not in REDUCTIONS:
        problems.append(f"reduce {spec.reduce!r} is not one of {REDUCTIONS}")
    if not callable(spec.token_score) and spec not in PAPER_FUNCTIONS and not stage:
        problems.append("token_score is not callable")
    return "; ".join(problems) or None


def _per_flavour(
    spec: ConfidenceSpec, seed: int, check: Callable[[TokenDistributions], str | None]
) -> Callable[[], str | None]:
    """A check running ``check`` on the sample distributions of each flavour of ``spec`` in turn: the first
    problem, prefixed with its flavour, or ``None``."""

    def run() -> str | None:
        for flavour in spec.flavours:
            problem = check(sample_distributions(flavour, seed))
            if problem:
                return f"{flavour} flavour: {problem}"
        return None

    return run


def _token_scores(spec: ConfidenceSpec, distributions: TokenDistributions) -> np.ndarray:
    """The values of ``spec.token_score`` on ``distributions``, as float64."""
    assert spec.token_score is not None
    return np.asarray(spec.token_score(distributions), dtype=np.float64)


def _finite_problem(spec: ConfidenceSpec, distributions: TokenDistributions) -> str | None:
    """Check that ``token_score`` gives one finite value per token."""
    values = _token_scores(spec, distributions)
    token_count = distributions.logprobs.shape[0]
    if values.shape != (token_count,):
        return f"token_score returned shape {values.shape} for {token_count} tokens"
    not_finite = np.flatnonzero(~np.isfinite(values))
    return f"token {not_finite[0]} has value {float(values[not_finite[0]])!r}" if not_finite.size else None


def _deterministic_problem(spec: ConfidenceSpec, distributions: TokenDistributions) -> str | None:
    """Check that two calls of ``token_score`` give the same values (NaN equal to NaN)."""
    first, second = _token_scores(spec, distributions), _token_scores(spec, distributions)
    return None if np.array_equal(first, second, equal_nan=True) else "two calls give different values"


def _per_token_problem(spec: ConfidenceSpec, seed: int, distributions: TokenDistributions) -> str | None:
    """Check that the values of a shuffled block (shuffled with ``seed + 1``) are the shuffled values."""
    order = np.random.default_rng(seed + 1).permutation(distributions.logprobs.shape[0])
    shuffled = TokenDistributions(
        distributions.flavour, distributions.logprobs[order], distributions.entropy[order]
    )
    shuffled_values = _token_scores(spec, shuffled)
    expected = _token_scores(spec, distributions)[order]
    if not np.allclose(shuffled_values, expected, rtol=1e-12, atol=1e-12, equal_nan=True):
        return "a token's value changes when the other tokens of the block are reordered"
    return None


def _unit_order_problem(spec: ConfidenceSpec, seed: int, distributions: TokenDistributions) -> str | None:
    """Check that 8 random units' values (units and order drawn with ``seed + 2``) do not depend on the
    order of the (token, unit) pairs."""
    token_count = distributions.logprobs.shape[0]
    random_source = np.random.default_rng(seed + 2)
    units = np.asarray(random_source.integers(0, 8, size=(token_count,)), dtype=np.intp)
    tokens = np.arange(token_count)
    base = extended_confidences(distributions, tokens, units, 8, (spec,))[spec.name]
    order: np.ndarray = random_source.permutation(token_count)
    moved = extended_confidences(distributions, tokens[order], units[order], 8, (spec,))[spec.name]
    if not np.allclose(base, moved, rtol=1e-12, atol=1e-12, equal_nan=True):
        return "values depend on pair order"
    return None


def _empty_unit_problem(spec: ConfidenceSpec, distributions: TokenDistributions) -> str | None:
    """Check that a unit without tokens gets NaN."""
    units = np.zeros(3, dtype=np.intp)
    values = extended_confidences(distributions, np.arange(3), units, 2, (spec,))[spec.name]
    return None if np.isnan(values[1]) else f"a unit without tokens got {values[1]!r}"


def confidence_failures(spec: ConfidenceSpec, *, seed: int = 0) -> list[Failure]:
    """Every failed check of ``spec`` (module docstring)."""
    checks: list[tuple[str, Callable[[], str | None]]] = [
        (CONFIDENCE_CHECKS[0], lambda: _declaration_problems(spec))
    ]
    if _declaration_problems(spec) is None and spec.token_score is not None:
        checks += [
            (CONFIDENCE_CHECKS[1], _per_flavour(spec, seed, partial(_finite_problem, spec))),
            (CONFIDENCE_CHECKS[2], _per_flavour(spec, seed, partial(_deterministic_problem, spec))),
            (CONFIDENCE_CHECKS[3], _per_flavour(spec, seed, partial(_per_token_problem, spec, seed))),
            (CONFIDENCE_CHECKS[4], _per_flavour(spec, seed, partial(_unit_order_problem, spec, seed))),
            (CONFIDENCE_CHECKS[5], _per_flavour(spec, seed, partial(_empty_unit_problem, spec))),
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
