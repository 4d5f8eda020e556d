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
    named_paths,
    table_outputs,
)
from saltbench.workflow.tables import table_output
from saltbench.workflow.unit_files import iter_units, read_units, registry_entries


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
    files = table_outputs("leaderboard", table_output("leaderboard").formats, fake_report)
    assert files["parquet"] == "results/tables/leaderboard.parquet"
    assert files["csv"] == (
        "report",
        "results/tables/leaderboard.csv",
        "../report/table_leaderboard.rst",
        "Tables",
    )
    assert table_outputs("rejection", table_output("rejection").formats, fake_report, prefix="p_").keys() == {
        "p_parquet",
        "p_csv",
    }  # its formats
    with pytest.raises(KeyError, match="not a table of the study"):
        table_output("x")
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
    from saltbench.workflow.unit_files import reasoning_tradeoff_from_unit_files

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


def test_options_read_config_keys_and_run_facts_and_name_a_missing_key():
    from saltbench.core.outputs import Derived, option_value
    from saltbench.workflow.table_rules import option_lookup

    lookup = option_lookup({"metrics": {"ci_level": 0.95}, "seed": 3}, {"models": ["a", "b"]})
    assert lookup("seed") == 3 and lookup("run.models") == ["a", "b"]
    assert option_value(Derived(("metrics.ci_level",), lambda level: 1 - level), lookup) == 1 - 0.95
    with pytest.raises(KeyError, match=r"option 'metrics.n_bins' is not set \(no 'n_bins'\)"):
        lookup("metrics.n_bins")
    with pytest.raises(KeyError, match="option 'run.tasks' is not set"):
        lookup("run.tasks")


def test_rule_inputs_params_and_outputs_of_a_declaration():
    """Each input from its file set (``table:NAME`` a table's Parquet, ``[]`` where its condition fails),
    parameters in their declared order, the side tables' outputs under their prefix (no CSV: no report)."""
    from saltbench.workflow.table_rules import option_lookup, rule_inputs, rule_params
    from saltbench.workflow.tables import TABLE_RULES, table_rule

    files = {"metrics": ["m.parquet"], "units": ["u.parquet"], "registry": "models.yaml"}
    analysis = {"reasoning_level": "task", "flavour": "topk", "granularity": "atom", "paired_bootstrap": 9}
    config = {"analysis": analysis}
    lookup = option_lookup(
        {
            **config,
            "metrics": {"default_confidence": "p", "ci_level": 0.9, "n_bootstrap": 0},
            "seed": 1,
        },
        {"models": ["a"], "styles": ["direct"]},
    )
    tradeoff = table_rule(TABLE_RULES, "reasoning_tradeoff")
    assert rule_inputs(tradeoff, files, lookup) == {
        "metrics": ["m.parquet"],
        "units": [],  # task level: the metrics suffice
        "registry": "models.yaml",
        "eligibility": "results/tables/eligibility.parquet",
    }
    config["analysis"]["reasoning_level"] = "sample"
    assert rule_inputs(tradeoff, files, lookup)["units"] == ["u.parquet"]
    params = rule_params(tradeoff, lookup)
    assert list(params) == ["models", "styles", "level", "confidence", "flavour", "granularity"] + [
        "n_resamples",
        "alpha",
        "seed",
    ]
    assert params["n_resamples"] == 1 and params["alpha"] == 1 - 0.9  # sample level: max(n_bootstrap, 1)
    recovery = table_rule(TABLE_RULES, "table_recovery")
    with pytest.raises(KeyError, match="input 'units' names no file set 'simulated_units'"):
        rule_inputs(recovery, files, option_lookup({}, {"interventions": False}))
    cells = table_outputs(
        "dominance_cells", table_output("dominance_cells").formats, fake_report, prefix="cells_"
    )
    assert cells == {"cells_parquet": "results/tables/dominance_cells.parquet"}


def test_a_table_job_writes_the_declared_tables_and_refuses_others(tmp_path, monkeypatch):
    """make_table's job: the declared function on the named inputs and parameters, each table written to
    its named outputs with its contract and the rule's parameters in its provenance; a function that
    returns another table is refused naming both."""
    from types import SimpleNamespace

    from helpers.synthetic_tables import synthetic_metrics

    from saltbench.analysis import accuracy_by_task
    from saltbench.io import read_provenance, read_table
    from saltbench.workflow import tables
    from saltbench.workflow.table_rules import TableRule, run_table_job

    metrics = synthetic_metrics(models=("m",), styles=("direct",), tasks=("dna", "logic"), seed=1)
    paths = []
    for (task,), frame in metrics.partition_by("task", as_dict=True).items():
        paths.append(str(tmp_path / f"{task}.parquet"))
        write_table(frame, paths[-1], {}, "metrics")
    eligibility = pl.DataFrame(
        {"model": "m", "style": "direct", "task": ["dna", "logic"], "granularity": "atom", "answered": 0.2}
    ).with_columns(
        n_correct=pl.lit(0, pl.Int64),
        n_incorrect=pl.lit(0, pl.Int64),
        eligible_model=False,
        eligible=False,
        reason=pl.lit("answered share 0.200 (below 0.5)"),
    )
    write_table(eligibility, tmp_path / "eligibility.parquet", {}, "table.eligibility")
    output = FakeOutput({fmt: str(tmp_path / f"accuracy_by_task.{fmt}") for fmt in ("parquet", "csv", "tex")})
    inputs = FakeOutput(metrics=paths, eligibility=str(tmp_path / "eligibility.parquet"))
    job = SimpleNamespace(rule="table_accuracy_by_task", input=inputs, params=FakeOutput(), output=output)
    run_table_job(job, tables.TABLE_RULES)
    written = read_table(output["parquet"], "table.accuracy_by_task")
    expected = accuracy_by_task(pl.concat([pl.read_parquet(p) for p in paths]), eligibility=eligibility)
    assert written.equals(expected) and not written["eligible"].any()
    assert read_provenance(output["parquet"])["rule"] == "table_accuracy_by_task"
    wrong = TableRule("accuracy_by_task", "", lambda job: {"leaderboard": written}, inputs={})
    with pytest.raises(ValueError, match=r"computed \['leaderboard'\], declares \['accuracy_by_task'\]"):
        run_table_job(job, (wrong,))
