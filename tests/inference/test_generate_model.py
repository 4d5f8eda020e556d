"""Greedy generation with log-probabilities on the real SmolLM2-135M-Instruct (CPU, float32)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from saltbench.inference import (
    encode_prompt,
    eos_token_ids,
    frame_to_records,
    generate,
    greedy_continue_many,
    records_to_frame,
    render_prompts,
    teacher_force,
)

pytestmark = pytest.mark.model

INSTRUCTIONS = [
    "What is 2+2?",
    "Translate 'cat' to French. Answer in one word.",
    "Write the word hello five times separated by spaces.",
]
MAX_NEW = 16


@pytest.fixture(scope="module")
def prompts(smollm2):
    _, tokenizer = smollm2
    return render_prompts(tokenizer, INSTRUCTIONS)


@pytest.fixture(scope="module")
def batched(smollm2, prompts):
    model, tokenizer = smollm2
    return generate(model, tokenizer, prompts, max_new_tokens=MAX_NEW, batch_size=3, progress=False)


def test_rendered_prompt(prompts):
    assert prompts[0] == (
        "<|im_start|>system\nYou are a helpful AI assistant.<|im_end|>\n"
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
    )


def test_batched_equals_single(smollm2, prompts, batched):
    model, tokenizer = smollm2
    single = generate(model, tokenizer, prompts, max_new_tokens=MAX_NEW, batch_size=1, progress=False)
    for b, s in zip(batched, single):
        assert b.token_ids.tolist() == s.token_ids.tolist()
        assert (b.text, b.finish_reason, b.num_prompt_tokens) == (
            s.text,
            s.finish_reason,
            s.num_prompt_tokens,
        )
        np.testing.assert_allclose(b.chosen_logprobs, s.chosen_logprobs, atol=1e-4)
        np.testing.assert_allclose(b.entropy, s.entropy, atol=1e-4)


def test_record_invariants(smollm2, prompts, batched):
    model, tokenizer = smollm2
    eos = set(eos_token_ids(model, tokenizer))
    assert eos == {2}
    vocab = model.config.vocab_size
    assert {r.finish_reason for r in batched} == {"eos", "length"}  # the prompts cover both endings
    for prompt, r in zip(prompts, batched):
        n = r.num_generated_tokens
        assert r.num_prompt_tokens == len(encode_prompt(tokenizer, prompt))
        assert r.error is None and len(r.token_texts) == n and r.topk_ids.shape == (n, 20)
        # text and offsets
        assert r.text == tokenizer.decode(
            r.token_ids, skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        bounds = [*r.token_offsets.tolist(), len(r.text)]
        assert [r.text[bounds[i] : bounds[i + 1]] for i in range(n)] == list(r.token_texts)
        # stopping
        if r.finish_reason == "eos":
            assert int(r.token_ids[-1]) in eos and r.token_texts[-1] == "" and n <= MAX_NEW
            assert not eos & set(r.token_ids[:-1].tolist())
        else:
            assert n == MAX_NEW and not eos & set(r.token_ids.tolist())
        # top-k: sorted, greedy token first, chosen present whenever it ranks within the top 20
        assert np.all(np.diff(r.topk_logprobs, axis=1) <= 0)
        assert np.array_equal(r.topk_ids[:, 0], r.token_ids)
        np.testing.assert_array_equal(r.topk_logprobs[:, 0], r.chosen_logprobs)
        in_top = r.chosen_logprobs >= r.topk_logprobs[:, -1]
        assert all(int(t) in row for t, row, ok in zip(r.token_ids, r.topk_ids, in_top) if ok)
        assert np.all(r.chosen_logprobs <= 0)
        # entropy in [0, log V]
        assert np.all(r.entropy >= 0) and np.all(r.entropy <= math.log(vocab) + 1e-4)
    assert batched[1].text.strip() != "" and batched[0].token_texts[0] != ""


def test_chosen_logprobs_equal_teacher_forcing(smollm2, prompts, batched):
    model, tokenizer = smollm2
    for prompt, r in zip(prompts, batched):
        forced = teacher_force(model, tokenizer, prompt, r.token_ids)
        assert forced.token_ids.tolist() == r.token_ids.tolist()
        np.testing.assert_allclose(forced.chosen_logprobs, r.chosen_logprobs, atol=1e-4)
        np.testing.assert_allclose(forced.topk_logprobs, r.topk_logprobs, atol=1e-4)
        np.testing.assert_allclose(forced.entropy, r.entropy, atol=1e-4)


def test_prompt_too_long_gives_error_record(smollm2, prompts):
    model, tokenizer = smollm2
    lengths = [len(encode_prompt(tokenizer, p)) for p in prompts]
    limit = min(lengths) + 2  # only the shortest prompt fits with 2 new tokens
    records = generate(model, tokenizer, prompts, max_new_tokens=2, max_context=limit, progress=False)
    shortest = lengths.index(min(lengths))
    for i, r in enumerate(records):
        if i == shortest:
            assert r.error is None and r.num_generated_tokens >= 1
        else:
            assert r.finish_reason == "error" and r.num_generated_tokens == 0 and r.text == ""
            assert f"prompt has {lengths[i]} tokens" in r.error and r.num_prompt_tokens == lengths[i]


def test_frame_round_trip(batched, tmp_path):
    frame = records_to_frame(batched, {"sample_id": ["a", "b", "c"]})
    frame.write_parquet(tmp_path / "g.parquet")
    back = frame_to_records(pl.read_parquet(tmp_path / "g.parquet"))
    for a, b in zip(batched, back):
        assert a.token_texts == b.token_texts and a.text == b.text
        np.testing.assert_array_equal(a.topk_logprobs, b.topk_logprobs)
        np.testing.assert_array_equal(a.token_offsets, b.token_offsets)


def test_greedy_continue_many_reuse_equals_no_reuse(smollm2, prompts, batched):
    model, tokenizer = smollm2
    prompt_ids = encode_prompt(tokenizer, prompts[0])
    own = batched[0].token_ids.tolist()
    corrupted = own[:4] + tokenizer(" 5", add_special_tokens=False)["input_ids"]
    prefixes = [own[:3], [], own[:7], corrupted]
    new = 5
    reuse = greedy_continue_many(model, tokenizer, prompt_ids, prefixes, new, reuse_cache=True, batch_size=3)
    fresh = greedy_continue_many(model, tokenizer, prompt_ids, prefixes, new, reuse_cache=False, batch_size=3)
    for prefix, a, b in zip(prefixes, reuse, fresh):
        assert a.prefix.token_ids.tolist() == b.prefix.token_ids.tolist() == prefix
        assert a.generation.token_ids.tolist() == b.generation.token_ids.tolist()
        assert a.generation.text == b.generation.text
        np.testing.assert_allclose(a.prefix.chosen_logprobs, b.prefix.chosen_logprobs, atol=1e-4)
        np.testing.assert_allclose(a.generation.chosen_logprobs, b.generation.chosen_logprobs, atol=1e-4)
        assert a.generation.num_prompt_tokens == len(prompt_ids) + len(prefix)
    # continuing the model's own prefix reproduces its own generation, and prefix scores are its log-probs
    for prefix, c in zip(prefixes[:3], reuse[:3]):
        k = len(prefix)
        assert c.generation.token_ids.tolist() == own[k : k + new]
        np.testing.assert_allclose(c.prefix.chosen_logprobs, batched[0].chosen_logprobs[:k], atol=1e-4)
        np.testing.assert_allclose(
            c.generation.chosen_logprobs, batched[0].chosen_logprobs[k : k + new], atol=1e-4
        )
    assert (
        reuse[3].prefix.chosen_logprobs[4] < reuse[2].prefix.chosen_logprobs[4]
    )  # the greedy token is likelier
