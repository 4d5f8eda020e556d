"""The greedy decoding core (docs/generation.md §6) on a randomly initialised tiny Llama (CPU, float32).

Teacher forcing, greedy decoding, batching, chunking and stopping must agree with each other: forcing the
model's own greedy tokens and continuing reproduces plain greedy decoding, a batch row equals the row
decoded alone, and the stopping rules only cut rows short.
"""

from __future__ import annotations

import string

import numpy as np
import pytest
import torch

from saltbench.inference.hf._decoding import force, greedy_decode, prefill

NEW = 12
ATOL = 1e-5


@pytest.fixture(scope="module")
def tiny():
    from saltbench.training.model import ArchitectureSpec, build_model
    from saltbench.training.tokenizer import build_char_tokenizer

    torch.set_num_threads(1)
    tok = build_char_tokenizer([string.printable])
    spec = ArchitectureSpec(d_model=64, n_layers=2, n_heads=4, d_ff=128, max_positions=256)
    model = build_model(spec, tok, seed=3).eval()
    with torch.no_grad():  # sharpen the near-uniform initial distributions: greedy tokens then vary
        for weight in model.parameters():
            if weight.dim() == 2:
                weight.mul_(10)
    return model, tok


def _ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def _greedy(model, prompts, new=NEW, **kwargs):
    with torch.inference_mode():
        return greedy_decode(model, prefill(model, prompts, 0), max_new_tokens=new, top_k=5, **kwargs)


@pytest.fixture(scope="module")
def prompts(tiny):
    _, tok = tiny
    return [_ids(tok, t) for t in ("the quick brown fox", "abc", "0123456789 jumps over", "xy")]


@pytest.mark.parametrize("align", ["start", "end"])
def test_forcing_own_tokens_then_greedy_equals_plain_greedy(tiny, prompts, align):
    model, _ = tiny
    prompt = prompts[0]
    ((plain, _),) = _greedy(model, [prompt], eos_ids=[])
    own = plain.token_ids.tolist()
    cuts = [0, 1, 4, 7]  # rows of different lengths: padding in the forced block
    with torch.inference_mode():
        state = prefill(model, [prompt] * len(cuts), 0)
        forced, after = force(
            model, state, [own[:j] for j in cuts], pad_id=0, align=align, chunk_tokens=3, top_k=5
        )
        continued = greedy_decode(model, after, max_new_tokens=NEW, eos_ids=[], top_k=5)
    for j, scores, (gen, finish) in zip(cuts, forced, continued):
        assert scores.token_ids.tolist() == own[:j] and finish == "length"
        np.testing.assert_allclose(scores.chosen_logprobs, plain.chosen_logprobs[:j], atol=ATOL)
        np.testing.assert_allclose(scores.topk_logprobs, plain.topk_logprobs[:j], atol=ATOL)
        np.testing.assert_allclose(scores.entropy, plain.entropy[:j], atol=ATOL)
        assert gen.token_ids.tolist()[: NEW - j] == own[j:]
        np.testing.assert_allclose(gen.chosen_logprobs[: NEW - j], plain.chosen_logprobs[j:], atol=ATOL)
        np.testing.assert_array_equal(gen.topk_ids[: NEW - j], plain.topk_ids[j:])


@pytest.mark.parametrize("drop_finished", [False, True])
def test_batch_rows_equal_single_rows(tiny, prompts, drop_finished):
    model, _ = tiny
    batched = _greedy(model, prompts, eos_ids=[], drop_finished=drop_finished)
    for prompt, (gen, finish) in zip(prompts, batched):
        ((alone, _),) = _greedy(model, [prompt], eos_ids=[])
        assert gen.token_ids.tolist() == alone.token_ids.tolist() and finish == "length"
        np.testing.assert_allclose(gen.chosen_logprobs, alone.chosen_logprobs, atol=ATOL)
        np.testing.assert_allclose(gen.entropy, alone.entropy, atol=ATOL)


