"""The findings page: every number is a table's number; missing estimates say "not enough data"."""

from __future__ import annotations

import re

import polars as pl
from helpers.synthetic_tables import synthetic_interventions, synthetic_metrics, synthetic_units

from saltbench.analysis import (
    accuracy_by_placement,
    auroc_unit_counts,
    comparisons,
    dominance,
    eligibility_table,
    findings_markdown,
    fit_intervention_effects,
    generation_health,
    granularity_deltas,
    granularity_table,
    label_noise_sensitivity,
    reasoning_tradeoff,
)
from saltbench.analysis._findings import NOT_ENOUGH, fmt

NUMBER = re.compile(r"-?\d+\.\d{3}\b")


def table_numbers(tables: dict[str, pl.DataFrame]) -> set[str]:
    """Every float of every table, printed as the page prints numbers."""
    out = set()
    for table in tables.values():
        for name, dtype in table.schema.items():
            if dtype.is_float():
                out |= {fmt(v) for v in table[name].to_list()}
    return out


def assert_numbers_come_from_tables(page: str, tables: dict[str, pl.DataFrame]) -> int:
    numbers = NUMBER.findall(page)
    known = table_numbers(tables)
    strays = [n for n in numbers if n not in known]
    assert not strays, f"numbers on the page that no table holds: {strays[:10]}"
    return len(numbers)


def _tables(n_samples: int, tasks: tuple[str, ...]) -> dict[str, pl.DataFrame]:
    metrics = synthetic_metrics(models=("model-a",), tasks=tasks, seed=4)
    units = synthetic_units(styles=("direct",), tasks=tasks[:2], n_samples=12, seed=4)
    cmps = comparisons([("model-a", "direct"), ("model-a", "cot")], [])
    health = generation_health(units)
    interventions = synthetic_interventions(models=("model-a",), tasks=tasks[:2], n_samples=n_samples, seed=4)
    return {
        "generation_health": health,
        "eligibility": eligibility_table(
            health, auroc_unit_counts(units), min_answered_share=0.5, min_model_units=10
        ),
        "dominance": dominance(metrics),
        "granularity": granularity_table(metrics, deltas=granularity_deltas(units, n_resamples=50)),
        "interventions": fit_intervention_effects(interventions, n_resamples=20),
        "interventions_by_placement": accuracy_by_placement(interventions, n_resamples=20),
        "reasoning_tradeoff": reasoning_tradeoff(metrics, cmps, n_resamples=50),
        "label_noise": label_noise_sensitivity(units, epsilons=(0.0, 0.2), n_replicates=3),
    }


def test_every_number_on_the_page_is_in_a_table():
    tables = _tables(n_samples=30, tasks=("dna", "code", "logic", "matmul", "kronecker", "words"))
    page = findings_markdown(tables)
    assert assert_numbers_come_from_tables(page, tables) > 20
    assert page.count("## ") == 7 and NOT_ENOUGH not in page.split("## 4.")[1].split("## 5.")[0]
    interventions = page.split("## 3.")[1].split("## 4.")[0]
    assert "samples; slopes in log-odds of a correct next atom per unit of the fraction):" in interventions
    summary = page.split("## What this run estimated")[1].split("## 1.")[0]
    assert NOT_ENOUGH not in summary and summary.count("\n- ") >= 5


def test_thin_data_says_not_enough_data_with_the_reason():
    tables = _tables(n_samples=3, tasks=("dna", "matmul"))  # 3 samples: no intervention fit; 2 tasks: no test
    page = findings_markdown(tables)
    interventions = page.split("## 3.")[1].split("## 4.")[0]
    assert f"{NOT_ENOUGH} (too few samples)" in interventions
    tradeoff = page.split("## 4.")[1].split("## 5.")[0]
    assert f"{NOT_ENOUGH} (too few pairs)" in tradeoff
    assert_numbers_come_from_tables(page, tables)
    empty = findings_markdown({})
    assert empty.count(f"- {NOT_ENOUGH}") == 8 and not NUMBER.findall(empty)  # 7 tables, the summary
    assert "not enough data for: which confidence function wins; ranking at atom resolution;" in empty


def test_identical_conditions_are_a_result_not_missing_data():
    """A comparison whose paired differences are all zero (status no_variation) reads as "no difference",
    in its section and in the opening summary, never as "not enough data"."""
    tables = _tables(n_samples=30, tasks=("dna", "code", "logic", "matmul", "kronecker", "words"))
    tables["reasoning_tradeoff"] = tables["reasoning_tradeoff"].with_columns(
        status_precision=pl.lit("no_variation"), delta_precision=pl.lit(float("nan"))
    )
    page = findings_markdown(tables)
    tradeoff = page.split("## 4.")[1].split("## 5.")[0]
    pairs = tables["reasoning_tradeoff"]["n_pairs"][0]
    assert f"Δ precision: no difference in any of the {pairs} pairs" in tradeoff
    assert NOT_ENOUGH not in tradeoff
    assert "Δ precision: no difference in any pair" in page.split("## 1.")[0]


