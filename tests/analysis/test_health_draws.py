"""Generation health counts the draws (docs/generation.md §7): expected n × responses for the models asked,
rows present, error rows and the share answered, per (model, style, task); zeros without draws."""

from __future__ import annotations

import math

import polars as pl

from saltbench.analysis import DRAW_HEALTH_COLUMNS, generation_health
from saltbench.core.contracts import GENERATION_HEALTH_TABLE


def responses(model: str, task: str, n: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "model": model,
            "style": "direct",
            "task": task,
            "sample_id": [f"s{i}" for i in range(n)],
            "answer_status": "answered",
            "finish_reason": "eos",
            "num_generated_tokens": 10,
            "num_reasoning_tokens": 0,
            "max_new_tokens": 20,
        }
    )


def test_without_draws_the_counts_are_zero_and_the_table_keeps_its_contract():
    health = generation_health(responses("m", "dna", 3))
    assert health.select(*DRAW_HEALTH_COLUMNS.keys()).row(0)[:3] == (0, 0, 0)
    assert math.isnan(health["draws_answered"][0])
    GENERATION_HEALTH_TABLE.validate(health, "health")


def test_draws_are_counted_per_cell_and_only_expected_of_the_models_asked():
    units = pl.concat([responses("m", "dna", 2), responses("m", "logic", 3), responses("imported", "dna", 4)])
    statuses = ["answered", "error", "answered", "no_fence", "answered", "truncated"]  # m, dna: 6 of 6
    draws = pl.DataFrame({"model": "m", "style": "direct", "task": "dna", "answer_status": statuses})
    draws = pl.concat([draws, draws.head(4).with_columns(task=pl.lit("logic"))])  # m, logic: 4 of 9
    health = generation_health(units, draws, n_draws=3, draw_models=["m"])
    GENERATION_HEALTH_TABLE.validate(health, "health")
    rows = {(r["model"], r["task"]): r for r in health.iter_rows(named=True)}
    assert [rows["m", "dna"][c] for c in DRAW_HEALTH_COLUMNS] == [6, 6, 1, 0.5]
    assert [rows["m", "logic"][c] for c in DRAW_HEALTH_COLUMNS] == [9, 4, 1, 0.5]
    imported = rows["imported", "dna"]
    assert (imported["draws_expected"], imported["draws"], imported["draw_errors"]) == (0, 0, 0)