@pytest.mark.parametrize("drop_finished", [False, True])
def test_eos_and_stop_rule_cut_rows_short(tiny, prompts, drop_finished):
    model, _ = tiny
    free = [g for g, _ in _greedy(model, prompts[:3], eos_ids=[])]
    eos = int(free[0].token_ids[2])  # row 0 ends at its third token (or earlier)
    asked: dict[int, list[int]] = {0: [], 1: [], 2: []}

    def stop(row: int, ids) -> bool:
        asked[row].append(len(ids))
        return row == 1 and len(ids) >= 3

    run = _greedy(model, prompts[:3], eos_ids=[eos], stop=stop, drop_finished=drop_finished)
    for row, ((gen, finish), whole) in enumerate(zip(run, free)):
        ids = whole.token_ids.tolist()
        at_eos = ids.index(eos) + 1 if eos in ids else NEW + 1
        at_stop = 3 if row == 1 else NEW + 1
        n = min(at_eos, at_stop, NEW)
        assert len(gen) == n and finish == ("eos" if at_eos == n else "stop" if at_stop == n else "length")
        assert gen.token_ids.tolist() == ids[:n]  # stopping only cuts rows short; an EOS is kept
        np.testing.assert_allclose(gen.chosen_logprobs, whole.chosen_logprobs[:n], atol=ATOL)
        # the rule is asked after every token that is not an EOS, never for a finished row
        assert asked[row] == list(range(1, n + (finish != "eos")))
    assert run[0].finish == "eos"


def test_visible_tokens_are_the_continuations_only_context(tiny, prompts):
    model, _ = tiny
    prompt = prompts[2]
    rows = [(prompts[1], prompts[3]), ([], prompts[1]), (prompts[3], []), (prompts[0][:5], prompts[0][5:])]
    with torch.inference_mode():
        state = prefill(model, [prompt] * len(rows), 0)
        targets, after = force(
            model,
            state,
            [[*x, *y] for x, y in rows],
            pad_id=0,
            align="end",
            chunk_tokens=2,
            top_k=None,
            scored=[len(y) for _, y in rows],
            visible=[len(x) for x, _ in rows],
        )
        continued = greedy_decode(model, after, max_new_tokens=5, eos_ids=[], top_k=5, drop_finished=True)
        for (x, y), target, (gen, _) in zip(rows, targets, continued):
            context = [[*prompt, *x]]  # each state is used once: forcing and decoding extend its cache
            (full,), _ = force(
                model, prefill(model, context, 0), [y], pad_id=0, align="start", chunk_tokens=256, top_k=5
            )
            ((plain, _),) = greedy_decode(
                model, prefill(model, context, 0), max_new_tokens=5, eos_ids=[], top_k=5
            )
            assert target.token_ids.tolist() == list(y) and target.topk_ids.shape == (len(y), 0)
            np.testing.assert_allclose(target.chosen_logprobs, full.chosen_logprobs, atol=ATOL)
            assert gen.token_ids.tolist() == plain.token_ids.tolist()
            np.testing.assert_allclose(gen.chosen_logprobs, plain.chosen_logprobs, atol=ATOL)


def test_chunking_does_not_change_forced_scores(tiny, prompts):
    """Targets longer than a chunk included: every needed column's logits must be computed."""
    from saltbench.inference.hf.forced import force_and_continue

    model, tok = tiny
    prompt = prompts[0]
    own = _greedy(model, [prompt], eos_ids=[])[0].scores.token_ids.tolist()
    rows = [(own[:5], own[5:11]), (own[:2], own[2:4]), ([], own[:3])]
    runs = [
        force_and_continue(model, tok, prompt, rows, max_new_tokens=3, chunk_tokens=c) for c in (256, 3, 2, 1)
    ]
    for run in runs[1:]:
        for a, b in zip(runs[0], run):
            np.testing.assert_allclose(b.target_logprobs, a.target_logprobs, atol=ATOL)
            assert b.generation.token_ids.tolist() == a.generation.token_ids.tolist()
    for (x, _), r in zip(rows, runs[0]):
        assert r.generation.token_ids.tolist() == own[len(x) : len(x) + 3]


def test_no_new_tokens(tiny, prompts):
    model, _ = tiny
    out = _greedy(model, prompts[:2], new=0, eos_ids=[])
    assert [(len(s), s.topk_ids.shape, f) for s, f in out] == [(0, (0, 5), "length")] * 2
