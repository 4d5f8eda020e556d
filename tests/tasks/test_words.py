"""Words Collection task: the lexical reference rule, paper data, generator invariants, prompt."""

from __future__ import annotations

import random
import re
import statistics
from pathlib import Path

import pyarrow.ipc as ipc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.tasks import WORDS_SUBJECTS, get_task
from saltbench.tasks import words as w
from saltbench.tasks.words import WordsTask, find_needles, generate_haystack

ROSES = "roses are red, violets are blue and watermelons are red and green"


def _paper_rows(paper_data: Path) -> list[dict[str, object]]:
    folder = paper_data / "NeedlesInHaystack_dataset"
    if not folder.is_dir():
        pytest.skip(f"paper Words Collection data not found at {folder}")
    with ipc.open_stream(folder / "data-00000-of-00001.arrow") as reader:
        return reader.read_all().to_pylist()  # type: ignore[no-any-return]


def test_paper_references_reproduced(paper_data: Path) -> None:
    rows = _paper_rows(paper_data)
    assert len(rows) == 300
    computed = [
        find_needles(r["input"], r["subject"], r["subject_set"])  # type: ignore[arg-type]
        for r in rows
    ]
    assert [i for i, (c, r) in enumerate(zip(computed, rows, strict=True)) if c != r["reference"]] == []


def test_paper_rows_with_builtin_vocabularies(paper_data: Path) -> None:
    """Rule subjects need no vocabulary: the built-in rule reproduces those rows as they are."""
    keep = ("numbers", "capital_letters", "months", "weekdays")
    rows = [r for r in _paper_rows(paper_data) if r["subject"] in keep]
    assert len(rows) == 214 + 8 + 29 + 2
    assert all(
        find_needles(r["input"], r["subject"]) == r["reference"]  # type: ignore[arg-type]
        for r in rows
    )


@pytest.mark.parametrize(
    ("text", "subject", "expected"),
    [
        (ROSES, "colors", "red blue red green"),
        ("offer of 13 dlrs a share for 3 . 3 mln , 7 , 242 , 117 shares", "numbers", "13 3 3 7 242 117"),
        ("paid 750 , 000 dlrs ; SWM 35YO seeks 3RD ; rate 2.5", "numbers", "750 000 35 3 2 5"),
        ("McAllister of the U . S . eBay", "capital_letters", "M A U S B"),
        ("Sales May rise in MAY, not in Mayor's march", "months", "may may march"),
        ("stores open on sundays; Monday's close; FRIDAY", "weekdays", "monday friday"),
        ("Saudi Arabia and the United States sold to France and Chad", "countries", "france chad"),
        ("Baker the engineers met a software engineer and a Nurse", "professions", "baker engineer nurse"),
        ("a reddish, redder, gold and silverware lavender", "colors", "gold lavender"),
        ("no needles here", "weekdays", ""),
    ],
)
def test_find_needles_lexical_rule(text: str, subject: str, expected: str) -> None:
    assert find_needles(text, subject) == expected


def test_find_needles_vocabulary_override_and_errors() -> None:
    assert find_needles("Saudi Arabia beat Oman", "countries", ["saudi arabia", "oman"]) == "oman"
    assert find_needles("red and teal", "colors", ["teal"]) == "teal"
    assert find_needles("4 apples", "numbers", ["5"]) == "4"  # rule subjects ignore vocabularies
    with pytest.raises(ValueError, match="subject"):
        find_needles("x", "animals")


def test_vocabulary_sizes_and_shapes() -> None:
    voc = w.VOCABULARIES
    assert len(voc["countries"]) >= 190 and any(" " in c for c in voc["countries"])
    assert len(voc["professions"]) >= 100 and "software engineer" in voc["professions"]
    assert len(voc["colors"]) >= 60 and {"gold", "silver", "lavender"} <= set(voc["colors"])
    assert len(voc["months"]) == 12 and len(voc["weekdays"]) == 7 and len(voc["capital_letters"]) == 26
    for subject, words in voc.items():
        assert len(set(words)) == len(words), subject
        if subject != "capital_letters":
            assert all(word == word.lower() for word in words), subject


def test_generator_lexicon_never_hits_a_vocabulary() -> None:
    """Needles enter a haystack only through typed slots: template text, look-alike distractors and the
    filler word lists contain no vocabulary token of any word subject."""
    vocab = set().union(*(set(v) for s, v in w.VOCABULARIES.items() if s not in w.RULE_SUBJECTS))
    distractors = [t for ts in w.DISTRACTOR_TEMPLATES.values() for t in ts]
    templates = [*w.HEADLINE_TEMPLATES, *w.BODY_TEMPLATES, *distractors]
    lexicon = [
        *w.COMPANY_STEMS,
        *w.COMPANY_SUFFIXES,
        *w.FIRST_NAMES,
        *w.SURNAMES,
        *w.CAMEL_SURNAMES,
        *w.CITIES,
        *w.PRODUCTS,
        *w.QUARTERS,
        *w.TAG_SUFFIXES,
        *w.NATIONALITIES,
        *w.PROFESSION_PLURALS,
        *w.PROFESSION_GERUNDS,
        "dlrs mln billion pct",
    ]
    text = " ".join([*(re.sub(r"\{\w+\}", " ", t) for t in templates), *lexicon])
    assert {tok for tok in re.findall(r"[A-Za-z]+", text.lower()) if tok in vocab} == set()
    assert set(w.DISTRACTOR_TEMPLATES) == set(WORDS_SUBJECTS)
    for slot in ("country", "month", "weekday", "profession", "color"):
        assert any(f"{{{slot}}}" in t for t in w.BODY_TEMPLATES)


