"""Generation records <-> Parquet frames: schema, round trip, validation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from helpers.artifact_samples import generation_record
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.inference import (
    GENERATION_COLUMNS,
    GenerationRecord,
    frame_to_records,
    records_to_frame,
)


def _assert_same(a: GenerationRecord, b: GenerationRecord) -> None:
    for name in ("token_ids", "token_offsets", "chosen_logprobs", "topk_ids", "topk_logprobs", "entropy"):
        x, y = getattr(a, name), getattr(b, name)
        if a.num_generated_tokens == 0:  # k of a row without tokens is only known from other rows
            assert x.dtype == y.dtype and x.size == y.size == 0, name
            continue
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
    assert (a.token_texts, a.text, a.finish_reason, a.num_prompt_tokens, a.error) == (
        b.token_texts,
        b.text,
        b.finish_reason,
        b.num_prompt_tokens,
        b.error,
    )


def test_offsets_reconstruct_text():
    record = generation_record(np.random.default_rng(0), 30)
    offsets = [*record.token_offsets.tolist(), len(record.text)]
    assert [record.text[offsets[i] : offsets[i + 1]] for i in range(30)] == list(record.token_texts)


def test_schema_and_meta_columns():
    rng = np.random.default_rng(1)
    records = [
        generation_record(rng, 3),
        generation_record(rng, 0, finish="error"),
        generation_record(rng, 5, finish="eos"),
    ]
    frame = records_to_frame(records, {"sample_id": ["s0", "s1", "s2"], "task": ["dna"] * 3})
    assert frame.columns == ["sample_id", "task", *GENERATION_COLUMNS]
    assert dict(frame.select(list(GENERATION_COLUMNS)).schema) == GENERATION_COLUMNS
    assert frame["num_generated_tokens"].to_list() == [3, 0, 5]
    assert frame["finish_reason"].to_list() == ["length", "error", "eos"]
    assert frame["error"].to_list() == [None, "prompt too long", None]
    assert frame["topk_ids"][0].to_list() == records[0].topk_ids.tolist()


def test_meta_validation():
    records = [generation_record(np.random.default_rng(2), 2)]
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
    records = [generation_record(rng, n, k, finishes[i % 3]) for i, n in enumerate(lengths)]
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
