"""Second-pass estimators (docs/confidence.md §8): the prompts, the strict parse of a verbalized reply, and
P(True) read from the first reply token's candidates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.evaluation import (
    SECOND_PASS_STATUSES,
    p_true,
    parse_verbalized,
    second_pass_instruction,
    true_false_ids,
)


@given(
    value=st.integers(0, 100), percent=st.booleans(), stop=st.booleans(), pad=st.sampled_from(["", " ", "\n"])
)
def test_a_number_from_0_to_100_is_read_whatever_its_dressing(value, percent, stop, pad) -> None:
    reply = f"{pad}{value}{'%' if percent else ''}{'.' if stop else ''}{pad}"
    assert parse_verbalized(reply) == (value / 100, "ok")


@given(reply=st.text(min_size=1, max_size=20))
def test_a_reply_is_a_number_in_0_1_or_a_status_with_nan_never_a_silent_value(reply) -> None:
    value, status = parse_verbalized(reply)
    assert status in SECOND_PASS_STATUSES
    if status == "ok":
        assert 0.0 <= value <= 1.0
    else:
        assert math.isnan(value)


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        ("I am 90% sure", "unparsable"),
        ("90 or 95", "unparsable"),
        ("0.9 (ninety)", "unparsable"),
        ("-5", "unparsable"),
        ("101", "out_of_range"),
        ("   ", "empty"),
        ("True", "unparsable"),
    ],
)
def test_anything_but_one_number_is_its_own_status(reply, status) -> None:
    value, got = parse_verbalized(reply)
    assert got == status and math.isnan(value)


@settings(max_examples=100, deadline=None)
@given(
    probs=st.lists(st.floats(1e-6, 1.0), min_size=3, max_size=8, unique=True),
    true_at=st.integers(0, 7),
    false_at=st.integers(0, 7),
)
def test_p_true_is_the_true_share_of_the_true_and_false_mass(probs, true_at, false_at) -> None:
    """P(True) in [0, 1]; swapping the True and False ids gives 1 − P(True); it is the share read off the
    candidates by hand."""
    probs = np.asarray(probs) / np.sum(probs)
    ids = np.arange(len(probs)) + 10
    true_ids, false_ids = {int(ids[true_at % len(ids)])}, {int(ids[false_at % len(ids)])}
    if true_ids == false_ids:
        false_ids = {999}
    logp = np.log(probs)
    value, status = p_true(int(ids[0]), float(logp[0]), ids[1:], logp[1:], true_ids, false_ids)
    swapped, _ = p_true(int(ids[0]), float(logp[0]), ids[1:], logp[1:], false_ids, true_ids)
    mass_true = sum(p for i, p in zip(ids, probs, strict=True) if i in true_ids)
    mass_false = sum(p for i, p in zip(ids, probs, strict=True) if i in false_ids)
    assert status == "ok" and value == pytest.approx(mass_true / (mass_true + mass_false))
    assert value + swapped == pytest.approx(1.0)


def test_the_chosen_token_listed_again_among_the_candidates_counts_once() -> None:
    logp = math.log(0.5)
    value, _ = p_true(1, logp, [1, 2], [logp, math.log(0.5)], {1}, {2})
    assert value == pytest.approx(0.5)
    assert p_true(1, logp, [3, 4], [float("nan"), float("nan")], {5}, {6})[1] == "no_true_false"


def test_prompts_quote_the_task_the_answer_and_the_unit() -> None:
    line = second_pass_instruction(
        "verbalized", "Multiply A and B.", "1 2\n3 4", granularity="line", unit="3 4", index=2
    )
    assert line.startswith("Multiply A and B.\n\nProposed answer:\n1 2\n3 4\n\n")
    assert line.endswith(
        "How likely is it that line 2 of the proposed answer, `3 4`, is correct? "
        "Reply with one number from 0 to 100 and nothing else."
    )
    with pytest.raises(ValueError, match="needs its unit text"):
        second_pass_instruction("p_true", "x", "y", granularity="atom")
    with pytest.raises(ValueError, match="kind must be one of"):
        second_pass_instruction("judge", "x", "y")  # type: ignore[arg-type]


@pytest.mark.model
def test_smollm2s_tokenizer_spells_true_and_false(smollm2_dir) -> None:
    """The ids a real tokenizer uses for True and False, with and without a leading space."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    vocabulary = ((i, tokenizer.decode([i])) for i in range(len(tokenizer)))
    true, false = true_false_ids(vocabulary)
    for word, ids in (("True", true), ("False", false)):
        for text in (word, " " + word):
            (first, *_) = tokenizer.encode(text, add_special_tokens=False)
            assert first in ids, (text, first)
