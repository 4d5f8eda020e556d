"""Every analysis table has its own artifact (saltbench.core.contracts.TABLES, docs/architecture.md §3).

The function that builds each table satisfies its artifact on realistic, all-NaN and empty inputs; a column
of a wrong type, a missing or an extra column and a broken invariant are refused naming the file and the
column; a table file read as another table's artifact is refused naming both.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from helpers.table_samples import CASES, SAMPLE_LEVEL_TRADEOFF, TABLE_BUILDERS, Inputs

from saltbench.analysis import FINDINGS_TABLES, write_table_outputs
from saltbench.core.contracts import ARTIFACTS, TABLES, ContractError
from saltbench.io import CorruptFileError, read_provenance, read_table, write_table
from saltbench.plotting import FIGURE_TABLES, FIGURES
from saltbench.workflow.analysis_rules import write_rule_tables
from saltbench.workflow.tables import TABLE_OUTPUTS

REPO = Path(__file__).resolve().parents[2]
NAMES = sorted(TABLES)


@pytest.fixture(scope="module")
def inputs() -> dict[str, Inputs]:
    return {case: make() for case, make in CASES.items()}


@pytest.fixture(scope="module")
def samples(inputs) -> dict[str, pl.DataFrame]:
    return {name: build(inputs["realistic"]) for name, build in TABLE_BUILDERS.items()}


def test_every_table_of_the_rules_has_an_artifact_and_a_builder():
    """One contract per table the declared rules write, in their order (a job refuses a table without one),
    a report caption for each with a CSV, and every table another rule reads is one of them."""
    written = [t.name for t in TABLE_OUTPUTS]
    assert written == list(TABLES) and set(written) == set(TABLE_BUILDERS)
    reported = [t.name for t in TABLE_OUTPUTS if "csv" in t.formats]
    assert [n for n in reported if not (REPO / "report" / f"table_{n}.rst").is_file()] == []
    rules = (REPO / "rules" / "analysis.smk").read_text()
    assert set(re.findall(r'"results/tables/(\w+)\.parquet"', rules)) <= set(written)
    assert all(ARTIFACTS[f"table.{name}"] is artifact for name, artifact in TABLES.items())
    assert set(FINDINGS_TABLES) <= set(TABLES)
    assert set(FIGURE_TABLES.values()) <= set(TABLES)
    assert set(FIGURE_TABLES) == set(FIGURES) - {"training_loss"}
    assert all(not artifact.open for artifact in TABLES.values())


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", NAMES)
def test_each_table_function_satisfies_its_artifact(tmp_path, inputs, name, case):
    """The exact dtypes hold whatever the input: realistic, all NaN or empty."""
    frame = TABLE_BUILDERS[name](inputs[case])
    path = tmp_path / f"{name}.parquet"
    write_table(frame, path, {"stage": "analysis"}, TABLES[name])
    assert read_table(path, TABLES[name]).equals(frame)
    assert read_table(path, f"table.{name}").equals(frame)
    if case == "realistic":
        assert frame.height > 0, name


@pytest.mark.parametrize("case", list(CASES))
def test_the_sample_level_tradeoff_satisfies_the_same_artifact(inputs, case):
    TABLES["reasoning_tradeoff"].validate(SAMPLE_LEVEL_TRADEOFF(inputs[case]), case)


def _wrong_type(dtype: pl.DataType) -> pl.DataType:
    if dtype == pl.String:
        return pl.Categorical()
    if dtype == pl.Float64:
        return pl.Float32()
    return pl.Float64()  # integers


@pytest.mark.parametrize("name", NAMES)
def test_a_column_of_a_wrong_type_is_refused_naming_file_and_column(tmp_path, samples, name):
    frame, artifact = samples[name], TABLES[name]
    path = tmp_path / f"{name}.parquet"
    for column, dtype in artifact.columns.items():
        wrong = frame.with_columns(pl.col(column).cast(_wrong_type(dtype)))
        pattern = rf"{name}\.parquet: .*table\.{name} column '{re.escape(column)}' has type"
        with pytest.raises(ContractError, match=pattern):
            write_table(wrong, path, {}, artifact)
    assert not path.exists() and not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("name", NAMES)
def test_missing_and_extra_columns_are_refused(tmp_path, samples, name):
    frame, path = samples[name], tmp_path / f"{name}.parquet"
    column = list(TABLES[name].columns)[-1]
    with pytest.raises(ContractError, match=rf"table\.{name} column '{column}' is missing"):
        write_table(frame.drop(column), path, {}, TABLES[name])
    with pytest.raises(ContractError, match=rf"table\.{name} has an unexpected column 'extra'"):
        write_table(frame.with_columns(extra=pl.lit(1)), path, {}, TABLES[name])


@pytest.mark.parametrize("name", NAMES)
def test_a_table_read_as_another_table_names_both(tmp_path, samples, name):
    other = NAMES[(NAMES.index(name) + 1) % len(NAMES)]
    path = tmp_path / f"{name}.parquet"
    write_table(samples[name], path, {}, TABLES[name])
    pattern = (
        rf"{name}\.parquet: holds a 'table\.{name}' table, expected 'table\.{other}'.*"
        "rerun the rule that writes it"
    )
    with pytest.raises(CorruptFileError, match=pattern):
        read_table(path, TABLES[other])


def _set(frame: pl.DataFrame, column: str, value: object, row: int = 0) -> pl.DataFrame:
    dtype = frame.schema[column]
    return frame.with_columns(
        pl.when(pl.int_range(pl.len()) == row)
        .then(pl.lit(value, dtype=dtype))
        .otherwise(pl.col(column))
        .alias(column)
    )


BROKEN = [
    ("leaderboard", "precision_atom", 1.5, "precision_atom is in [0, 1]"),
    ("leaderboard", "ece_ci_low", 0.99, "ece_ci_low <= ece <= ece_ci_high"),
    ("accuracy_by_task", "granularity", "token", "granularity is a known granularity"),
    ("accuracy_by_task", "n_units", -1, "n_units >= 0"),
    ("dominance", "metric", "accuracy", "metric is a known metric"),
    ("dominance", "confidence", "Vibes!", "confidence is a confidence function name"),
    ("dominance_cells", "n_tied", 0, "n_tied >= 1"),
    ("granularity", "q25", 0.99, "q25 <= median <= q75"),
    ("reasoning_tradeoff", "p_precision", 1.5, "p_precision is in [0, 1]"),
    ("label_noise", "ci_low", 5.0, "ci_low <= ci_high"),
    (
        "reasoning_tradeoff",
        "rel_delta_auroc_ci_low",
        5.0,
        "rel_delta_auroc_ci_low <= rel_delta_auroc_ci_high",
    ),
    ("label_noise", "epsilon", 0.7, "epsilon is in [0, 0.5]"),
    ("label_noise", "flavour", "bottom", "flavour is a known flavour"),
    ("reliability", "n", 10**9, "n <= n_units"),
    ("rejection", "selective_risk", -0.1, "selective_risk is in [0, 1]"),
    ("interventions", "n_samples", 10**9, "n_samples <= n_rows"),
    ("interventions_by_position", "n_correct", 10**9, "n_correct <= n"),
    ("interventions_by_corruption", "bin", -1, 'bin is -1 exactly where placement is "clean"'),
    ("interventions_by_placement", "placement", "nearby", "placement is a known placement"),
    ("interventions_by_placement", "ci_high", -0.5, "ci_low <= accuracy <= ci_high"),
]


@pytest.mark.parametrize(("name", "column", "value", "check"), BROKEN)
def test_a_broken_invariant_is_refused(tmp_path, samples, name, column, value, check):
    frame = samples[name]
    row = 0
    if name == "interventions_by_corruption":  # a corrupted placement in bin -1
        row = frame["placement"].to_list().index("random")
    with pytest.raises(ContractError, match=rf"table\.{name} breaks '{re.escape(check)}' at row {row}"):
        write_table(_set(frame, column, value, row), tmp_path / "t.parquet", {}, TABLES[name])


def test_undefined_values_are_nan_and_pass_the_range_checks(samples):
    nan = float("nan")
    board = samples["leaderboard"].with_columns(precision_atom=pl.lit(nan), ece_ci_low=pl.lit(nan))
    TABLES["leaderboard"].validate(board, "leaderboard")


def test_write_table_outputs_writes_no_format_of_a_refused_frame(tmp_path, samples):
    paths = {fmt: tmp_path / f"leaderboard.{fmt}" for fmt in ("parquet", "csv", "tex")}
    wrong = samples["leaderboard"].with_columns(pl.col("n_tasks").cast(pl.Int32))
    with pytest.raises(ContractError, match=r"leaderboard\.parquet: .*table\.leaderboard column 'n_tasks'"):
        write_table_outputs(wrong, paths, {}, TABLES["leaderboard"])
    assert not any(p.exists() for p in paths.values())
    csv_only = {"csv": tmp_path / "leaderboard.csv"}
    with pytest.raises(ContractError, match=r"leaderboard\.csv: .*table\.leaderboard column 'n_tasks'"):
        write_table_outputs(wrong, csv_only, {}, TABLES["leaderboard"])
    assert not csv_only["csv"].exists()


def _snakemake(tmp_path: Path, name: str, prefix: str = "") -> SimpleNamespace:
    output = {
        f"{prefix}{fmt}": str(tmp_path / "results" / "tables" / f"{name}.{fmt}") for fmt in ("parquet", "csv")
    }
    params = {"seed": 3}
    return SimpleNamespace(output=output, params=params, rule=f"table_{name}")


def test_write_rule_tables_writes_the_rules_table_with_its_artifact(tmp_path, samples):
    rule = _snakemake(tmp_path, "interventions_by_position", prefix="position_")
    frame = samples["interventions_by_position"]
    write_rule_tables(rule, frame, TABLES["interventions_by_position"], prefix="position_")
    path = rule.output["position_parquet"]
    assert read_table(path, TABLES["interventions_by_position"]).equals(frame)
    assert read_provenance(path)["rule"] == "table_interventions_by_position"


def test_write_rule_tables_refuses_another_tables_artifact(tmp_path, samples):
    rule = _snakemake(tmp_path, "leaderboard")
    with pytest.raises(
        ValueError, match=r"leaderboard\.parquet.*not the files of the 'table\.dominance' table"
    ):
        write_rule_tables(rule, samples["dominance"], TABLES["dominance"])
    assert not (tmp_path / "results").exists()