def test_models_whose_estimates_rest_on_few_answered_responses_are_named_first():
    """A model whose responses were mostly cut off is named in the opening summary and in section 0, with its
    shares; a healthy one is not (analysis.min_answered_share)."""
    tables = _tables(n_samples=30, tasks=("dna", "matmul"))
    health = tables["generation_health"]
    tables["generation_health"] = pl.concat(
        [
            health,
            health.with_columns(model=pl.lit("thinker"), answered=pl.lit(0.25), truncated=pl.lit(0.75)),
        ]
    )
    page = findings_markdown(tables, min_answered=0.9)
    summary = page.split("## What this run estimated")[1].split("## 0.")[0]
    assert "1 model × style pair answered fewer than 90% of their prompts (named in §0)." in summary
    assert "thinker" not in summary
    section = page.split("## 0.")[1].split("## 1.")[0]
    assert "- **thinker** (direct): 0.250 answered, 0.750 cut off by the budget" in section
    assert "model-a" not in section
    assert_numbers_come_from_tables(page, tables)
    healthy = findings_markdown(_tables(n_samples=30, tasks=("dna", "matmul")))
    assert "Every model answered at least 90% of its prompts in every style." in healthy


def test_planted_truth_has_a_section_only_with_a_recovery_table():
    tables = _tables(n_samples=30, tasks=("dna", "code", "logic", "matmul", "kronecker", "words"))
    assert "Planted truth" not in findings_markdown(tables)
    tables["recovery"] = pl.DataFrame(
        {
            "model": ["sim"] * 3,
            "style": ["direct"] * 3,
            "task": ["dna", "dna", "code"],
            "quantity": ["atom_auroc", "truncated_share", "atom_auroc"],
            "planted": [0.856, 0.0, 0.856],
            "estimate": [0.85, 0.01, 0.9],
            "ci_low": [0.8, 0.0, 0.87],
            "ci_high": [0.9, 0.03, 0.93],
            "error": [-0.006, 0.01, 0.044],
            "inside": [True, True, False],
        }
    )
    page = findings_markdown(tables)
    section = page.split("## 6. Planted truth")[1]
    assert "Of 3 values the simulated models planted, 2 lie inside" in section
    assert "(3 compared; 0 rows not derivable" in section
    # an estimate of a cell with too few correct or wrong units: planted, not compared
    held = tables["recovery"].with_columns(inside=pl.Series([True, True, None]))
    assert "(2 compared, 1 not: their cells rank too few correct or wrong units;" in findings_markdown(
        {**tables, "recovery": held}
    )
    assert "- atom_auroc: 1 of 2 inside, mean error 0.019." in section
    assert "- Planted truth: Of 3 values the simulated models planted, 2 lie inside" in page.split("## 0.")[0]


def test_an_auroc_resting_on_too_few_units_is_named_unreliable_and_no_finding():
    tables = _tables(12, ("dna", "matmul"))
    counts = tables["granularity"].with_columns(
        n_correct=pl.when(pl.col("task") == "dna").then(3).otherwise(150),
        n_incorrect=pl.lit(80, pl.Int64),
    )
    page = findings_markdown({**tables, "granularity": counts}, min_units=20)
    section = page.split("## 2.")[1].split("\n## ")[0]
    dna = [line for line in section.splitlines() if line.startswith("- dna, direct")]
    matmul = [line for line in section.splitlines() if line.startswith("- matmul, direct")]
    assert "3 correct, 80 incorrect units: unreliable, fewer than 20 of either" in dna[0]
    assert "no finding" in dna[0] and "at atom resolution" not in dna[0]
    assert "150 correct, 80 incorrect units)" in matmul[0] and "no finding" not in matmul[0]
    summary = page.split("## What this run estimated")[1].split("\n## ")[0]
    assert "rest on at least 20 correct and 20 incorrect units" in summary
    # dna, both styles: named as no finding, not counted
    assert "no finding where an AUROC rests on fewer units: dna direct, dna cot" in summary
    assert "lower at atom level in 0 of 1 task × style cells" in summary  # matmul direct; cot: no interval
    assert "no finding where the difference has no interval: matmul cot" in summary
    assert "[the explorer](explorer/index.html)" in page


