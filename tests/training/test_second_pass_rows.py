"""The second pass's question rows in the training data: each reply is the exact label of its unit."""

from __future__ import annotations

import random
import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.evaluation import (
    corruptor_for,
    decompose,
    normalize_unit,
    resolve_task,
    second_pass_instruction,
)
from saltbench.training.pairs import build_training_pairs
from saltbench.training.recipe import DEFAULT_TRAIN_CONFIG, SecondPassMix, TrainConfig
from saltbench.training.second_pass import REPLIES, build_question_pairs, question_row

TASKS = DEFAULT_TRAIN_CONFIG["tasks"]
QUESTION = {  # the question's last line, per kind: what the unit asked about is quoted in
    "p_true": "Reply True or False.",
    "verbalized": "Reply with one number from 0 to 100 and nothing else.",
}


@pytest.fixture(scope="module")
def pairs() -> pl.DataFrame:
    return build_training_pairs(TASKS, 40, seed=1, styles=("direct", "cot"))


def _proposed(instruction: str) -> str:
    """The proposed answer quoted in a second-pass instruction."""
    return instruction.split("\n\nProposed answer:\n", 1)[1].rsplit("\n\n", 1)[0]


@settings(max_examples=60, deadline=None)
@given(
    row=st.integers(0, 10_000), seed=st.integers(0, 2**32 - 1), wrong_share=st.sampled_from([0.0, 0.5, 1.0])
)
def test_the_reply_is_the_label_of_the_unit_asked_about(pairs, row, seed, wrong_share):
    record = pairs.row(row % pairs.height, named=True)
    mix = SecondPassMix(share=1.0, wrong_share=wrong_share, atom_max=8)
    rule = resolve_task(record["task"], record["variant"])
    corrupt = corruptor_for(record["task"], record["variant"])
    made = question_row(mix, rule, corrupt, record["prompt"], record["reference"], random.Random(seed))
    assert made is not None
    kind, granularity, instruction, reply = made
    proposed, reference = _proposed(instruction), record["reference"]
    ours, theirs = decompose(proposed, rule, granularity), decompose(reference, rule, granularity)
    assert len(decompose(proposed, rule)) == len(decompose(reference, rule))  # atoms replaced one for one
    asked = re.search(r"(?:line|item) (\d+) of the proposed answer", instruction)
    index = 1 if asked is None else int(asked[1])
    right = normalize_unit(ours[index - 1], rule) == normalize_unit(theirs[index - 1], rule)
    assert reply == REPLIES[kind][0 if right else 1]
    if wrong_share == 0.0:
        assert right
    if wrong_share == 1.0:
        assert not right
    unit = None if granularity == "generation" else ours[index - 1]
    assert instruction == second_pass_instruction(
        kind,
        record["prompt"],
        proposed,
        granularity=granularity,
        unit=unit,
        index=None if unit is None else index,
    )
    assert instruction.endswith(QUESTION[kind])


def test_rows_per_task_follow_the_share_and_the_seed(pairs):
    mix = SecondPassMix(share=0.5)
    questions = build_question_pairs(pairs, mix, seed=7)
    per_task = dict(questions.group_by("task").len().iter_rows())
    expected = {t: round(0.5 * n) for t, n in pairs.group_by("task").len().iter_rows()}
    assert per_task == expected
    assert set(questions["answer"]) == {"True", "False", "100", "0"}
    assert questions.columns == [*pairs.columns, "question"]
    assert questions.equals(build_question_pairs(pairs, mix, seed=7))
    assert not questions.equals(build_question_pairs(pairs, mix, seed=8))
    atoms = questions.filter(pl.col("question").str.ends_with("/atom"))
    kron = atoms.filter(pl.col("task") == "kronecker")
    assert kron.is_empty()  # 16 atoms: more than atom_max
    assert build_question_pairs(pairs, SecondPassMix(share=0.0), seed=7).is_empty()


def test_the_recipe_validates_and_round_trips_the_block():
    config = TrainConfig.from_dict(
        DEFAULT_TRAIN_CONFIG | {"second_pass": {"share": 0.2, "kinds": ["p_true"]}}
    )
    assert config.second_pass == SecondPassMix(share=0.2, kinds=("p_true",))
    assert TrainConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown training.second_pass key"):
        TrainConfig.from_dict(DEFAULT_TRAIN_CONFIG | {"second_pass": {"shares": 0.2}})
    with pytest.raises(ValueError, match=r"second_pass.share must be a number in \[0, 1\]"):
        SecondPassMix(share=1.5)
    with pytest.raises(ValueError, match="second_pass.kinds"):
        SecondPassMix(kinds=("confidence",))


def test_a_character_level_reply_commits_to_true_or_false_with_its_first_character():
    from saltbench.evaluation import spelled_first_ids
    from saltbench.training.pairs import task_alphabet_corpus
    from saltbench.training.tokenizer import build_char_tokenizer

    tokenizer = build_char_tokenizer(task_alphabet_corpus())
    true, false = spelled_first_ids(lambda text: tokenizer.encode(text, add_special_tokens=False))
    assert sorted(tokenizer.decode([i]) for i in true) == ["T", "t"]
    assert sorted(tokenizer.decode([i]) for i in false) == ["F", "f"]
