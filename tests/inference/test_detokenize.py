"""Per-token texts: they concatenate to the decoded text, and split characters go to the completing token."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.inference import token_texts


def _decode(tok, ids):
    return tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)


def test_multibyte_character_goes_to_completing_token(byte_bpe_tokenizer):
    tok = byte_bpe_tokenizer
    ids = tok("a 😀 b", add_special_tokens=False)["input_ids"]
    texts = token_texts(tok, ids)
    assert "".join(texts) == "a 😀 b"
    emoji_tokens = [t for t in texts if "😀" in t]
    assert len(emoji_tokens) == 1  # the 4 bytes are split over tokens; only the last one carries the char
    first_byte_token = texts.index(emoji_tokens[0])
    assert texts[first_byte_token - 1] == ""  # an earlier byte token of the same character


def test_special_tokens_have_empty_text(byte_bpe_tokenizer):
    tok = byte_bpe_tokenizer
    ids = tok("the cat", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    texts = token_texts(tok, ids)
    assert texts[-1] == "" and "".join(texts) == "the cat"


def test_cut_inside_a_character_keeps_the_replacement(byte_bpe_tokenizer):
    tok = byte_bpe_tokenizer
    ids = tok("x😀", add_special_tokens=False)["input_ids"][:-1]  # drop the last byte
    texts = token_texts(tok, ids)
    assert "".join(texts) == _decode(tok, ids)
    assert texts[-1].endswith("\ufffd")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_texts_concatenate_to_decode(byte_bpe_tokenizer, text):
    tok = byte_bpe_tokenizer
    ids = tok(text, add_special_tokens=False)["input_ids"]
    texts = token_texts(tok, ids)
    assert len(texts) == len(ids)
    assert "".join(texts) == _decode(tok, ids) == text


@settings(max_examples=30, deadline=None)
@given(
    st.text(alphabet="ab 日😀é\n", max_size=12),
    st.text(alphabet="ab 日😀é\n", min_size=1, max_size=12),
)
def test_context_does_not_change_byte_level_texts(byte_bpe_tokenizer, before, after):
    tok = byte_bpe_tokenizer
    ctx = tok(before, add_special_tokens=False)["input_ids"]
    ids = tok(after, add_special_tokens=False)["input_ids"]
    assert "".join(token_texts(tok, ids, context_ids=ctx)) == _decode(tok, ids)


def test_a_harmony_tokenizer_keeps_its_special_tokens(byte_bpe_tokenizer):
    """gpt-oss's channel markers are special tokens: a tokenizer marked for a harmony model keeps their texts
    (the final channel can be found), any other drops them as before (docs/reasoning.md §1)."""
    import copy

    from saltbench.inference.detokenize import keep_special_tokens

    tok = copy.deepcopy(byte_bpe_tokenizer)
    ids = tok("<|im_start|>the cat<|im_end|>", add_special_tokens=False)["input_ids"]
    assert "".join(token_texts(tok, ids)) == "the cat"
    assert "".join(token_texts(keep_special_tokens(tok), ids)) == "<|im_start|>the cat<|im_end|>"
