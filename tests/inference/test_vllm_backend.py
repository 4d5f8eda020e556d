"""The vLLM backend against the transformers one, on the real SmolLM2-135M-Instruct (CPU, float32).

Both engines get the same token ids (our chat rendering and encoding); the tolerances are the ones
the backend promises: identical greedy tokens on the compared steps, chosen log-probabilities within
1e-3, top-20 id sets equal wherever the 20th and 21st log-probabilities differ by more than 1e-4.
"""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pytest

from saltbench.inference import GenerationRecord, records_to_frame, render_prompts
from saltbench.tasks import get_task

pytestmark = [pytest.mark.model, pytest.mark.vllm]

BUDGET = 40


@pytest.fixture(scope="module")
def dna_rows() -> pl.DataFrame:
    return get_task("dna").generate(4, seed=11, min_codons=3, max_codons=8)


@pytest.fixture(scope="module")
def both(smollm2, smollm2_vllm, dna_rows):
    """Prompts and the records of both backends (top-21, so the 20th/21st margin is known)."""
    from saltbench.inference import generate, generate_vllm

    model, tokenizer = smollm2
    task = get_task("dna")
    prompts = render_prompts(tokenizer, [task.prompt(x) for x in dna_rows["input"]])
    hf = generate(model, tokenizer, prompts, max_new_tokens=BUDGET, top_k=21, progress=False)
    vl = generate_vllm(smollm2_vllm, prompts, max_new_tokens=BUDGET, top_k=21, progress=False)
    return prompts, hf, vl


def _compared_steps(a: GenerationRecord, b: GenerationRecord) -> int:
    """Steps up to and including the first differing token (later steps have different contexts)."""
    n = min(a.num_generated_tokens, b.num_generated_tokens)
    differ = np.flatnonzero(a.token_ids[:n] != b.token_ids[:n])
    return int(differ[0]) + 1 if differ.size else n


def test_same_greedy_tokens_texts_and_offsets(both):
    _, hf, vl = both
    for a, b in zip(hf, vl):
        assert a.num_generated_tokens > 0
        assert np.array_equal(a.token_ids, b.token_ids), (a.text, b.text)
        assert a.text == b.text and a.token_texts == b.token_texts
        assert np.array_equal(a.token_offsets, b.token_offsets)
        assert a.finish_reason == b.finish_reason and a.num_prompt_tokens == b.num_prompt_tokens


def test_log_probabilities_agree(both):
    _, hf, vl = both
    for a, b in zip(hf, vl):
        n = _compared_steps(a, b)
        assert np.abs(a.chosen_logprobs[:n] - b.chosen_logprobs[:n]).max() < 1e-3
        assert np.abs(a.topk_logprobs[:n, :20] - b.topk_logprobs[:n, :20]).max() < 1e-3
        clear = (a.topk_logprobs[:n, 19] - a.topk_logprobs[:n, 20]) > 1e-4
        assert clear.mean() > 0.5  # the check below has something to compare
        for t in np.flatnonzero(clear):
            assert set(a.topk_ids[t, :20].tolist()) == set(b.topk_ids[t, :20].tolist()), t
        assert np.array_equal(a.topk_ids[:n, 0], a.token_ids[:n])  # greedy: the chosen token ranks first
        assert np.array_equal(b.topk_ids[:n, 0], b.token_ids[:n])


def test_entropy_is_recorded_as_missing(both):
    _, hf, vl = both
    for a, b in zip(hf, vl):
        assert np.isfinite(a.entropy).all() and np.isnan(b.entropy).all()


def test_log_probabilities_are_raw_not_temperature_scaled(smollm2, smollm2_vllm, both):
    """Sampled at temperature 1.7: the returned log-probability of each sampled token is the raw
    model's (teacher-forced through transformers), not the one of the tempered distribution."""
    import torch
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    from saltbench.inference import encode_prompt, teacher_force

    model, tokenizer = smollm2
    prompt_ids = encode_prompt(tokenizer, both[0][0])
    params = SamplingParams(
        temperature=1.7, seed=3, max_tokens=12, logprobs=1, detokenize=False, flat_logprobs=True
    )
    (out,) = smollm2_vllm.llm.generate([TokensPrompt(prompt_token_ids=prompt_ids)], params, use_tqdm=False)
    completion = out.outputs[0]
    sampled = list(completion.token_ids)
    flat = completion.logprobs
    returned = np.array([flat.logprobs[flat.start_indices[i]] for i in range(len(sampled))])
    forced = teacher_force(model, tokenizer, prompt_ids, sampled)
    assert np.abs(returned - forced.chosen_logprobs).max() < 1e-3
    with torch.inference_mode():
        logits = model(torch.tensor([prompt_ids + sampled])).logits[0, len(prompt_ids) - 1 : -1].float()
    tempered = torch.log_softmax(logits / 1.7, -1).gather(-1, torch.tensor(sampled)[:, None])[:, 0].numpy()
    assert np.abs(returned - tempered).max() > 0.05  # a processed mode would have matched these


