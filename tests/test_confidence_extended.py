"""The four confidence functions beyond the paper (docs/confidence.md §4.4) against reference
implementations written from their formulas, one token at a time in plain Python."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.confidence import (
    CONFIDENCE_FUNCTIONS,
    EXTENDED_FUNCTIONS,
    PAD_LOGPROB,
    RENYI_ALPHA,
    extended_confidences,
    token_distributions,
    token_signals,
)
from saltbench.confidence._extended import BOOST_EPSILON, BOOST_JUMP
from saltbench.stages.scoring import confidence_columns

TOP_K = 20


def reference_topk(vector: list[float], top_k: int = TOP_K) -> list[float]:
    """docs/confidence.md §2.1 for one token: the renormalised top-k probabilities, chosen first."""
    chosen, alternatives = vector[0], [x for x in vector[1:] if not math.isnan(x)]
    if math.isnan(chosen):
        return [1.0 / top_k] * top_k
    if chosen < -1000:
        finite = [x for x in alternatives if math.isfinite(x)]
        chosen = min(finite) - 1 if finite else (min(alternatives) - 1 if alternatives else -20.0)
    d = [chosen, *alternatives][:top_k]
    d += [PAD_LOGPROB] * (top_k - len(d))
    top = max(d)
    weights = [math.exp(x - top) for x in d]
    return [w / sum(weights) for w in weights]


def reference_boosted(p: list[float]) -> float:
    """BoostedProb of the chosen token ``p[0]`` (docs/confidence.md §4.4), one rank at a time."""
    ordered = sorted(p, reverse=True)
    cuts = [
        i
        for i in range(len(ordered) - 1)
        if ordered[i] - ordered[i + 1] > BOOST_JUMP * ordered[i]
        and ordered[i] - ordered[i + 1] > BOOST_EPSILON
    ]
    rank = sum(x > p[0] for x in p[1:])
    return sum(ordered[: cuts[-1] + 1]) if cuts and rank <= cuts[-1] else p[0]


def reference_values(p: list[float], k: int) -> dict[str, float]:
    ordered = sorted(p, reverse=True)
    present = [x for x in p if x > 0]
    return {
        "mean_boosted_probability": reference_boosted(p),
        "mean_self_certainty": -math.log(len(present)) - sum(math.log(x) for x in present) / len(present),
        "min_probability": p[0],  # per token; the unit takes the minimum
        "mean_margin": ordered[0] - ordered[1],
        "mean_renyi_negentropy": math.log(k) + math.log(sum(x**RENYI_ALPHA for x in p)) / (RENYI_ALPHA - 1),
        "mean_fisher_rao": 2 / math.pi * math.acos(min(1.0, sum(math.sqrt(x / k) for x in p))),
    }


LOGPROB = st.floats(-30.0, 0.0)
TOKEN = st.tuples(
    st.one_of(LOGPROB, st.just(math.nan), st.just(-9999.0)),
    st.lists(st.one_of(LOGPROB, st.just(math.nan)), min_size=0, max_size=24),
)


def _arrays(tokens: list[tuple[float, list[float]]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(alts) for _, alts in tokens) if tokens else 0
    chosen = np.array([c for c, _ in tokens])
    topk = np.full((len(tokens), width), np.nan)
    for i, (_, alts) in enumerate(tokens):
        topk[i, : len(alts)] = alts
    return chosen, topk


@settings(max_examples=150, deadline=None)
@given(tokens=st.lists(TOKEN, min_size=1, max_size=12), n_units=st.integers(1, 4), data=st.data())
def test_topk_functions_equal_the_reference(tokens, n_units, data) -> None:
    chosen, topk = _arrays(tokens)
    unit = np.array(
        data.draw(st.lists(st.integers(0, n_units - 1), min_size=len(tokens), max_size=len(tokens)))
    )
    got = extended_confidences(
        token_distributions(chosen, topk, None, "topk"),
        np.arange(len(tokens)),
        unit,
        n_units,
        EXTENDED_FUNCTIONS,
    )
    per_token = [reference_values(reference_topk([c, *alts]), TOP_K) for c, alts in tokens]
    for name in got:
        for u in range(n_units):
            values = [per_token[t][name] for t in range(len(tokens)) if unit[t] == u]
            want = (
                (min(values) if name == "min_probability" else sum(values) / len(values))
                if values
                else math.nan
            )
            assert got[name][u] == pytest.approx(want, rel=1e-9, abs=1e-12, nan_ok=True), (name, u)


@settings(max_examples=100, deadline=None)
@given(tokens=st.lists(TOKEN, min_size=1, max_size=12))
def test_topk_distribution_agrees_with_the_paper_signals(tokens) -> None:
    """The chosen column and the entropy are token_signals' ℓ and H: one §2.1, two vectorised routes."""
    chosen, topk = _arrays(tokens)
    d = token_distributions(chosen, topk, None, "topk")
    log_p, entropy = token_signals(chosen, topk)
    np.testing.assert_allclose(np.maximum(d.chosen, math.log(1e-20)), log_p, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(d.entropy, entropy, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.exp(d.logprobs).sum(axis=1), 1.0, rtol=1e-12)


def test_full_flavour_uses_the_models_own_probabilities() -> None:
    chosen = np.log([0.5, 0.2])
    topk = np.log([[0.5, 0.3, 0.1], [0.6, 0.2, 0.1]])
    mask = np.array([[True, False, False], [False, True, False]])  # the chosen token, listed again
    d = token_distributions(chosen, topk, [1.0, 1.2], "full", chosen_in_topk=mask)
    got = extended_confidences(d, np.arange(2), np.zeros(2, dtype=np.intp), 1, EXTENDED_FUNCTIONS[:2])
    assert got["min_probability"][0] == pytest.approx(0.2)
    assert got["mean_margin"][0] == pytest.approx(((0.5 - 0.3) + (0.6 - 0.2)) / 2)
    assert {"topk"} == set(CONFIDENCE_FUNCTIONS["mean_renyi_negentropy"].flavours)


def test_worked_values() -> None:
    """One token with p = (0.5, 0.3, 0.2) renormalised over K = 3 (docs/confidence.md §4.4)."""
    d = token_distributions(np.log([0.5]), np.log([[0.3, 0.2]]), None, "topk", top_k=3)
    got = {k: v[0] for k, v in extended_confidences(d, [0], [0], 1, EXTENDED_FUNCTIONS).items()}
    assert got["min_probability"] == pytest.approx(0.5)
    assert got["mean_margin"] == pytest.approx(0.2)
    renyi = math.log(3) - 2 * math.log(math.sqrt(0.5) + math.sqrt(0.3) + math.sqrt(0.2))
    assert got["mean_renyi_negentropy"] == pytest.approx(renyi) == pytest.approx(0.0350, abs=1e-4)
    fisher = 2 / math.pi * math.acos((math.sqrt(0.5) + math.sqrt(0.3) + math.sqrt(0.2)) / math.sqrt(3))
    assert got["mean_fisher_rao"] == pytest.approx(fisher) == pytest.approx(0.1187, abs=1e-4)
    uniform = token_distributions(np.log([1 / 3]), np.log([[1 / 3, 1 / 3]]), None, "topk", top_k=3)
    flat = extended_confidences(uniform, [0], [0], 1, EXTENDED_FUNCTIONS)
    assert flat["mean_renyi_negentropy"][0] == pytest.approx(0.0, abs=1e-12)
    assert flat["mean_fisher_rao"][0] == pytest.approx(0.0, abs=1e-6)
    assert got["mean_boosted_probability"] == pytest.approx(0.8)  # jumps after ranks 1 and 2: 0.5 + 0.3
    certainty = -math.log(3) - (math.log(0.5) + math.log(0.3) + math.log(0.2)) / 3
    assert got["mean_self_certainty"] == pytest.approx(certainty) == pytest.approx(0.0702, abs=1e-4)
    assert flat["mean_self_certainty"][0] == pytest.approx(0.0, abs=1e-12)
    assert flat["mean_boosted_probability"][0] == pytest.approx(1 / 3)  # no jump: its own probability


def test_the_scoring_path_writes_each_function_in_the_flavours_it_supports() -> None:
    tokens = {
        "chosen": np.log([0.5, 0.4, 0.9]),
        "token_ids": np.array([1, 2, 3]),
        "entropy": np.array([1.0, 1.1, 0.3]),
        "topk": np.log([[0.5, 0.3], [0.4, 0.35], [0.9, 0.05]]),
        "topk_ids": np.array([[1, 7], [2, 8], [3, 9]]),
    }
    names = ("mean_probability", "min_probability", "mean_fisher_rao")
    columns = confidence_columns(
        tokens, np.arange(3), np.array([0, 0, 1]), 2, flavours=("topk", "full"), top_k=20, functions=names
    )
    assert list(columns) == [
        "n_tokens",
        "topk.mean_probability",
        "topk.min_probability",
        "topk.mean_fisher_rao",
        "full.mean_probability",
        "full.min_probability",
    ]
    assert columns["full.min_probability"].tolist() == pytest.approx([0.4, 0.9])
    assert columns["n_tokens"].tolist() == [2, 1]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_tokens=st.integers(1, 16), width=st.integers(2, 20))
