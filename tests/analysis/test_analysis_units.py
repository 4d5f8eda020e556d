"""Reliability and rejection summaries from units tables, table export."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from helpers.synthetic_tables import synthetic_units

from saltbench.analysis import (
    read_tables,
    read_train_logs,
    rejection_table,
    reliability_table,
    to_latex,
    write_table_outputs,
)
from saltbench.core.contracts import TABLES
from saltbench.io import read_provenance, read_table, write_table
from saltbench.metrics import ece


@pytest.fixture(scope="module")
def units() -> pl.DataFrame:
    return synthetic_units(
        models=("a", "b"), styles=("direct",), tasks=("dna", "matmul"), n_samples=16, seed=1
    )


def test_reliability_bins_partition_the_evaluation_units(units):
    table = reliability_table(units, confidences=("mean_probability", "perplexity"), n_bins=10, seed=3)
    assert set(table["confidence"]) == {"mean_probability", "perplexity"}
    for _, rows in table.group_by("confidence"):
        assert rows.height == 10 and rows["n"].sum() == rows["n_units"][0]
        assert rows["n_cells"][0] == 4  # 2 models x 2 tasks
        pooled = rows.select("calibration", "flavour", "models", "styles", "tasks").unique().row(0)
        assert pooled == ("zscore_sigmoid", "topk", "a,b", "direct", "dna,matmul")  # what the bins pool
        filled = rows.filter(pl.col("n") > 0)
        assert filled["accuracy"].is_between(0, 1).all()
        assert (
            (filled["mean_confidence"] > filled["bin_low"] - 1e-12)
            & (filled["mean_confidence"] <= filled["bin_high"] + 1e-12)
        ).all()
        # ECE from the bins equals the metric on the pooled units
        gaps = filled["n"] * (filled["mean_confidence"] - filled["accuracy"]).abs()
        gap = gaps.sum() / rows["n_units"][0]
        assert rows["ece"][0] == pytest.approx(gap)


def test_reliability_uses_an_evaluation_split_only(units):
    table = reliability_table(units, confidences=("mean_probability",), calibration_fraction=0.5)
    n_atoms = units.filter(pl.col("granularity") == "atom").height
    assert 0 < table["n_units"][0] < n_atoms


def test_reliability_identity_calibration_equals_raw_ece():
    u = synthetic_units(models=("a",), styles=("direct",), tasks=("dna",), n_samples=12, seed=0)
    table = reliability_table(u, confidences=("mean_probability", "perplexity"), method="none", seed=0)
    assert table["confidence"].unique().to_list() == ["mean_probability"]  # perplexity is not a probability
    from saltbench.calibration import split_by_sample

    atoms = u.filter(pl.col("granularity") == "atom")
    test = ~split_by_sample(atoms["sample_id"].to_numpy(), 0.5, 0)
    expected = ece(atoms["topk.mean_probability"].to_numpy()[test], atoms["is_correct"].to_numpy()[test])
    assert table["ece"][0] == pytest.approx(expected)


def test_rejection_oracle_bounds_every_function(units):
    table = rejection_table(units, confidences=("mean_probability", "max_entropy"), n_points=21)
    for _, rows in table.group_by(["granularity"]):
        curves = {
            c: r.sort("coverage")["selective_risk"].to_numpy() for (c,), r in rows.group_by(["confidence"])
        }
        assert set(curves) == {"mean_probability", "max_entropy", "oracle", "random"}
        for name in ("mean_probability", "max_entropy"):
            assert (curves["oracle"] <= curves[name] + 1e-12).all()
        assert np.allclose(curves["random"], curves["random"][0])  # flat at the error rate
        # full coverage: every ranking has the same risk
        assert curves["random"][-1] == pytest.approx(curves["mean_probability"][-1])
        aurc = dict(rows.select("confidence", "aurc").unique().iter_rows())
        assert aurc["oracle"] <= aurc["mean_probability"] < aurc["random"] + 0.05


def test_an_estimator_of_another_source_is_read_from_its_own_column(units):
    """The draws' agreement lives in ``draws.agreement`` whatever the flavour: the same values as
    ``topk.mean_probability`` there (both higher = confident) give the same bins and curves."""
    drawn = units.with_columns(pl.col("topk.mean_probability").alias("draws.agreement"))
    options = {"granularities": ("atom",), "seed": 3}
    ours = reliability_table(drawn, confidences=("agreement",), **options)
    theirs = reliability_table(drawn, confidences=("mean_probability",), **options)
    assert set(ours["flavour"]) == {"draws"}
    columns = ["bin", "n", "mean_confidence", "accuracy", "ece"]
    assert ours.select(columns).equals(theirs.select(columns))
    curves = rejection_table(drawn, confidences=("agreement", "mean_probability"), granularities=("atom",))
    risk = {c: r.sort("coverage")["selective_risk"].to_list() for (c,), r in curves.group_by(["confidence"])}
    assert risk["agreement"] == risk["mean_probability"]


def test_informative_scores_beat_random(units):
    table = rejection_table(units, confidences=("mean_probability",), granularities=("atom",))
    aurc = dict(table.select("confidence", "aurc").unique().iter_rows())
    assert aurc["mean_probability"] < aurc["random"]


def test_units_summaries_handle_nan_scores_and_empty_input(units):
    nan_units = units.with_columns(pl.lit(float("nan")).alias("topk.mean_probability"))
    assert reliability_table(nan_units, confidences=("mean_probability",)).is_empty()
    rej = rejection_table(nan_units, confidences=("mean_probability",))
    assert set(rej["confidence"]) == {"oracle", "random"}
    assert reliability_table(units.head(0)).is_empty() and rejection_table(units.head(0)).is_empty()
    with pytest.raises(ValueError, match="confidences"):
        rejection_table(units, confidences=("speed",))
    with pytest.raises(ValueError, match="units lacks columns"):
        rejection_table(units.drop("topk.max_entropy"))


# -- export ----------------------------------------------------------------------------------------------


def test_to_latex_escapes_merges_cis_and_marks_nan():
    frame = pl.DataFrame(
        {
            "model": ["a_b"],
            "auroc": [0.81234],
            "auroc_ci_low": [0.8],
            "auroc_ci_high": [0.9],
            "ece": [float("nan")],
            "n": [3],
        }
    )
    tex = to_latex(frame)
    assert r"a\_b & 0.812 [0.800, 0.900] & -- & 3 \\" in tex
    assert "auroc\\_ci" not in tex and tex.startswith("\\begin{tabular}{lrrr}")
    assert "0.800" not in to_latex(frame, merge_ci=False).split("auroc")[0]


def test_write_table_outputs_round_trip(tmp_path):
    row = {
        "model": "a",
        "style": "direct",
        "task": "dna",
        "granularity": "atom",
        "value": 0.5,
        "ci_low": 0.4,
        "ci_high": 0.6,
        "n_units": 10,
        "n_responses": 2,
    }
    frame = pl.DataFrame([row], schema=TABLES["accuracy_by_task"].columns)
    paths = {k: tmp_path / f"t.{k}" for k in ("parquet", "csv", "tex")}
    write_table_outputs(frame, paths, {"stage": "analysis", "seed": 1}, TABLES["accuracy_by_task"])
    assert read_table(paths["parquet"], TABLES["accuracy_by_task"]).equals(frame)
    assert read_provenance(paths["parquet"])["seed"] == 1
    assert pl.read_csv(paths["csv"]).equals(frame)
    assert "0.500 [0.400, 0.600]" in paths["tex"].read_text()
    both = read_tables([paths["parquet"], paths["parquet"]], {"model": pl.String(), "x": pl.Float64()})
    assert both.height == 2 and both["x"].is_null().all()
    with pytest.raises(ValueError, match="paths keys"):
        write_table_outputs(frame, {"xlsx": tmp_path / "t.xlsx"}, {}, TABLES["accuracy_by_task"])


def test_read_tables_empty_list_gives_schema():
    empty = read_tables([], {"a": pl.String()})
    assert empty.is_empty() and empty.schema == {"a": pl.String()}


def _with_missing_rows(units: pl.DataFrame) -> pl.DataFrame:
    scores = [c for c in units.columns if "." in c]
    extra = units.filter(pl.col("unit_index") == 0).with_columns(
        pl.lit("missing").cast(units.schema["status"]).alias("status"),
        pl.lit(False).alias("is_correct"),
        pl.lit(99).cast(units.schema["unit_index"]).alias("unit_index"),
        *(pl.lit(float("nan")).alias(c) for c in scores),
    )
    return pl.concat([units, extra])


def test_missing_reference_units_are_ignored(units):
    padded = _with_missing_rows(units)
    assert rejection_table(padded, confidences=("mean_probability",)).equals(
        rejection_table(units, confidences=("mean_probability",))
    )
    assert reliability_table(padded, confidences=("mean_probability",)).equals(
        reliability_table(units, confidences=("mean_probability",))
    )


def test_streaming_frames_gives_the_same_tables(units):
    parts = list(units.partition_by("model", "task"))
    assert rejection_table(iter(parts), confidences=("max_entropy",)).equals(
        rejection_table(units, confidences=("max_entropy",))
    )
    assert reliability_table(iter(parts), confidences=("perplexity",)).equals(
        reliability_table(units, confidences=("perplexity",))
    )


def test_read_train_logs_adds_model_from_folder(tmp_path):
    for name in ("tiny", "small"):
        (tmp_path / name).mkdir()
        log = pl.DataFrame(
            {
                "step": [1, 2],
                "loss": [3.0, 2.0],
                "lr": [0.0, 1e-3],
                "tokens": [10, 10],
                "answer_tokens": [4, 4],
                "tokens_per_s": [1.0, 2],
                "elapsed_s": [0.5, 1.0],
            }
        )
        write_table(log, tmp_path / name / "train_log.parquet", {}, "train_log")
    logs = read_train_logs([tmp_path / name / "train_log.parquet" for name in ("tiny", "small")])
    assert logs["model"].to_list() == ["tiny", "tiny", "small", "small"]
    assert read_train_logs([]).is_empty()
