"""Training pairs, disjointness from evaluation data, encoding with answer-only labels, batching."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.core.seeds import derive_seed
from saltbench.io import write_table
from saltbench.tasks import get_task
from saltbench.training.pairs import (
    IGNORE_INDEX,
    TaskMix,
    assert_disjoint,
    build_training_pairs,
    collate,
    drop_inputs,
    encode_pairs,
    length_bucketed_batches,
    load_eval_inputs,
    parse_tasks_config,
    task_alphabet_corpus,
    task_train_seed,
)
from saltbench.training.tokenizer import build_char_tokenizer, render_prompt

KRON = {"output_lengths": [16], "prefer_2d_probability": 1.0, "value_min": -5, "value_max": 5}
TASKS_CFG = {
    "kronecker": {"weight": 1.5, "params": KRON},
    "matmul": {"weight": 0.5, "params": {"output_lengths": [4], "min_inner_dim": 2, "max_inner_dim": 2}},
    "words": {"weight": 1.0, "params": {"min_words": 20, "max_words": 40, "min_needles": 1}},
}


@pytest.fixture(scope="module")
def pairs() -> pl.DataFrame:
    return build_training_pairs(TASKS_CFG, 20, seed=3)


@pytest.fixture(scope="module")
def tokenizer(pairs):
    return build_char_tokenizer([*task_alphabet_corpus(), *pairs["prompt"], *pairs["answer"]])


def test_weights_scale_rows_per_task(pairs) -> None:
    counts = dict(pairs.group_by("task", maintain_order=True).len().iter_rows())
    assert counts == {"kronecker": 30, "matmul": 10, "words": 20}
    assert pairs.columns == [
        "sample_id",
        "task",
        "variant",
        "input",
        "reference",
        "style",
        "prompt",
        "answer",
    ]
    assert set(pairs["style"]) == {"direct"}


def test_rows_are_the_task_generator_with_the_derived_seed(pairs) -> None:
    mix = parse_tasks_config(TASKS_CFG)[0]
    seed = task_train_seed(3, mix)
    assert seed == derive_seed("train", 3, "kronecker", "")
    expected = get_task("kronecker").generate(30, seed, **KRON)
    kron = pairs.filter(pl.col("task") == "kronecker")
    assert kron["input"].to_list() == expected["input"].to_list()
    assert kron["answer"][0] == "********\n" + expected["reference"][0] + "\n********"
    # a 2x2 (x) 2x2 product has four rows of four entries
    assert [len(r.split()) for r in expected["reference"][0].split("\n")] == [4, 4, 4, 4]


@pytest.mark.parametrize("scratchpad", ["never", "cot", "always"])
def test_styles_and_scratchpads(scratchpad: str) -> None:
    """Both prompt styles appear (seeded per task, the same draws whatever the scratchpad); an answer starts
    with the worked solution exactly where the scratchpad mode asks for it."""
    styled = build_training_pairs(TASKS_CFG, 20, seed=3, styles=("direct", "cot"), scratchpad=scratchpad)
    plain = build_training_pairs(TASKS_CFG, 20, seed=3, styles=("direct", "cot"))
    assert styled.select("input", "style", "prompt").equals(plain.select("input", "style", "prompt"))
    assert set(styled["style"]) == {"direct", "cot"}
    for row in styled.iter_rows(named=True):
        task = get_task(row["task"], row["variant"])
        assert row["prompt"] == task.prompt(row["input"], style=row["style"])
        reasoned = scratchpad == "always" or (scratchpad == "cot" and row["style"] == "cot")
        bare = task.render_answer(row["reference"])
        assert row["answer"] == (
            task.render_reasoned_answer(row["input"], row["reference"]) if reasoned else bare
        )


def test_training_seed_differs_from_evaluation_seed() -> None:
    train = build_training_pairs({"kronecker": {"params": KRON}}, 200, seed=42)
    evaluation = get_task("kronecker").generate(200, 42, **KRON)
    assert_disjoint(train["input"], evaluation["input"])


def test_words_prompts_use_the_row_subject(pairs) -> None:
    words = pairs.filter(pl.col("task") == "words")
    for variant, inp, prompt in words.select("variant", "input", "prompt").iter_rows():
        assert prompt == get_task("words", variant).prompt(inp)


def test_assert_disjoint_raises_on_shared_input() -> None:
    assert_disjoint(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="1 evaluation input"):
        assert_disjoint(["a", "b"], ["c", "b"])


def test_drop_inputs_and_load_eval_inputs(pairs, tmp_path) -> None:
    eval_frame = pairs.head(3).select("sample_id", "task", "variant", "input", "reference")
    path = tmp_path / "kronecker.parquet"
    write_table(eval_frame, path, {}, "dataset")
    eval_inputs = load_eval_inputs([path])
    assert eval_inputs == set(eval_frame["input"])
    with pytest.raises(ValueError):
        assert_disjoint(pairs["input"], eval_inputs)
    kept = drop_inputs(pairs, eval_inputs)
    assert kept.height == pairs.height - 3
    assert_disjoint(kept["input"], eval_inputs)


def test_parse_tasks_config_errors() -> None:
    assert parse_tasks_config({"dna": 2}) == (TaskMix("dna", 2.0),)
    with pytest.raises(ValueError, match="unknown key"):
        parse_tasks_config({"dna": {"wieght": 1}})
    with pytest.raises(ValueError, match="weight"):
        parse_tasks_config({"dna": {"weight": -1}})
    with pytest.raises(ValueError, match="non-empty"):
        parse_tasks_config({})
    with pytest.raises(ValueError, match="n_per_task"):
        build_training_pairs({"dna": 1}, 0, 0)


def test_encoding_labels_cover_exactly_the_answer(pairs, tokenizer) -> None:
    enc = encode_pairs(pairs, tokenizer)
    assert len(enc) == pairs.height
    row = 5
    prompt = render_prompt(tokenizer, pairs["prompt"][row])
    text = prompt + pairs["answer"][row] + "</s>"
    ids = enc.ids[enc.offsets[row] : enc.offsets[row + 1]]
    assert tokenizer.decode(ids.tolist()) == text
    assert enc.prompt_lengths[row] == len(tokenizer(prompt)["input_ids"])

    index = np.array([row, 0])
    input_ids, mask, labels = collate(enc, index, tokenizer.pad_token_id)
    n = int(enc.lengths[row])
    assert mask[0].sum() == n and input_ids[0, :n].tolist() == ids.tolist()
    supervised = labels[0][labels[0] != IGNORE_INDEX]
    assert tokenizer.decode(supervised.tolist()) == pairs["answer"][row] + "</s>"
    assert supervised[0] == tokenizer.convert_tokens_to_ids("*")
    assert (labels[1, int(enc.lengths[0]) :] == IGNORE_INDEX).all()
    assert (input_ids[1, int(enc.lengths[0]) :] == tokenizer.pad_token_id).all()


def test_encoding_rejects_characters_outside_the_vocabulary(pairs) -> None:
    small = build_char_tokenizer([], extra_chars="AB=\n")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        encode_pairs(pairs.head(2), small)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.integers(1, 60), min_size=1, max_size=200),
    st.integers(60, 400),
    st.integers(0, 2**32 - 1),
)
def test_batches_partition_the_epoch_within_budget(lengths: list[int], budget: int, seed: int) -> None:
    arr = np.array(lengths)
    batches = length_bucketed_batches(arr, budget, np.random.default_rng(seed))
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    for b in batches:
        assert len(b) * arr[b].max() <= budget
    again = length_bucketed_batches(arr, budget, np.random.default_rng(seed))
    assert all(np.array_equal(x, y) for x, y in zip(batches, again))


def test_batches_reject_examples_longer_than_budget() -> None:
    with pytest.raises(ValueError, match="token_budget"):
        length_bucketed_batches(np.array([5, 50]), 10, np.random.default_rng(0))