def test_boosted_probability_equals_the_boostedprob_package(seed, n_tokens, width) -> None:
    """Ours against the authors' package (boostedprob 0.1.3, its defaults) on shared inputs: whole
    distributions over ``width`` outcomes stored as the top-k flavour (renormalising changes nothing), the
    chosen token anywhere in them (docs/confidence.md §4.4)."""
    torch = pytest.importorskip("torch")
    boostedprob = pytest.importorskip("boostedprob")
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, rng.uniform(0.5, 4.0), (n_tokens, width))
    logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    target = rng.integers(0, width, n_tokens)
    others = np.array([np.delete(row, t) for row, t in zip(logp, target, strict=True)])
    d = token_distributions(logp[np.arange(n_tokens), target], others, None, "topk", top_k=width)
    ours = extended_confidences(
        d,
        np.arange(n_tokens),
        np.arange(n_tokens),
        n_tokens,
        (CONFIDENCE_FUNCTIONS["mean_boosted_probability"],),
    )["mean_boosted_probability"]
    theirs = boostedprob.calculate_boostedprob(torch.tensor(logp).clone(), torch.tensor(target))
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=0, atol=1e-6)


def test_self_certainty_is_the_kl_divergence_from_uniform() -> None:
    """Against torch's KL divergence on whole distributions: KL(U ‖ p) = Σ_j (1/V) ln((1/V) / p_j)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    logits = rng.normal(0.0, 2.0, (30, 20))
    logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    d = token_distributions(logp[:, 0], logp[:, 1:], None, "topk", top_k=20)
    ours = extended_confidences(
        d, np.arange(30), np.arange(30), 30, (CONFIDENCE_FUNCTIONS["mean_self_certainty"],)
    )
    uniform = torch.full((30, 20), 1 / 20, dtype=torch.float64)
    kl = torch.nn.functional.kl_div(torch.tensor(logp), uniform, reduction="none").sum(dim=1)
    np.testing.assert_allclose(ours["mean_self_certainty"], kl.numpy(), rtol=1e-9, atol=1e-12)
