"""The scoring stage's samples family (saltbench.stages.consistency): without draws the units table is left
as it is; with draws it gains the consistency columns, checked on a hand-computed case."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from saltbench.evaluation import CONSISTENCY_COLUMNS
from saltbench.inference.records import GenerationRecord, TokenScores, records_to_frame
from saltbench.stages.consistency import with_draw_consistency
from saltbench.stages.scoring import score_generations

SCORING = {"alignment": "strict", "keyword_filter": True, "fence_rule": "positional"}
FENCE = "********"


def record(text: str) -> GenerationRecord:
    """One response whose every character is a token of probability 0.9."""
    n = len(text)
    chosen = np.full(n, math.log(0.9), np.float32)
    topk_ids = np.tile(np.arange(2, dtype=np.int32), (n, 1))
    topk_lp = np.tile(np.log(np.array([0.9, 0.1], np.float32)), (n, 1))
    scores = TokenScores(np.zeros(n, np.int32), chosen, topk_ids, topk_lp, np.full(n, 0.3, np.float32))
    return GenerationRecord.from_scores(scores, list(text), finish_reason="eos", num_prompt_tokens=3)


def fenced(body: str) -> str:
    return f"{FENCE}\n{body}\n{FENCE}"


@pytest.fixture(scope="module")
def units() -> pl.DataFrame:
    """The dna units of two greedy answers: s0 ``TCT CGA`` (reference ``TCT CGA``), s1 ``AAA``."""
    gens = records_to_frame([record(fenced("TCT CGA")), record(fenced("AAA"))], {"sample_id": ["s0", "s1"]})
    data = pl.DataFrame({"sample_id": ["s0", "s1"], "variant": [None, None], "reference": ["TCT CGA", "AAA"]})
    scored = score_generations(gens, data, "dna", top_k=2)
    return scored.select(pl.lit("dna").alias("task"), pl.all())


def draws_frame(texts: dict[str, list[str]]) -> pl.DataFrame:
    rows = [(sample, d, text) for sample, drawn in texts.items() for d, text in enumerate(drawn)]
    schema = {"sample_id": pl.String, "draw": pl.Int32, "text": pl.String}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    return frame.with_columns(finish_reason=pl.lit("eos"), error=pl.lit(None, dtype=pl.String))


def test_without_draws_the_units_table_is_unchanged(units):
    assert with_draw_consistency(units, None, scoring=SCORING) is units


def test_draws_add_the_consistency_columns_hand_case(units):
    draws = draws_frame(
        {
            "s0": [fenced("TCT CGA"), fenced("TCT AAA"), "no fence at all", fenced("TCT CGA")],
            "s1": [fenced("AAA")] * 4,
        }
    )
    out = with_draw_consistency(units, draws, scoring=SCORING)
    assert out.columns == [*units.columns, *CONSISTENCY_COLUMNS]
    assert out.drop(CONSISTENCY_COLUMNS).equals(units)
    agree, entropy, distinct = CONSISTENCY_COLUMNS
    s0 = out.filter(pl.col("sample_id") == "s0", pl.col("granularity") == "atom").sort("unit_index")
    # TCT: 3 draws repeat it; CGA: 2 repeat it, one says AAA; the unfenced draw (its whole text the answer,
    # docs/confidence.md §7.3) says something else at both
    assert s0[agree].to_list() == [0.75, 0.5]
    assert s0[distinct].to_list() == [2.0, 3.0]
    expected = [
        -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)),
        -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)),
    ]
    assert s0[entropy].to_list() == pytest.approx(expected, abs=1e-12)
    generation = out.filter(pl.col("sample_id") == "s0", pl.col("granularity") == "generation")
    assert generation[agree].to_list() == [0.5] and generation[distinct].to_list() == [3.0]
    s1 = out.filter(pl.col("sample_id") == "s1")
    assert set(s1[agree].to_list()) == {1.0} and set(s1[entropy].to_list()) == {0.0}


def test_draws_of_other_prompts_are_refused(units):
    draws = draws_frame({"s0": [fenced("TCT CGA")], "s1": [fenced("AAA")], "s9": [fenced("AAA")]})
    with pytest.raises(ValueError, match="s9"):
        with_draw_consistency(units, draws, scoring=SCORING)


def test_an_empty_units_table_gets_empty_columns(units):
    out = with_draw_consistency(units.clear(), draws_frame({}), scoring=SCORING)
    assert out.height == 0 and out.columns[-3:] == list(CONSISTENCY_COLUMNS)


def test_an_empty_draws_table_gives_nan_columns(units):
    out = with_draw_consistency(units, draws_frame({}), scoring=SCORING)
    assert out.drop(CONSISTENCY_COLUMNS).equals(units)
    assert all(out[name].is_nan().all() for name in CONSISTENCY_COLUMNS)
