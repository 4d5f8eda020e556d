"""The eligibility rule (docs/metrics.md §10): which models and cells enter pooled and compared estimates."""

from __future__ import annotations

import polars as pl
from helpers.synthetic_tables import synthetic_metrics, synthetic_units
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.analysis import (
    auroc_unit_counts,
    eligibility_table,
    eligible_metrics,
    eligible_styles,
    eligible_units,
    exclusion_lines,
    findings_markdown,
    generation_health,
    mark_eligible,
)


def _health(answered: dict[tuple[str, str], float], responses: int = 10) -> pl.DataFrame:
    rows = [
        {"model": m, "style": s, "task": "dna", "responses": responses, "answered": a}
        for (m, s), a in answered.items()
    ]
    return pl.DataFrame(rows)


def _counts(cells: dict[tuple[str, str, str], tuple[int, int]]) -> pl.DataFrame:
    rows = [
        {"model": m, "style": s, "task": "dna", "granularity": g, "n_correct": c, "n_incorrect": i}
        for (m, s, g), (c, i) in cells.items()
    ]
    return pl.DataFrame(rows)


@settings(max_examples=60, deadline=None)
@given(
    answered=st.integers(0, 10).map(lambda k: k / 10),  # a share of 10 responses
    n_correct=st.integers(0, 50),
    n_incorrect=st.integers(0, 50),
    share=st.floats(0, 1),
    floor=st.integers(1, 30),
)
def test_a_cell_is_eligible_exactly_when_its_model_answers_enough_and_it_has_both_classes(
    answered, n_correct, n_incorrect, share, floor
):
    table = eligibility_table(
        _health({("m", "direct"): answered}),
        _counts({("m", "direct", "atom"): (n_correct, n_incorrect)}),
        min_answered_share=share,
        min_model_units=floor,
    )
    row = table.row(0, named=True)
    assert row["eligible_model"] == (answered >= share)
    assert row["eligible"] == (answered >= share and min(n_correct, n_incorrect) >= floor)
    assert (row["reason"] == "") == row["eligible"]
    if not row["eligible_model"]:
        assert row["reason"].startswith("answered share")


def test_the_answered_share_pools_the_tasks_by_their_responses():
    health = pl.DataFrame(
        {
            "model": "m",
            "style": "cot",
            "task": ["dna", "code"],
            "responses": [30, 10],
            "answered": [0.4, 1.0],  # 12 + 10 of 40 answered: 0.55
        }
    )
    counts = _counts({("m", "cot", "atom"): (20, 20)})
    kept = eligibility_table(health, counts, min_answered_share=0.55, min_model_units=1)
    assert kept["answered"].to_list() == [0.55, 0.55] and kept["eligible_model"].all()
    dropped = eligibility_table(health, counts, min_answered_share=0.56, min_model_units=1)
    assert not dropped["eligible_model"].any()


def test_a_cell_without_scored_units_is_excluded_with_its_counts():
    health = pl.DataFrame(
        {"model": "m", "style": "cot", "task": ["dna", "code"], "responses": 5, "answered": 1.0}
    )
    table = eligibility_table(
        health, _counts({("m", "cot", "atom"): (20, 20)}), min_answered_share=0.5, min_model_units=5
    )
    code = table.filter(pl.col("task") == "code").row(0, named=True)
    assert (code["n_correct"], code["n_incorrect"], code["eligible"]) == (0, 0, False)
    assert code["reason"] == "0 correct and 0 incorrect units (fewer than 5 of either)"


def _run(models=("good", "mute")) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Synthetic units and metrics of ``models``; ``mute`` answered nothing."""
    units = synthetic_units(models=models, styles=("direct",), tasks=("dna",), n_samples=12, seed=4)
    units = units.with_columns(
        answer_status=pl.when(pl.col("model") == "mute").then(pl.lit("truncated")).otherwise("answer_status")
    )
    counts = auroc_unit_counts(units, confidence="mean_probability")
    table = eligibility_table(generation_health(units), counts, min_answered_share=0.5, min_model_units=3)
    metrics = synthetic_metrics(models=models, styles=("direct",), tasks=("dna",), seed=4)
    return units, metrics, table


def test_metrics_units_and_styles_of_an_excluded_model_are_dropped_and_its_accuracy_rows_too():
    units, metrics, table = _run()
    assert eligible_styles(table) == {("good", "direct")}
    kept = eligible_metrics(metrics, table)
    assert set(kept["model"]) == {"good"}
    assert set(pl.concat(eligible_units([units], table))["model"]) == {"good"}
    marked = mark_eligible(pl.DataFrame({"model": ["good", "mute", "other"], "style": "direct"}), table)
    assert marked["eligible"].to_list() == [True, False, False]


def test_an_excluded_cell_of_an_eligible_model_keeps_its_accuracy_rows_only():
    units, metrics, table = _run(models=("good",))
    table = table.with_columns(
        eligible=pl.col("eligible") & (pl.col("granularity") != "line"),
        reason=pl.when(pl.col("granularity") == "line").then(pl.lit("few")).otherwise("reason"),
    )
    kept = eligible_metrics(metrics, table)
    line = kept.filter(pl.col("granularity") == "line")
    assert set(line["metric"]) == {"precision", "recall"} & set(metrics["metric"])
    assert (
        kept.filter(pl.col("granularity") == "atom").height
        == metrics.filter(pl.col("granularity") == "atom").height
    )
    assert "line" not in set(pl.concat(eligible_units([units], table))["granularity"])
    (line,) = exclusion_lines(table)
    assert line.startswith("cells of eligible models with too few correct or incorrect units:")
    assert "1 line" in line


def test_a_model_that_answers_nothing_is_named_in_section_0_only():
    units, metrics, table = _run()
    tables = {
        "generation_health": generation_health(units),
        "eligibility": table,
    }
    page = findings_markdown(tables)
    sections = page.split("\n## ")
    assert [s.splitlines()[0] for s in sections if "mute" in s] == ["0. What the responses hold"]
    assert "- mute (direct): answered share 0.000 (below 0.5)." in page
    assert "In no estimate below: 1 model × style pair with too few answered responses (named in §0)." in page
