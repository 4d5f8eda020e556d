"""Character tokenizer: round trips over every task's alphabet and the test-block chat template."""

from __future__ import annotations

import functools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from saltbench.tasks import CODE_VARIANTS, WORDS_SUBJECTS, get_task
from saltbench.training.pairs import task_alphabet_corpus
from saltbench.training.tokenizer import (
    CHAT_TEMPLATE,
    SPECIAL_TOKENS,
    build_char_tokenizer,
    extract_test_block,
    load_tokenizer,
    model_input,
    render_prompt,
)

SMALL_PARAMS: dict[str, dict[str, object]] = {
    "dna": {},
    "code": {},
    "logic": {"num_variables_range": (4, 6), "num_initial_assignments": 2},
    "matmul": {},
    "kronecker": {},
    "words": {"min_words": 60, "max_words": 120},
}


@pytest.fixture(scope="module")
def samples() -> dict[str, list[tuple[str | None, str, str]]]:
    """(variant, input, reference) rows of every task, every Code variant and every Words subject."""
    out: dict[str, list[tuple[str | None, str, str]]] = {}
    for slug, params in SMALL_PARAMS.items():
        n = 14 if slug in ("code", "words") else 4
        extra = {"subjects": list(WORDS_SUBJECTS)} if slug == "words" else {}
        frame = get_task(slug).generate(n, 7, **params, **extra)
        out[slug] = list(zip(frame["variant"], frame["input"], frame["reference"]))
    return out


@pytest.fixture(scope="module")
def tokenizer():
    return build_char_tokenizer(task_alphabet_corpus())


def test_special_token_ids(tokenizer) -> None:
    assert tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [0, 1, 2, 3, 4, 5]
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    assert tokenizer("ab")["input_ids"] == tokenizer("ab", add_special_tokens=False)["input_ids"]


def test_vocabulary_is_sorted_characters(tokenizer) -> None:
    vocab = tokenizer.get_vocab()
    chars = sorted((tok for tok in vocab if tok not in SPECIAL_TOKENS), key=vocab.__getitem__)
    assert chars == sorted(chars) and all(len(c) == 1 for c in chars)
    assert {"⊗", "∧", "¬", "→", "↔", "∨", "\n", " "} <= set(chars)


@pytest.mark.parametrize("slug", list(SMALL_PARAMS))
def test_round_trip_of_every_task(tokenizer, samples, slug: str) -> None:
    variants = set()
    for variant, inp, ref in samples[slug]:
        variants.add(variant)
        task = get_task(slug, variant)
        for text in (inp, ref, task.prompt(inp), task.render_answer(ref)):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            assert tokenizer.unk_token_id not in ids, text
            assert len(ids) == len(text)  # one token per character
            assert tokenizer.decode(ids) == text
    if slug == "code":
        assert variants == set(CODE_VARIANTS)
    if slug == "words":
        assert variants == set(WORDS_SUBJECTS)


def test_unknown_character_maps_to_unk(tokenizer) -> None:
    assert tokenizer("a\u263ab", add_special_tokens=False)["input_ids"][1] == tokenizer.unk_token_id


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(sorted(set("".join(task_alphabet_corpus())))), max_size=80))
def test_round_trip_property(text: str) -> None:
    """One id per character, and back — for texts that do not spell a special token (``<pad>`` written out
    is one token, as it should be; hypothesis found it in CI)."""
    tok = _shared_tokenizer()
    assume(not any(special in text for special in tok.all_special_tokens))
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)
    assert tok.decode(ids) == text


@functools.cache
def _shared_tokenizer():
    return build_char_tokenizer(task_alphabet_corpus())


def test_template_never_mentions_system() -> None:
    assert "system" not in CHAT_TEMPLATE.lower()


@pytest.mark.parametrize("slug", list(SMALL_PARAMS))
def test_chat_template_keeps_only_the_test_block(tokenizer, samples, tmp_path, slug: str) -> None:
    tokenizer.save_pretrained(tmp_path)
    loaded = load_tokenizer(tmp_path)
    for variant, inp, _ in samples[slug][:3]:
        task = get_task(slug, variant)
        prompt = task.prompt(inp)
        rendered = loaded.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
        )
        block = task.test_block(inp)
        marker = (
            "Now, solve for the test Input.\n"
            if slug == "code"
            else ("Please answer the following as demonstrated before:\n")
        )
        expected = block.split(marker)[-1]
        assert rendered == "<s>" + expected + "<sep>"
        assert render_prompt(loaded, prompt) == rendered
        assert extract_test_block(prompt) == expected
        assert inp in rendered
        assert "Example 1:" not in rendered  # the few-shot block is cut away


def test_chat_template_exact_matrix_prompt(tokenizer) -> None:
    task = get_task("kronecker")
    rendered = render_prompt(tokenizer, task.prompt("A=\n1 2\nB=\n3 4"))
    assert rendered == "<s>A=\n1 2\nB=\n3 4\nSolution:\n<sep>"


def test_chat_template_without_marker_uses_the_whole_message(tokenizer) -> None:
    assert render_prompt(tokenizer, "hello") == "<s>hello<sep>"
    chat = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    assert tokenizer.apply_chat_template(chat, tokenize=False) == "<s>x<sep>y</s>"


@pytest.mark.parametrize("slug", list(SMALL_PARAMS))
def test_cot_prompts_reach_the_model_marked(tokenizer, samples, slug: str) -> None:
    """The two prompt styles are two inputs: ``<cot>`` after ``<s>`` for a cot prompt, nothing for direct."""
    for variant, inp, _ in samples[slug][:2]:
        task = get_task(slug, variant)
        direct = render_prompt(tokenizer, task.prompt(inp, style="direct"))
        cot = render_prompt(tokenizer, task.prompt(inp, style="cot"))
        assert cot == "<s><cot>" + direct.removeprefix("<s>")
        assert cot == "<s>" + model_input(task.prompt(inp, style="cot")) + "<sep>"
        assert tokenizer(cot, add_special_tokens=False)["input_ids"][:2] == [1, 5]
