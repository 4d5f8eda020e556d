"""Generation records <-> Parquet frames: schema, round trip, validation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.inference import (
    GENERATION_COLUMNS,
    GENERATION_SCHEMA,
    GenerationRecord,
    TokenScores,
    frame_to_records,
    records_to_frame,
)


def _record(rng: np.random.Generator, n: int, k: int = 20, finish: str = "length") -> GenerationRecord:
    if finish == "error":
        return GenerationRecord.failed("prompt too long", num_prompt_tokens=int(rng.integers(1, 99)), k=k)
    logits = rng.normal(size=(n, 50)).astype(np.float32)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    top = np.argsort(-logp, axis=1)[:, :k]
    scores = TokenScores(
        token_ids=top[:, 0].astype(np.int32),
        chosen_logprobs=np.take_along_axis(logp, top[:, :1], 1)[:, 0],
        topk_ids=top.astype(np.int32),
        topk_logprobs=np.take_along_axis(logp, top, 1),
        entropy=-(np.exp(logp) * logp).sum(1).astype(np.float32),
    )
    texts = [rng.choice(["a", " b", "", "é", "\n", "😀", "**"]) for _ in range(n)]
    return GenerationRecord.from_scores(scores, texts, finish_reason=finish, num_prompt_tokens=int(rng.integers(1, 99)))


def _assert_same(a: GenerationRecord, b: GenerationRecord) -> None:
    for name in ("token_ids", "token_offsets", "chosen_logprobs", "topk_ids", "topk_logprobs", "entropy"):
        x, y = getattr(a, name), getattr(b, name)
        if a.num_generated_tokens == 0:  # k of a row without tokens is only known from other rows
            assert x.dtype == y.dtype and x.size == y.size == 0, name
            continue
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
    assert (a.token_texts, a.text, a.finish_reason, a.num_prompt_tokens, a.error) == (
        b.token_texts, b.text, b.finish_reason, b.num_prompt_tokens, b.error
    )


def test_offsets_reconstruct_text():
    record = _record(np.random.default_rng(0), 30)
    offsets = [*record.token_offsets.tolist(), len(record.text)]
    assert [record.text[offsets[i] : offsets[i + 1]] for i in range(30)] == list(record.token_texts)


def test_schema_and_meta_columns():
    rng = np.random.default_rng(1)
    records = [_record(rng, 3), _record(rng, 0, finish="error"), _record(rng, 5, finish="eos")]
    frame = records_to_frame(records, {"sample_id": ["s0", "s1", "s2"], "task": ["dna"] * 3})
    assert frame.columns == ["sample_id", "task", *GENERATION_COLUMNS]
    assert dict(frame.select(GENERATION_COLUMNS).schema) == GENERATION_SCHEMA
    assert frame["num_generated_tokens"].to_list() == [3, 0, 5]
    assert frame["finish_reason"].to_list() == ["length", "error", "eos"]
    assert frame["error"].to_list() == [None, "prompt too long", None]
    assert frame["topk_ids"][0].to_list() == records[0].topk_ids.tolist()


def test_meta_validation():
    records = [_record(np.random.default_rng(2), 2)]
    with pytest.raises(ValueError, match="'sample_id' has 2 values, expected 1"):
        records_to_frame(records, {"sample_id": ["a", "b"]})
    with pytest.raises(ValueError, match="'text' clashes"):
        records_to_frame(records, {"text": ["a"]})
    with pytest.raises(ValueError, match="lacks generation columns"):
        frame_to_records(pl.DataFrame({"text": ["a"]}))


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 12), min_size=0, max_size=6),
    k=st.sampled_from([1, 5, 20]),
    seed=st.integers(0, 2**16),
)
def test_round_trip_through_parquet(tmp_path_factory, lengths, k, seed):
    rng = np.random.default_rng(seed)
    finishes = ["eos", "length", "error"]
    records = [_record(rng, n, k, finishes[i % 3]) for i, n in enumerate(lengths)]
    frame = records_to_frame(records, {"sample_id": [f"s{i}" for i in range(len(records))]})
    path = tmp_path_factory.mktemp("pq") / "g.parquet"
    frame.write_parquet(path)
    back = frame_to_records(pl.read_parquet(path))
    assert len(back) == len(records)
    for a, b in zip(records, back):
        _assert_same(a, b)
    sliced = frame.slice(1) if len(records) > 1 else frame  # offset-sliced arrow buffers
    for a, b in zip(records[1:] if len(records) > 1 else records, frame_to_records(sliced)):
        _assert_same(a, b)
