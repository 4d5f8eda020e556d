"""Helpers of the analysis / figure rules: options, named outputs, lazy units reading, registry entries."""

from __future__ import annotations

import polars as pl
import pytest
from helpers.synthetic_tables import synthetic_units

from saltbench.config import AnalysisConfig
from saltbench.io import write_table
from saltbench.workflow.analysis_rules import (
    ANALYSIS_DEFAULTS,
    analysis_options,
    figure_outputs,
    iter_units,
    named_paths,
    read_units,
    registry_entries,
    table_outputs,
)


class FakeOutput(dict):
    """Stands in for Snakemake's named output list (keys() and items())."""


def fake_report(path, **kwargs):
    return ("report", path, kwargs["caption"], kwargs["category"])


def test_analysis_options_defaults_overrides_and_typos():
    """Options come from the configuration model: its defaults, the given values, its validation."""
    assert analysis_options({}) == dict(ANALYSIS_DEFAULTS) == AnalysisConfig().to_dict()
    assert analysis_options({"analysis": {"reasoning_level": "sample"}})["reasoning_level"] == "sample"
    with pytest.raises(ValueError, match=r"analysis: unknown key\(s\) 'reasoning_levle'"):
        analysis_options({"analysis": {"reasoning_levle": "sample"}})
    with pytest.raises(ValueError, match=r"analysis\.reasoning_level: 'model' is not one of"):
        analysis_options({"analysis": {"reasoning_level": "model"}})
    with pytest.raises(ValueError, match=r"analysis\.position_bins: 2\.0 is not of type 'integer'"):
        analysis_options({"analysis": {"position_bins": 2.0}})


def test_table_and_figure_outputs_wrap_the_report_entry():
    files = table_outputs("leaderboard", fake_report)
    assert files["parquet"] == "results/tables/leaderboard.parquet"
    assert files["csv"] == (
        "report",
        "results/tables/leaderboard.csv",
        "../report/table_leaderboard.rst",
        "Tables",
    )
    assert table_outputs("rejection", fake_report, prefix="p_").keys() == {
        "p_parquet",
        "p_csv",
    }  # its formats
    with pytest.raises(KeyError, match="not a table of the study"):
        table_outputs("x", fake_report)
    fig = figure_outputs("dominance", "Uncertainty", fake_report)
    assert fig["pdf"] == "figures/dominance.pdf" and fig["png"][2] == "../report/figure_dominance.rst"


def test_named_paths_selects_by_prefix():
    out = FakeOutput(parquet="a.parquet", csv="a.csv", position_csv="b.csv", cells="c.parquet")
    assert named_paths(out) == {"parquet": "a.parquet", "csv": "a.csv"}
    assert named_paths(out, "position_") == {"csv": "b.csv"}
    with pytest.raises(ValueError, match="no entries named"):
        named_paths(out, "missing_")


def test_iter_units_reads_only_present_columns(tmp_path):
    """A units file scored with the topk flavour only has no full.* columns: those are skipped for it."""
    units = synthetic_units(styles=("direct",), tasks=("dna",), n_samples=2)
    write_table(units.head(3), tmp_path / "one.parquet", {}, "units")
    write_table(units.tail(2).select(pl.exclude("^full\\..*$")), tmp_path / "two.parquet", {}, "units")
    paths = [tmp_path / "one.parquet", tmp_path / "two.parquet"]
    frames = list(iter_units(paths, ["sample_id", "full.mean_probability"]))
    assert [f.columns for f in frames] == [["sample_id", "full.mean_probability"], ["sample_id"]]
    both = read_units(paths, ["sample_id", "full.mean_probability"])
    assert both["full.mean_probability"].null_count() == 2 and both.height == 5
    assert read_units([], ["a"]).is_empty()


def test_registry_entries_keeps_optional_keys(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  a: {reasoning: false}\n  b: {reasoning: true, pair_with: a}\n")
    assert registry_entries(path)["b"]["pair_with"] == "a"
    path.write_text("models: [a, b]\n")
    with pytest.raises(ValueError, match="must be a mapping"):
        registry_entries(path)


def test_the_tradeoff_from_unit_files_equals_one_call_and_is_empty_without_comparisons(tmp_path):
    """Reading each comparison's two conditions apart gives the table of one call over all units (each
    comparison keeps its seed); no comparison gives the empty table with every column, not None."""
    from saltbench.analysis import Comparison, empty_tradeoff, reasoning_tradeoff_units
    from saltbench.workflow.analysis_rules import reasoning_tradeoff_from_unit_files

    units = synthetic_units(models=("a", "b"), tasks=("dna",), n_samples=12, seed=3)
    paths = []
    for (model, style), part in units.group_by("model", "style", maintain_order=True):
        path = tmp_path / model / style / "dna.parquet"
        path.parent.mkdir(parents=True)
        write_table(part, path, {"stage": "test"}, "units")
        paths.append(path)
    cmps = [
        Comparison("style", "a", "direct", "a", "cot", "a"),
        Comparison("style", "b", "direct", "b", "cot", "b"),
    ]
    apart = reasoning_tradeoff_from_unit_files(
        paths, cmps, seed=11, confidence="mean_probability", flavour="topk", n_resamples=30
    )
    together = reasoning_tradeoff_units(units, cmps, seed=11, n_resamples=30)
    assert apart.height == 2 and apart.equals(together)
    none = reasoning_tradeoff_from_unit_files(
        paths, [], seed=11, confidence="mean_probability", flavour="topk"
    )
    assert none.equals(empty_tradeoff()) and none.height == 0 and none.columns == together.columns
