"""The JSONL schema (docs/backends.md §9.2): any generations table written by the export reads back to the
same table — texts in any script, −∞, NaN ("absent"), padding ids and error rows included."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from saltbench.inference import GenerationRecord, records_to_frame
from saltbench.inference.imports import PAD_ID, read_jsonl, string_ids, to_record, write_jsonl

K = 20
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=4)
LOGPROB = st.one_of(
    st.floats(-60, 0, width=32), st.just(float("-inf")), st.just(float("nan"))
)  # chosen and alternatives


@st.composite
def records(draw) -> GenerationRecord:
    if draw(st.integers(0, 9)) == 0:  # an error row
        return GenerationRecord.failed(draw(TEXT), num_prompt_tokens=draw(st.integers(0, 9)), k=K)
    texts = draw(st.lists(TEXT, max_size=6))
    n = len(texts)
    floats = st.lists(LOGPROB, min_size=n * K, max_size=n * K)
    lengths = np.fromiter(map(len, texts), np.int64, n)
    return GenerationRecord(
        token_ids=np.asarray(
            draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=n, max_size=n)), np.int32
        ),
        token_texts=tuple(texts),
        token_offsets=(np.cumsum(lengths) - lengths).astype(np.int32),
        chosen_logprobs=np.asarray(draw(st.lists(LOGPROB, min_size=n, max_size=n)), np.float32),
        topk_ids=np.full((n, K), PAD_ID, np.int32)
        if draw(st.booleans())
        else np.arange(n * K, dtype=np.int32).reshape(n, K),
        topk_logprobs=np.asarray(draw(floats), np.float32).reshape(n, K),
        entropy=np.asarray(
            draw(st.lists(st.floats(0, 12, width=32) | st.just(float("nan")), min_size=n, max_size=n)),
            np.float32,
        ),
        text="".join(texts),
        finish_reason=draw(st.sampled_from(["eos", "length"])),
        num_prompt_tokens=draw(st.integers(0, 4096)),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(records(), min_size=1, max_size=4), st.lists(TEXT | st.none(), min_size=4, max_size=4))
def test_any_table_reads_back_identically(tmp_path, batch, variants):
    n = len(batch)
    meta = {
        "sample_id": [f"s{i}" for i in range(n)],
        "task": ["dna"] * n,
        "variant": [variants[i % 4] for i in range(n)],
        "model": ["m"] * n,
        "style": ["direct"] * n,
        "prompt": [f"prompt {v}" for v in variants[:n]],
    }
    frame = records_to_frame(batch, meta)
    path = tmp_path / "g.jsonl"
    assert write_jsonl(frame, path) == n
    back = records_to_frame([to_record(r, path=path, k=K) for r in read_jsonl(path)], meta)
    assert_frame_equal(back, frame)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")[:-1]]
    assert [line["prompt"] for line in lines] == meta["prompt"]  # one line per row, meta written as it is


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=8), st.data())
def test_string_ids_give_equal_strings_one_negative_id(tokens, data):
    alternatives = [data.draw(st.lists(st.sampled_from("abcde"), max_size=3)) for _ in tokens]
    ids, top = string_ids(tokens, alternatives, 2)
    everything = [*tokens, *(a for row in alternatives for a in row)]
    first = {s: everything.index(s) for s in everything}
    order = sorted(first, key=first.get)  # type: ignore[arg-type]
    assert ids.tolist() == [-(order.index(t) + 1) for t in tokens]
    for row, alts in zip(top.tolist(), alternatives):
        assert row == [-(order.index(a) + 1) for a in alts[:2]] + [PAD_ID] * (2 - min(len(alts), 2))