def test_too_long_prompt_is_an_error_row_like_hf(smollm2, smollm2_vllm):
    from saltbench.inference import encode_prompt, generate, generate_vllm

    model, tokenizer = smollm2
    long_prompt = render_prompts(tokenizer, ["count: " + "1 2 3 " * 400])[0]
    n = len(encode_prompt(tokenizer, long_prompt))
    assert n > 1000
    (vl,) = generate_vllm(smollm2_vllm, [long_prompt], max_new_tokens=8, max_context=1000, progress=False)
    (hf,) = generate(model, tokenizer, [long_prompt], max_new_tokens=8, max_context=1000, progress=False)
    assert vl.finish_reason == hf.finish_reason == "error"
    assert vl.error == hf.error and f"prompt has {n} tokens" in vl.error


def test_both_backends_frames_score_alike(both, dna_rows, caplog):
    """The scoring stage accepts both files; every unit agrees except the full-flavour entropy functions,
    which are NaN for vLLM (with the reason logged)."""
    from saltbench.stages.scoring import score_generations

    prompts, hf, vl = both
    meta = {"sample_id": dna_rows["sample_id"].to_list(), "prompt": prompts}
    with caplog.at_level(logging.WARNING, logger="saltbench.stages.scoring"):
        units_vl = score_generations(records_to_frame(vl, meta), dna_rows, "dna", top_k=20)
    units_hf = score_generations(records_to_frame(hf, meta), dna_rows, "dna", top_k=20)
    assert "full-vocabulary entropy not recorded" in caplog.text
    assert units_vl.height == units_hf.height > 0
    assert units_vl["status"].to_list() == units_hf["status"].to_list()
    entropy_columns = {"full.mean_entropy", "full.max_entropy"}
    for column in units_hf.columns:
        if column.startswith(("topk.", "full.")) and column not in entropy_columns:
            a, b = units_hf[column].to_numpy(), units_vl[column].to_numpy()
            assert np.array_equal(np.isnan(a), np.isnan(b)), column
            assert np.nanmax(np.abs(a - b) / np.maximum(1.0, np.abs(a)), initial=0.0) < 1e-3, column
    spanned = units_hf["n_tokens"].to_numpy() > 0
    for column in entropy_columns:
        assert np.isfinite(units_hf[column].to_numpy()[spanned]).all()
        assert np.isnan(units_vl[column].to_numpy()).all()


def test_draws_are_reproduced_by_their_seed_and_record_raw_log_probabilities(smollm2_vllm, both):
    """``SamplingParams(n, seed)`` per prompt: the same seeds give the same draws bit for bit, another seed
    other draws; each draw's chosen log-probability is the model's own (temperature 1), as in its top-k."""
    from saltbench.inference.base import DrawSettings
    from saltbench.inference.vllm.engine import sample_vllm

    prompts = both[0][:2]
    settings = DrawSettings(3, temperature=1.3, top_p=0.95)
    run = dict(max_new_tokens=6, top_k=20, progress=False)
    drawn = sample_vllm(smollm2_vllm, prompts, [5, 6], settings, **run)
    again = sample_vllm(smollm2_vllm, prompts, [5, 6], settings, **run)
    other = sample_vllm(smollm2_vllm, prompts[:1], [7], settings, **run)
    assert [len(d) for d in drawn] == [3, 3]
    frame = records_to_frame([r for d in drawn for r in d])
    assert frame.equals(records_to_frame([r for d in again for r in d]))
    assert len(set(frame["text"].to_list())) > 2
    assert [r.text for r in other[0]] != [r.text for r in drawn[0]]
    for record in (r for d in drawn for r in d):
        in_top = record.topk_ids == record.token_ids[:, None]
        np.testing.assert_allclose(record.topk_logprobs[in_top], record.chosen_logprobs[in_top.any(1)])
