"""Draws (``inference.samples``, docs/generation.md §7): seeded sampled answers, bit for bit reproducible, the
same whatever the batch, and recorded as greedy answers are."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.inference.base import DrawSettings, draw_seed
from saltbench.inference.hf._sampling import row_uniforms, sample_tokens
from saltbench.inference.hf.generation import generate, sample
from saltbench.inference.records import GenerationRecord

PROMPTS = ["Count to five:", "List three colours:"]
SEEDS = [1, 2]
BUDGET = 8
SETTINGS = DrawSettings(3, temperature=1.0, top_p=0.95)


def same(a: GenerationRecord, b: GenerationRecord) -> bool:
    """Bit-identical records: every array and every text."""
    arrays = ("token_ids", "chosen_logprobs", "topk_ids", "topk_logprobs", "entropy", "token_offsets")
    return (
        all(np.array_equal(getattr(a, n), getattr(b, n), equal_nan=True) for n in arrays)
        and a.token_texts == b.token_texts
        and (a.text, a.finish_reason) == (b.text, b.finish_reason)
    )


@pytest.fixture(scope="module")
def drawn(smollm2):
    """Three draws of each prompt, both prompts in one batch (six rows)."""
    model, tokenizer = smollm2
    return sample(
        model, tokenizer, PROMPTS, SEEDS, SETTINGS, max_new_tokens=BUDGET, batch_size=6, progress=False
    )


def test_the_same_seed_gives_the_same_draws_bit_for_bit(smollm2, drawn):
    model, tokenizer = smollm2
    again = sample(
        model, tokenizer, PROMPTS, SEEDS, SETTINGS, max_new_tokens=BUDGET, batch_size=6, progress=False
    )
    assert [len(d) for d in drawn] == [3, 3]
    assert all(same(a, b) for draws, rerun in zip(drawn, again) for a, b in zip(draws, rerun))
    assert len({r.text for draws in drawn for r in draws}) > 2  # the draws differ from each other


def test_a_draw_does_not_depend_on_its_batch(smollm2, drawn):
    """The last prompt alone (three rows, no padding) draws the tokens it drew beside the other; the
    log-probabilities agree to float32 rounding (other matrix shapes, as for greedy)."""
    model, tokenizer = smollm2
    alone = sample(
        model,
        tokenizer,
        PROMPTS[1:],
        SEEDS[1:],
        SETTINGS,
        max_new_tokens=BUDGET,
        batch_size=1,
        progress=False,
    )[0]
    for a, b in zip(drawn[1], alone):
        assert a.text == b.text and np.array_equal(a.token_ids, b.token_ids)
        np.testing.assert_allclose(a.chosen_logprobs, b.chosen_logprobs, atol=1e-4)


def test_another_seed_gives_other_draws(smollm2, drawn):
    model, tokenizer = smollm2
    other = sample(model, tokenizer, PROMPTS[:1], [3], SETTINGS, max_new_tokens=BUDGET, progress=False)[0]
    assert not all(same(a, b) for a, b in zip(drawn[0], other))


def test_a_draw_records_the_model_log_probabilities_as_greedy_does(smollm2, drawn):
    """The chosen log-probability of a drawn token is the model's (temperature 1) and appears in its top-k
    where the token is among the k most likely; a very cold draw is the greedy answer."""
    model, tokenizer = smollm2
    record = drawn[0][0]
    in_top = record.topk_ids == record.token_ids[:, None]
    rows = in_top.any(axis=1)
    np.testing.assert_allclose(record.topk_logprobs[in_top], record.chosen_logprobs[rows], rtol=0, atol=0)
    greedy = generate(model, tokenizer, PROMPTS[:1], max_new_tokens=BUDGET, progress=False)[0]
    cold = sample(
        model,
        tokenizer,
        PROMPTS[:1],
        [9],
        DrawSettings(2, temperature=1e-4),
        max_new_tokens=BUDGET,
        progress=False,
    )[0]
    assert all(np.array_equal(c.token_ids, greedy.token_ids) for c in cold)
    np.testing.assert_allclose(cold[0].chosen_logprobs, greedy.chosen_logprobs, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(
    logits=st.lists(st.floats(-8, 8), min_size=2, max_size=12),
    u=st.floats(0, 1, exclude_max=True),
    top_p=st.floats(0.05, 1.0),
)
def test_a_sampled_token_is_inside_the_nucleus(logits, u, top_p):
    """The token is one whose more likely tokens hold less than ``top_p`` of the mass (the nucleus)."""
    x = torch.tensor([logits], dtype=torch.float64)
    token = int(sample_tokens(x, torch.tensor([u]), 1.0, top_p)[0])
    p = torch.softmax(x[0], -1)
    before = float(p[p > p[token]].sum())
    assert before < top_p + 1e-12


def test_inverse_transform_sampling_follows_the_tempered_distribution():
    x = torch.log(torch.tensor([[0.5, 0.3, 0.2]], dtype=torch.float64)).expand(20000, -1)
    u = row_uniforms([draw_seed(5, d) for d in range(20000)], 1)[:, 0]
    counts = np.bincount(sample_tokens(x, u, 1.0, 1.0).numpy(), minlength=3) / 20000
    np.testing.assert_allclose(counts, [0.5, 0.3, 0.2], atol=0.015)
    hot = np.bincount(sample_tokens(x, u, 1e6, 1.0).numpy(), minlength=3) / 20000
    np.testing.assert_allclose(hot, [1 / 3] * 3, atol=0.015)
    nucleus = np.bincount(sample_tokens(x, u, 1.0, 0.6).numpy(), minlength=3) / 20000
    np.testing.assert_allclose(nucleus, [0.625, 0.375, 0.0], atol=0.015)


def test_a_nucleus_beyond_the_candidates_is_found_by_a_whole_sort(monkeypatch):
    """Rows whose most likely candidates hold less than ``top_p`` are sorted whole: same tokens."""
    from saltbench.inference.hf import _sampling

    logits = torch.randn(64, 50, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    u = row_uniforms(range(64), 1)[:, 0]
    expected = sample_tokens(logits, u, 1.5, 0.9)
    monkeypatch.setattr(_sampling, "NUCLEUS_CANDIDATES", 3)
    assert torch.equal(sample_tokens(logits, u, 1.5, 0.9), expected)


def test_bad_draw_settings_are_refused():
    for bad in ({"n": 0}, {"n": 2, "temperature": 0.0}, {"n": 2, "top_p": 0.0}, {"n": 2, "top_p": 1.5}):
        with pytest.raises(ValueError, match="draws need"):
            DrawSettings(**bad)
