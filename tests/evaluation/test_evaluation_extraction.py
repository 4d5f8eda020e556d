"""Fenced-answer extraction: every concrete outcome of docs/evaluation.md §2, plus the two switches."""

from __future__ import annotations

import pytest

from saltbench.evaluation import BAD_KEYWORDS, extract_answer, passes_keyword_filter, strip_fence_markers

F = "********"


@pytest.mark.parametrize("text", [None, ""])
def test_empty_input_has_no_answer(text):
    assert extract_answer(text) == ("", -1, -1)


def test_last_pair_rejected_by_keyword_falls_back_to_earlier_pair():
    text = f"thinking\n{F}\nTCT CGA\n{F}\nnotes\n{F}\nanswer: bad\n{F}"
    assert extract_answer(text) == (f"{F}\nTCT CGA\n{F}", 9, 9 + len(f"{F}\nTCT CGA\n{F}"))


def test_keyword_inside_single_pair_means_no_answer():
    assert extract_answer(f"{F}\nfinal answer: TCT CGA\n{F}") == ("", -1, -1)


def test_no_fence_returns_whole_text_unchanged():
    assert extract_answer("  TCT CGA  ") == ("  TCT CGA  ", 0, 11)


def test_no_fence_is_not_keyword_filtered():
    assert extract_answer("the answer is TCT") == ("the answer is TCT", 0, 17)


def test_single_fence_runs_to_end_of_text():
    assert extract_answer(f"blah\n{F}\nTCT CGA\n") == (f"{F}\nTCT CGA\n", 5, 22)


@pytest.mark.parametrize("text", [f"{F}\n{F}", f"{F}\n{F}\nTCT", F, f"{F}  \n\t", f"{F}\n**\n{F}"])
def test_contentless_regions_have_no_answer(text):
    assert extract_answer(text) == ("", -1, -1)


def test_three_fences_first_pair_wins_over_trailing_fence():
    text = f"{F}\nAAA\n{F}\nblah\n{F}\nTCT"
    assert extract_answer(text) == (f"{F}\nAAA\n{F}", 0, 21)


def test_three_fences_trailing_fence_used_when_pair_fails():
    text = f"{F}\nthus AAA\n{F}\nblah\n{F}\nTCT"
    start = text.rindex(F)
    assert extract_answer(text) == (f"{F}\nTCT", start, len(text))


def test_pairing_is_positional():
    text = f"we print {F} then\n{F}\nTCT\n{F}"
    assert extract_answer(text) == (f"{F} then\n{F}", 9, 9 + len(f"{F} then\n{F}"))


def test_inline_fences():
    text = f"x {F}TCT CGA{F} y"
    assert extract_answer(text) == (f"{F}TCT CGA{F}", 2, len(text) - 2)


@pytest.mark.parametrize("fence", ["****", "*********", "*" * 16])
def test_any_run_of_four_or_more_stars_is_a_fence(fence):
    text = f"pre {fence}\nTCT\n{fence} post"
    assert extract_answer(text) == (f"{fence}\nTCT\n{fence}", 4, len(text) - 5)


@pytest.mark.parametrize("text", ["***\nTCT\n***", "**bold** TCT", "a *** b"])
def test_short_star_runs_are_not_fences(text):
    assert extract_answer(text) == (text, 0, len(text))


@pytest.mark.parametrize(
    "word", ["weekend", "lavender", "bartender", "attendant", "friend", "Therefore", "INPUT"]
)
def test_keyword_filter_is_a_case_insensitive_substring_test(word):
    text = f"{F}\nred {word}\n{F}"
    assert extract_answer(text) == ("", -1, -1)
    assert extract_answer(text, keyword_filter=False) == (text, 0, len(text))


def test_keyword_list_is_the_paper_list():
    assert len(BAD_KEYWORDS) == 24
    assert {"the answer is", "final:", "can't conclude", "without", "end", "these"} <= set(BAD_KEYWORDS)
    assert all(not passes_keyword_filter(f"x {k.upper()} y") for k in BAD_KEYWORDS)
    assert passes_keyword_filter("TCT CGA p1: True red blue 5 -3")


def test_require_fence_turns_unfenced_text_into_no_answer():
    assert extract_answer("  TCT CGA  ", require_fence=True) == ("", -1, -1)
    # fenced responses are unaffected
    assert extract_answer(f"blah\n{F}\nTCT CGA\n", require_fence=True) == (f"{F}\nTCT CGA\n", 5, 22)


def test_strip_fence_markers_removes_every_star():
    assert strip_fence_markers(f" {F}\nT*CT **CGA**\n{F} ") == "TCT CGA"