def test_atom_vs_line_is_worded_by_its_paired_interval_and_the_summary_names_the_cells_it_counts():
    """Lower only when the whole interval of Δ atom − line lies below 0, higher when above, "no difference"
    when it covers 0 — whatever the two means say; the summary counts the cells by that rule and names
    each."""
    tables = _tables(12, ("dna", "matmul", "code"))
    intervals = {"dna": (-0.03, -0.01), "matmul": (-0.01, 0.02), "code": (0.004, 0.05)}
    atom = (pl.col("granularity") == "atom") & (pl.col("metric") == "auroc_pooled")
    granularity = tables["granularity"].with_columns(
        n_correct=pl.lit(100, pl.Int64),
        n_incorrect=pl.lit(100, pl.Int64),
        n_models_delta=pl.when(atom).then(1).otherwise(0),
        **{
            column: pl.when(atom)
            .then(pl.col("task").replace_strict({t: v[i] for t, v in intervals.items()}, default=None))
            .otherwise(float("nan"))
            for i, column in enumerate(("delta_ci_low", "delta_ci_high"))
        },
        delta_vs_line=pl.when(atom).then(-0.005).otherwise(float("nan")),
    )
    tables = {**tables, "granularity": granularity}
    page = findings_markdown(tables)
    section = page.split("## 2.")[1].split("\n## ")[0]
    verdicts = {
        task: line.split("paired over prompts: ")[1].split(";")[0].removesuffix(").")
        for line in section.splitlines()
        for task in intervals
        if line.startswith(f"- {task}, direct")
    }
    assert verdicts == {
        "dna": "lower at atom resolution",
        "matmul": "no difference",
        "code": "higher at atom resolution",
    }
    summary = page.split("## What this run estimated")[1].split("\n## ")[0]
    assert "pooled AUROC is lower at atom level in 2 of 6 task × style cells" in summary
    assert (
        "lower: dna direct, dna cot; higher: code direct, code cot; no difference: matmul direct, matmul cot"
        in summary
    )
    assert_numbers_come_from_tables(page, tables)


def test_placements_are_worded_by_their_paired_intervals():
    """Each placement comparison the page states carries its interval and is worded by it; one without an
    interval (too few samples) is "not enough data", with no number; the summary names each cell it
    counts."""
    tables = _tables(30, ("dna", "matmul"))
    placement = tables["interventions_by_placement"]
    intervals = {"local": (-0.2, -0.05), "random": (-0.01, 0.03)}
    compared = pl.col("placement").is_in(list(intervals))
    rigged = placement.with_columns(
        **{
            column: pl.when(compared & (pl.col("task") == "dna"))
            .then(pl.col("placement").replace_strict({p: v[i] for p, v in intervals.items()}, default=None))
            .when(compared)
            .then(float("nan"))
            .otherwise(pl.col(column))
            for i, column in enumerate(("delta_ci_low_vs_distant", "delta_ci_high_vs_distant"))
        }
    )
    tables = {**tables, "interventions_by_placement": rigged}
    page = findings_markdown(tables)
    section = page.split("## 3.")[1].split("## 4.")[0]
    dna = next(line for line in section.splitlines() if line.startswith("- model-a, dna, next-atom accuracy"))
    assert re.search(r"local − distant -?\d\.\d{3} \[-0\.200, -0\.050\] \(lower\)", dna)
    assert re.search(r"random − distant -?\d\.\d{3} \[-0\.010, 0\.030\] \(no difference\)", dna)
    matmul = next(line for line in section.splitlines() if line.startswith("- model-a, matmul, next-atom"))
    assert f"local − distant: {NOT_ENOUGH} (no interval, 30 samples)" in matmul
    summary = page.split("## What this run estimated")[1].split("\n## ")[0]
    assert "in 2 model × task × placement cells" in summary
    assert "lower: model-a dna local; no difference: model-a dna random)" in summary
    assert "no interval: model-a matmul local, model-a matmul random." in summary
    assert_numbers_come_from_tables(page, tables)


def test_a_tie_in_win_share_goes_to_the_smaller_mean_rank_in_the_headline_and_the_family():
    """ccp and mean_margin win the same share of cells; mean_margin ranks better on average, so both the
    headline and the single-pass family's best name it."""
    from saltbench.analysis._findings import _winners

    rows = [  # confidence, family, win share, mean rank
        ("ccp", "single_pass", 0.2, 9.0),
        ("mean_margin", "single_pass", 0.2, 4.5),
        ("agreement", "samples", 0.1, 11.0),
    ]
    table = pl.DataFrame(
        {
            "aspect": "ranking",
            "metric": "auroc_pooled",
            "granularity": "line",
            "flavour": "topk",
            "confidence": [r[0] for r in rows],
            "family": [r[1] for r in rows],
            "wins": [2.0, 2.0, 1.0],
            "n_cells": 10,
            "win_share": [r[2] for r in rows],
            "mean_margin": 0.01,
            "mean_rank": [r[3] for r in rows],
            "mean_value": 0.7,
        }
    )
    (line,) = [line for line in _winners(table) if line.startswith("- ranking")]
    assert "**mean_margin**" in line and "next ccp with 0.200" in line
    assert "single_pass: mean_margin (win share 0.200" in line