def test_few_shots_solve_to_their_outputs() -> None:
    shots = WordsTask("colors").few_shots
    assert len(shots) == 2
    for shot, subject in zip(shots, ("colors", "weekdays"), strict=True):
        header, text = shot.input.split("\n")
        assert header == f"List all the {subject} mentioned in the given text:"
        assert WordsTask(subject).solve(text) == shot.output
    assert shots[0].output == "red blue red green" and shots[1].output == "monday friday"


def test_subject_binding() -> None:
    with pytest.raises(ValueError, match="subject"):
        WordsTask("animals")
    unbound = WordsTask()
    for call in (lambda: unbound.solve("x"), lambda: unbound.prompt("x"), unbound.instruction):
        with pytest.raises(ValueError, match="subject"):
            call()
    assert get_task("words", "months").solve("In May and June") == "may june"


@pytest.mark.parametrize("subject", WORDS_SUBJECTS)
def test_prompt_structure_and_tail(subject: str) -> None:
    task = WordsTask(subject)
    label = subject.replace("_", " ")
    lines = task.instruction().split("\n")
    assert len(lines) == 3
    assert f"List all the {label} " in lines[0] and "order" in lines[0]
    assert "' '" in lines[1]
    assert ("lower-case" in lines[1]) is (subject not in ("capital_letters", "numbers"))
    assert ROSES in lines[2] and lines[2].endswith("red blue red green")
    prompt = task.prompt("Some TEXT 12")
    assert prompt.startswith(task.instruction() + "\n")
    assert prompt.endswith(
        "Please answer the following as demonstrated before:\n"
        f"List all the {label} mentioned in the given text:\nSome TEXT 12\nAnswer: "
    )
    assert f"Example 1:\nList all the colors mentioned in the given text:\n{ROSES}\nAnswer:\n" in prompt


def test_generate_frame_and_determinism() -> None:
    task = WordsTask()
    a = task.generate(40, 5)
    assert a.columns[:5] == ["sample_id", "task", "variant", "input", "reference"]
    assert a.equals(task.generate(40, 5))
    assert not a["input"].equals(task.generate(40, 6)["input"])
    assert set(a["variant"]) == set(WORDS_SUBJECTS)  # stratified: every subject present
    assert a["variant"].to_list().count("numbers") == max(a["variant"].value_counts()["count"])
    for row in a.iter_rows(named=True):
        assert row["reference"] == WordsTask(row["variant"]).solve(row["input"])


def test_length_distribution_is_skewed_to_short() -> None:
    frame = WordsTask().generate(300, 0)
    lengths = [len(t.split()) for t in frame["input"]]
    assert 100 <= min(lengths) and max(lengths) <= 1000
    assert 170 <= statistics.median(lengths) <= 270  # paper median 212.5
    assert sum(n <= 300 for n in lengths) > 150


def test_subject_restriction_and_binding() -> None:
    weights = {"months": 3, "colors": 1}
    frame = WordsTask().generate(10, 1, subjects=["months", "colors"], subject_weights=weights)
    counts = dict(frame["variant"].value_counts().iter_rows())
    assert counts == {"months": 7, "colors": 3}
    bound = WordsTask("weekdays").generate(3, 1)
    assert set(bound["variant"]) == {"weekdays"}
    assert bound["sample_id"][0] == "words-weekdays-s1-00000"


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"subjects": ["animals"]}, "subjects"),
        ({"subjects": []}, "subjects"),
        ({"subject_weights": {"numbers": -1}}, "subject_weights"),
        ({"subjects": ["colors"], "subject_weights": {"numbers": 1}}, "subject_weights"),
        ({"min_words": 0}, "min_words"),
        ({"min_words": 50, "max_words": 40}, "max_words"),
        ({"min_needles": -1}, "min_needles"),
        ({"length_skew": 0}, "length_skew"),
        ({"needle_rate": 1.5}, "needle_rate"),
        ({"distractor_rate": -0.1}, "distractor_rate"),
        ({"haystack": 3}, "haystack"),
        ({"subjects": ["weekdays"], "min_words": 10, "max_words": 10, "min_needles": 50}, "min_needles"),
    ],
)
def test_invalid_params_are_named(params: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        WordsTask().generate(2, 0, **params)


def _appear_in_order(reference: str, text: str, subject: str) -> bool:
    pos = 0
    for needle in reference.split():
        if subject == "numbers":
            pattern = rf"(?<!\d){needle}(?!\d)"
        elif subject == "capital_letters":
            pattern = re.escape(needle)
        else:
            pattern = rf"(?<![a-z]){needle}(?![a-z])"
        found = re.compile(pattern).search(text.lower() if subject not in w.RULE_SUBJECTS else text, pos)
        if found is None:
            return False
        pos = found.end()
    return True


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    subject=st.sampled_from(WORDS_SUBJECTS),
    min_words=st.integers(100, 200),
    extra=st.integers(0, 300),
    min_needles=st.integers(0, 5),
)
def test_haystack_invariants(seed: int, subject: str, min_words: int, extra: int, min_needles: int) -> None:
    max_words = min_words + extra
    rng = random.Random(seed)
    text, reference = generate_haystack(
        rng, subject, min_words=min_words, max_words=max_words, min_needles=min_needles
    )
    assert min_words <= len(text.split()) <= min_words + extra
    assert "\n" not in text and "  " not in text
    needles = reference.split()
    assert len(needles) >= min_needles
    assert reference == find_needles(text, subject)
    if subject == "numbers":
        assert all(n.isdigit() for n in needles)
    elif subject == "capital_letters":
        assert all(len(n) == 1 and n.isupper() for n in needles)
    else:
        assert all(n in w.VOCABULARIES[subject] for n in needles)
    assert _appear_in_order(reference, text, subject)
