"""The simulated backend's planted signals for the estimators beyond one greedy answer (docs/simulation.md
§9–10): draws that repeat the greedy atoms as planted, and replies to second-pass prompts."""

import math
from pathlib import Path

import numpy as np
import pytest
from helpers.simulated_run import simulated_model as simulated

from saltbench.analysis import wilson_interval
from saltbench.evaluation import (
    decompose_clean,
    extract_answer,
    p_true,
    parse_verbalized,
    resolve_task,
    second_pass_instruction,
    strip_fence_markers,
    true_false_ids,
)
from saltbench.inference.base import DrawSettings, draw_seed
from saltbench.inference.simulated import SecondPassEffect
from saltbench.inference.simulated.answers import FALSE_ID, TRUE_ID, _rng
from saltbench.inference.simulated.draws import repeated
from saltbench.inference.simulated.second_pass import UNPARSABLE_REPLY, p_true_value, read_question
from saltbench.stages.generation import build_prompts
from saltbench.tasks import get_task

SIGNAL = {"repeat_correct": 0.8, "repeat_wrong": 0.3}


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("datasets")
    get_task("logic").generate(30, 3, num_variables=[6]).write_parquet(folder / "logic.parquet")
    get_task("dna").generate(30, 3, min_codons=4, max_codons=8).write_parquet(folder / "dna.parquet")
    return folder


def answer_of(text: str) -> str:
    """The clean answer of a response (docs/evaluation.md §2–3)."""
    return strip_fence_markers(extract_answer(text, fence_rule="line")[0])


def _prompts(folder: Path, task: str) -> list[str]:
    import polars as pl

    return build_prompts(pl.read_parquet(folder / f"{task}.parquet"), "direct", None)


def test_a_draw_is_the_greedy_answer_with_each_atom_repeated_as_planted(datasets):
    model = simulated(datasets, seed=5, accuracy=0.7, **SIGNAL)
    prompts = _prompts(datasets, "dna")
    greedy = model.generate(prompts, [4096] * len(prompts))
    drawn = model.sample(prompts, [4096] * len(prompts), list(range(len(prompts))), DrawSettings(4))
    rule = resolve_task("dna")
    flips = 0
    for seed, (prompt, first, draws) in enumerate(zip(prompts, greedy, drawn, strict=True)):
        plan = model.plan(prompt)
        atoms = decompose_clean(answer_of(first.text), rule, "atom", with_spans=False)[0]
        for d, draw in enumerate(draws):
            keep = repeated(plan, 0.8, 0.3, draw_seed(seed, d), prompt)
            ours = decompose_clean(answer_of(draw.text), rule, "atom", with_spans=False)[0]
            assert len(ours) == len(atoms)
            same = [a == b for a, b in zip(atoms, ours, strict=True)]
            assert same == keep.tolist()
            # an atom not repeated is its one alternative: the reference for a wrong greedy atom
            for k in np.flatnonzero(~keep & ~plan.correct).tolist():
                assert ours[k] == plan.answer.atoms[k]
            flips += int((~keep).sum())
    assert flips > 0
    again = model.sample(prompts[:3], [4096] * 3, [0, 1, 2], DrawSettings(4))
    assert [r.text for rs in again for r in rs] == [r.text for rs in drawn[:3] for r in rs]


def test_the_alternative_of_a_correct_atom_is_the_same_in_every_draw(datasets):
    model = simulated(datasets, seed=6, accuracy=0.99, repeat_correct=0.0, repeat_wrong=0.0)
    prompt = _prompts(datasets, "logic")[0]
    draws = model.sample([prompt], [4096], [7], DrawSettings(3))[0]
    assert len({r.text for r in draws}) == 1
    assert draws[0].text != model.generate([prompt], [4096])[0].text


def _questions(model, prompts: list[str], kind: str, granularity: str) -> tuple[list[str], list[bool]]:
    """Second-pass prompts about each unit of the model's greedy answers, and whether each unit is right."""
    rule = resolve_task("logic")
    questions, correct = [], []
    for prompt, record in zip(prompts, model.generate(prompts, [4096] * len(prompts)), strict=True):
        answer = answer_of(record.text)
        plan = model.plan(prompt)
        units = decompose_clean(answer, rule, granularity, with_spans=False)[0]
        for i, unit in enumerate(units, 1):
            keywords = {} if granularity == "generation" else {"unit": unit, "index": i}
            questions.append(
                second_pass_instruction(kind, prompt, answer, granularity=granularity, **keywords)
            )
            correct.append(
                bool(plan.correct.all()) if granularity == "generation" else bool(plan.correct[i - 1])
            )
    return questions, correct


def test_verbalized_replies_parse_with_the_planted_unparsable_share(datasets):
    rate = 0.2
    model = simulated(datasets, seed=2, accuracy=0.6, second_pass=SecondPassEffect(unparsable_rate=rate))
    questions, correct = _questions(model, _prompts(datasets, "logic"), "verbalized", "line")
    replies = model.generate(questions, [8] * len(questions))
    parsed = [parse_verbalized(r.text) for r in replies]
    statuses = [s for _, s in parsed]
    assert set(statuses) == {"ok", "unparsable"}
    assert all(r.text == UNPARSABLE_REPLY for r, s in zip(replies, statuses, strict=True) if s != "ok")
    low, high = wilson_interval(np.array([statuses.count("unparsable")]), np.array([len(statuses)]))
    assert low[0] <= rate <= high[0]
    values = np.array([v for v, s in parsed if s == "ok"])
    assert np.all(np.isclose(values * 100 % 5, 0) | np.isclose(values * 100 % 5, 5))
    ok = np.array([s == "ok" for s in statuses])
    y = np.array(correct)[ok]
    assert values[y].mean() > values[~y].mean() + 0.1  # correct lines are stated more confidently
    assert read_question(questions[0]) is not None and read_question(_prompts(datasets, "logic")[0]) is None
    # a prompt that quotes an answer but is no second_pass_instruction's is answered as a task prompt
    assert read_question(questions[0].replace("and nothing else", "and why")) is None


def test_p_true_is_read_off_the_first_tokens_top_k(datasets):
    model = simulated(datasets, seed=3, accuracy=0.7)
    vocabulary = [(i, model.tokenizer.decode([i])) for i in range(len(model.tokenizer))]
    true_ids, false_ids = true_false_ids(vocabulary)
    assert (true_ids, false_ids) == ({TRUE_ID}, {FALSE_ID})
    questions, correct = _questions(model, _prompts(datasets, "logic")[:6], "p_true", "generation")
    for question, right in zip(questions, correct, strict=True):
        record = model.generate([question], [1])[0]
        assert record.text in ("True", "False") and record.finish_reason == "length"
        value, status = p_true(
            int(record.token_ids[0]),
            float(record.chosen_logprobs[0]),
            record.topk_ids[0],
            record.topk_logprobs[0],
            true_ids,
            false_ids,
        )
        planted = p_true_value(model.params, right, _rng(model.params.seed, "second_pass", question))
        assert status == "ok" and value == pytest.approx(planted, rel=1e-5)
        assert record.text == ("True" if planted >= 0.5 else "False")
    assert math.isfinite(value)
