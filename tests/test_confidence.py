"""Confidence functions from token log-probabilities (docs/confidence.md §2–4)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.confidence import (
    CONFIDENCE_FUNCTIONS,
    ConfidenceSpec,
    ranking_scores,
    token_signals,
    unit_confidence,
    unit_confidences,
)
from saltbench.confidence import PAPER_CONFIDENCE_NAMES as CONFIDENCE_NAMES

SIGMA1 = 1 / (1 + math.exp(-1))  # 0.73106


def test_spec_table():
    expected = {
        "mean_probability": (True, False),
        "median_probability": (True, False),
        "max_probability": (True, False),
        "log_probability_sum": (True, True),
        "max_log_probability": (True, True),
        "log_perplexity": (False, True),
        "perplexity": (False, True),
        "max_entropy": (False, True),
        "mean_entropy": (False, True),
    }
    assert list(CONFIDENCE_NAMES) == list(expected)
    for name, (higher, needs) in expected.items():
        spec = CONFIDENCE_FUNCTIONS[name]
        assert isinstance(spec, ConfidenceSpec) and spec.name == name
        assert (spec.higher_is_confident, spec.needs_calibration) == (higher, needs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        CONFIDENCE_FUNCTIONS["new"] = spec  # type: ignore[index]


def test_ranking_scores():
    assert ranking_scores("perplexity", [1, 1.5]).tolist() == [-1, -1.5]
    assert ranking_scores("mean_probability", [0.2]).tolist() == [0.2]
    with pytest.raises(ValueError, match="unknown confidence function 'ppl'; installed: mean_probability, "):
        ranking_scores("ppl", [1.0])


# -- §5.5 worked values ----------------------------------------------------------------------------------


def test_single_token_two_candidates():
    c = unit_confidence([[math.log(0.5), math.log(0.3)]])
    assert c["mean_probability"] == pytest.approx(0.625)
    assert c["median_probability"] == pytest.approx(0.625)
    assert c["max_probability"] == pytest.approx(0.625)
    assert c["log_probability_sum"] == pytest.approx(-0.4700, abs=5e-5)
    assert c["log_probability_sum"] == pytest.approx(math.log(0.625))
    assert c["perplexity"] == pytest.approx(1.6)
    assert c["mean_entropy"] == pytest.approx(0.66156, abs=5e-6)
    assert c["max_entropy"] == c["mean_entropy"]
    assert c["num_tokens"] == 1


def test_two_tokens():
    c = unit_confidence([[0, -1], [-1, -2]])
    for name in ("mean_probability", "median_probability", "max_probability"):
        assert c[name] == pytest.approx(SIGMA1) and round(c[name], 5) == 0.73106
    assert round(c["log_probability_sum"], 5) == -0.62652
    assert round(c["max_log_probability"], 5) == -0.31326
    assert round(c["log_perplexity"], 5) == 0.31326
    assert round(c["perplexity"], 5) == 1.36788
    assert round(c["mean_entropy"], 5) == 0.58220
    assert round(c["max_entropy"], 5) == 0.58220
    assert c["num_tokens"] == 2
    assert set(c) == set(CONFIDENCE_NAMES) | {"num_tokens"}
    for legacy in ("mean_prob", "median_prob", "max_prob", "our_max_prob", "ppl", "our_ppl"):
        assert legacy not in c


@pytest.mark.parametrize("empty", [None, []])
def test_missing_logprobs_are_uniform(empty):
    c = unit_confidence([empty])
    assert c["mean_probability"] == pytest.approx(0.05)
    assert c["perplexity"] == pytest.approx(20.0)
    assert c["mean_entropy"] == pytest.approx(math.log(20))


def test_sentinel_minus_inf():
    c = unit_confidence([[-math.inf, -1, -2]])  # d[0] := -3
    want = math.exp(-3) / (math.exp(-3) + math.exp(-1) + math.exp(-2))
    assert c["mean_probability"] == pytest.approx(want)
    assert round(c["mean_probability"], 4) == 0.0900


def test_sentinel_variants():
    # -9999 is a sentinel too; the repair uses the minimum *finite* alternative (-inf ignored).
    a = unit_confidence([[-9999, -1, -math.inf, -2]])
    b = unit_confidence([[-3, -1, -math.inf, -2]])
    assert a["mean_probability"] == pytest.approx(b["mean_probability"])
    # only non-finite alternatives: min(d[1:]) - 1 = -inf → p = 0 → floored at 1e-20
    c = unit_confidence([[-math.inf, -math.inf]])
    assert c["log_probability_sum"] == pytest.approx(math.log(1e-20))
    # single sentinel entry: -20, alone in the vector → p = 1
    assert unit_confidence([[-math.inf]])["mean_probability"] == 1.0
    # -1000 itself is not a sentinel: p = e^-999 is floored at 1e-20 instead of being repaired to -2
    assert unit_confidence([[-1000.0, -1.0]])["log_probability_sum"] == pytest.approx(math.log(1e-20))
    assert unit_confidence([[-1000.1, -1.0]])["log_probability_sum"] == pytest.approx(-math.log(1 + math.e))


def test_single_entry_vector_gives_probability_one():
    c = unit_confidence([[-7.5]])  # quirk §10.6: renormalised over one entry
    assert c["mean_probability"] == 1.0 and c["perplexity"] == 1.0 and c["mean_entropy"] == 0.0


def test_truncation_to_top_20():
    base = [-0.5] + [-3.0 - i for i in range(19)]
    longer = base + [-0.1] * 6  # entries beyond 20 are ignored (even large ones)
    assert unit_confidence([longer]) == unit_confidence([base])
    short = unit_confidence([[-0.5, -3.0]])  # padding with -1e9 contributes nothing
    assert short["mean_probability"] == pytest.approx(math.exp(-0.5) / (math.exp(-0.5) + math.exp(-3.0)))


def test_full_flavour():
    c = unit_confidence([[math.log(0.5), math.log(0.3)], [math.log(0.2)]], "full", full_entropy=[1.0, 2.0])
    assert c["mean_probability"] == pytest.approx(0.35)  # true probabilities, no renormalisation
    assert c["max_probability"] == pytest.approx(0.5)
    assert c["log_probability_sum"] == pytest.approx(math.log(0.1))
    assert c["mean_entropy"] == pytest.approx(1.5) and c["max_entropy"] == 2.0
    with pytest.raises(ValueError, match="full_entropy is required"):
        unit_confidence([[0.0]], "full")
    with pytest.raises(ValueError, match="needs a log-probability for every token"):
        unit_confidence([None], "full", full_entropy=[1.0])


def test_unit_confidence_validation():
    with pytest.raises(ValueError, match="at least one token, got 0"):
        unit_confidence([])
    with pytest.raises(ValueError, match="flavour must be one of"):
        unit_confidence([[0.0]], "exact")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="top_k must be a positive integer, got 0"):
        unit_confidence([[0.0]], top_k=0)
    with pytest.raises(ValueError, match=r"eps must lie in \(0, 1\), got 1.0"):
        unit_confidence([[0.0]], eps=1.0)


# -- §5.3 example: atoms, lines, generation ---------------------------------------------------------------

PROBS = [0.9, 0.8, 0.905, 0.5, 0.6, 0.7]  # tokens "5", " 4", "\n", "6", " 7", " 8"
ATOMS = ([0, 1, 3, 4, 5], [0, 1, 2, 3, 4], 5)
LINES = ([0, 1, 3, 4, 5], [0, 0, 1, 1, 1], 2)
GENERATION = (list(range(6)), [0] * 6, 1)


def _check_example(log_p):
    h = np.zeros(6)
    atoms = unit_confidences(log_p, h, *ATOMS)
    np.testing.assert_allclose(atoms["mean_probability"], [0.9, 0.8, 0.5, 0.6, 0.7], atol=1e-12)
    lines = unit_confidences(log_p, h, *LINES)
    np.testing.assert_allclose(lines["mean_probability"], [0.85, 0.6], atol=1e-12)
    assert lines["num_tokens"].tolist() == [2, 3]
    gen = unit_confidences(log_p, h, *GENERATION)
    assert gen["mean_probability"][0] == pytest.approx(sum(PROBS) / 6, abs=1e-12)
    # docs/confidence.md §3.4 rounds 0.734166… to .7341
    assert round(float(gen["mean_probability"][0]), 4) == 0.7342
    np.testing.assert_allclose(lines["median_probability"], [0.85, 0.6], atol=1e-12)
    np.testing.assert_allclose(lines["max_probability"], [0.9, 0.7], atol=1e-12)


def test_example_aggregation_layer():
    _check_example(np.log(PROBS))


def test_example_through_renormalised_vectors():
    # [ln p, ln(1 - p)] renormalises to exactly p (padding -1e9 has zero weight).
    p = np.array(PROBS)
    log_p, entropy = token_signals(np.log(p), np.log(1 - p)[:, None])
    np.testing.assert_allclose(np.exp(log_p), p, atol=1e-12)
    np.testing.assert_allclose(entropy, -(p * np.log(p) + (1 - p) * np.log(1 - p)), atol=1e-12)
    _check_example(log_p)


def test_straddling_token_counts_for_both_units():
    # token " 7 8" (index 1) belongs to atoms "7" and "8"
    log_p = np.log([0.9, 0.4, 0.8])
    out = unit_confidences(log_p, np.array([0.1, 0.2, 0.3]), [0, 1, 1, 2], [0, 0, 1, 1], 2)
    np.testing.assert_allclose(out["mean_probability"], [0.65, 0.6])
    np.testing.assert_allclose(out["max_entropy"], [0.2, 0.3])
    assert out["num_tokens"].tolist() == [2, 2]


def test_units_without_tokens_are_nan():
    out = unit_confidences(np.log([0.5, 0.25]), np.zeros(2), [0, 1], [0, 2], 4)
    assert out["num_tokens"].tolist() == [1, 0, 1, 0]
    for name in CONFIDENCE_NAMES:
        assert math.isnan(out[name][1]) and math.isnan(out[name][3])
        assert not math.isnan(out[name][0])
    assert unit_confidences(np.zeros(0), np.zeros(0), [], [], 0)["num_tokens"].size == 0


def test_median_even_and_odd():
    probs = np.array([0.1, 0.4, 0.3, 0.9, 0.2])
    out = unit_confidences(np.log(probs), np.zeros(5), [0, 1, 2, 3, 0, 1, 2], [0, 0, 0, 0, 1, 1, 1], 2)
    np.testing.assert_allclose(out["median_probability"], [0.35, 0.3])


@pytest.mark.parametrize("sizes", [[16, 17, 1, 33, 2], [40, 41], [3] * 10 + [100]])
def test_median_small_and_long_units(sizes):
    rng = np.random.default_rng(len(sizes))
    n_tokens = 50
    log_p = np.log(rng.random(n_tokens) * 0.9 + 0.05)
    unit = np.repeat(np.arange(len(sizes)), sizes)
    tok = rng.integers(0, n_tokens, unit.size)  # tokens reused across units
    perm = rng.permutation(unit.size)  # pairs in arbitrary order
    out = unit_confidences(log_p, np.zeros(n_tokens), tok[perm], unit[perm], len(sizes))
    want = [np.median(np.exp(log_p[tok[unit == u]])) for u in range(len(sizes))]
    np.testing.assert_allclose(out["median_probability"], want, rtol=1e-12)
    want_max = [np.exp(log_p[tok[unit == u]]).max() for u in range(len(sizes))]
    np.testing.assert_allclose(out["max_probability"], want_max, rtol=1e-12)


# -- token_signals array API ------------------------------------------------------------------------------


def test_chosen_in_topk_mask_matches_vllm_vector():
    rng = np.random.default_rng(0)
    top = np.sort(-np.abs(rng.normal(-3, 2, size=(4, 20))), axis=1)[:, ::-1]  # descending top-20, <= 0
    chosen_pos = np.array([0, 5, 19, -1])  # last token: chosen not in the top-20
    chosen = np.where(chosen_pos >= 0, top[np.arange(4), np.maximum(chosen_pos, 0)], -30.0)
    mask = np.zeros_like(top, dtype=bool)
    mask[np.arange(3), chosen_pos[:3]] = True
    log_p, ent = token_signals(chosen, top, chosen_in_topk=mask)
    for t in range(4):
        others = [v for j, v in enumerate(top[t]) if not mask[t, j]]
        single = unit_confidence([[chosen[t], *others]])
        assert log_p[t] == pytest.approx(single["log_probability_sum"], abs=1e-12)
        assert ent[t] == pytest.approx(single["mean_entropy"], abs=1e-12)


def test_nan_gaps_are_compacted():
    a = token_signals([-1.0], [[np.nan, -2.0, np.nan, -3.0]])
    b = token_signals([-1.0], [[-2.0, -3.0]])
    np.testing.assert_allclose(a, b)


def test_token_signals_validation():
    with pytest.raises(ValueError, match=r"topk_logprobs must have shape \(2, K\)"):
        token_signals([0.0, 0.0], [[0.0]])
    with pytest.raises(ValueError, match="chosen_in_topk must have shape"):
        token_signals([0.0], [[0.0, 1.0]], chosen_in_topk=[[True]])
    with pytest.raises(ValueError, match=r"full_entropy must have shape \(1,\)"):
        token_signals([0.0], None, [1.0, 2.0], "full")
    with pytest.raises(ValueError, match="must not contain NaN"):
        token_signals([np.nan], None, [1.0], "full")


def test_unit_confidences_validation():
    with pytest.raises(ValueError, match=r"unit_token_index must lie in \[0, 2\), got 2"):
        unit_confidences(np.zeros(2), np.zeros(2), [2], [0], 1)
    with pytest.raises(ValueError, match=r"unit_ids must lie in \[0, 1\), got 1"):
        unit_confidences(np.zeros(2), np.zeros(2), [0], [1], 1)
    with pytest.raises(ValueError, match="must be integers"):
        unit_confidences(np.zeros(2), np.zeros(2), [0.0], [0], 1)
    with pytest.raises(ValueError, match="equal shape"):
        unit_confidences(np.zeros(2), np.zeros(2), [0, 1], [0], 1)


def _loop_reference(log_p, entropy, tok, unit, n_units):
    out = {name: [math.nan] * n_units for name in CONFIDENCE_NAMES}
    for u in range(n_units):
        members = [t for t, v in zip(tok, unit) if v == u]
        if not members:
            continue
        lp = np.array([log_p[t] for t in members])
        h = np.array([entropy[t] for t in members])
        p = np.exp(lp)
        vals = {
            "mean_probability": p.mean(),
            "median_probability": np.median(p),
            "max_probability": p.max(),
            "log_probability_sum": lp.sum(),
            "max_log_probability": lp.max(),
            "log_perplexity": -lp.mean(),
            "perplexity": math.exp(-lp.mean()),
            "max_entropy": h.max(),
            "mean_entropy": h.mean(),
        }
        for name, v in vals.items():
            out[name][u] = v
    return out


@settings(derandomize=True, max_examples=120, deadline=None)
@given(
    n_tokens=st.integers(1, 15),
    pairs=st.lists(st.tuples(st.integers(0, 14), st.integers(0, 6)), max_size=40),
    seed=st.integers(0, 1000),
)
def test_aggregation_matches_loop(n_tokens, pairs, seed):
    rng = np.random.default_rng(seed)
    log_p = np.log(rng.random(n_tokens) * 0.98 + 0.01)
    entropy = rng.random(n_tokens) * 3
    tok = [t % n_tokens for t, _ in pairs]
    unit = [u for _, u in pairs]
    got = unit_confidences(log_p, entropy, np.array(tok, dtype=int), np.array(unit, dtype=int), 7)
    want = _loop_reference(log_p, entropy, tok, unit, 7)
    for name in CONFIDENCE_NAMES:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-12, err_msg=name)
    perm = rng.permutation(len(tok))
    tok_arr, unit_arr = np.array(tok, dtype=int), np.array(unit, dtype=int)
    shuffled = unit_confidences(log_p, entropy, tok_arr[perm], unit_arr[perm], 7)
    for name in CONFIDENCE_NAMES:
        np.testing.assert_allclose(shuffled[name], got[name], rtol=1e-12, atol=1e-12)


@settings(derandomize=True, max_examples=80, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.lists(st.floats(-50, 0) | st.sampled_from([-math.inf, -5000.0]), min_size=1, max_size=25),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_topk_probabilities_valid_and_match_softmax(vectors):
    c = unit_confidence(vectors)
    assert 0 < c["mean_probability"] <= 1 and 0 <= c["mean_entropy"] <= math.log(20) + 1e-9
    # independent per-vector softmax transcription of §5.4
    ps, hs = [], []
    for v in vectors:
        d = [0.0] * 20 if not v else list(v)
        if d[0] < -1000:
            finite = [x for x in d[1:] if math.isfinite(x)]
            d[0] = min(finite) - 1 if finite else (min(d[1:]) - 1 if len(d) > 1 else -20.0)
        d = (d[:20] + [-1e9] * 20)[:20]
        m = max(d)
        e = [math.exp(x - m) for x in d]
        probs = [x / sum(e) for x in e]
        ps.append(max(probs[0], 1e-20))
        hs.append(-sum(q * math.log(q) for q in probs if q > 0))
    assert c["mean_probability"] == pytest.approx(sum(ps) / len(ps), rel=1e-9, abs=1e-15)
    assert c["mean_entropy"] == pytest.approx(sum(hs) / len(hs), rel=1e-9, abs=1e-12)
    assert c["max_entropy"] == pytest.approx(max(hs), rel=1e-9, abs=1e-12)


def test_full_flavour_missing_entropy_only_blanks_entropy_functions():
    """NaN entropy = not recorded (vLLM): the units holding such a token get NaN entropy functions,
    every log-probability function stays exact; an infinite entropy is still an error."""
    from saltbench.confidence import token_signals, unit_confidences

    log_p, entropy = token_signals(np.log([0.5, 0.25, 0.8]), None, [np.nan, 1.0, 0.5], "full")
    conf = unit_confidences(log_p, entropy, np.array([0, 1, 2]), np.array([0, 0, 1]), 2)
    assert np.isnan(conf["mean_entropy"][0]) and np.isnan(conf["max_entropy"][0])
    assert conf["mean_entropy"][1] == conf["max_entropy"][1] == 0.5
    assert conf["mean_probability"].tolist() == pytest.approx([0.375, 0.8])
    assert conf["log_probability_sum"][0] == pytest.approx(math.log(0.125))
    with pytest.raises(ValueError, match="full_entropy must be finite or NaN"):
        token_signals(np.log([0.5]), None, [np.inf], "full")
