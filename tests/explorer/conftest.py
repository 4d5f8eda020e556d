"""A tiny simulated run and its explorer, shared by the explorer tests (built once per session, ~10 s),
and a one-cell imported run whose responses lack log-probabilities or a fenced answer."""

from __future__ import annotations

import dataclasses
import json

import polars as pl
import pytest
from helpers.simulated_run import SimulatedRun, simulated_run

from saltbench.config import MetricsConfig, resolve_block
from saltbench.explorer import CellFiles, ExplorerOptions, ExplorerSummary, build_explorer
from saltbench.io import provenance, write_table
from saltbench.stages.imports import import_generations
from saltbench.stages.metrics import compute_metrics
from saltbench.stages.scoring import score_generations
from saltbench.tasks import get_task

OPTIONS = ExplorerOptions(
    top_k=5, list_size=10, default_column="topk.mean_probability", min_units=20, eligible_answered_share=0.9
)
"""sim-planted-reason answers 28 of its 32 prompts per style (0.875): below 0.9, it is excluded."""

METRICS = resolve_block("metrics", {"n_bootstrap": 20, "calibration_methods": ["none"]}, MetricsConfig)
"""A few resamples: the summary header shows the metrics stage's rows, whatever their values."""


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory) -> SimulatedRun:
    """The tiny run, each cell with a metrics file of two confidence functions (one lower-is-confident)."""
    run = simulated_run(tmp_path_factory.mktemp("simulated-run"))
    cells = []
    for cell in run.cells:
        units = pl.read_parquet(cell.units)
        metrics = compute_metrics(
            units, confidences=["mean_probability", "max_entropy"], flavours=("topk",), settings=METRICS
        )
        path = run.root / "results" / "metrics" / cell.model / cell.style / f"{cell.task}.parquet"
        keys = {"model": cell.model, "style": cell.style, "task": cell.task}
        metrics = metrics.select(*(pl.lit(v).alias(k) for k, v in keys.items()), pl.all())
        write_table(metrics, path, provenance(stage="metrics"), "metrics")
        cells.append(dataclasses.replace(cell, metrics=path))
    return dataclasses.replace(run, cells=cells)


@pytest.fixture(scope="session")
def explorer_options() -> ExplorerOptions:
    """The options the session's explorer is built with."""
    return OPTIONS


@pytest.fixture(scope="session")
def explorer(sim_run: SimulatedRun) -> ExplorerSummary:
    return build_explorer(
        sim_run.root / "results" / "explorer",
        sim_run.cells,
        sim_run.datasets,
        sim_run.interventions,
        options=OPTIONS,
        meta={"version": "test"},
    )


def _imported_line(k: int, sample_id: str, reference: str) -> dict:
    """Response ``k`` of the imported cell: 0 and 3 without log-probabilities, 1 with two alternatives per
    token (fewer than the five shown), 2 with an alternative of probability 0, 4 without a fenced answer (a
    fence opened, nothing after it: every reference unit missing)."""
    if k == 4:
        return {"sample_id": sample_id, "text": "********\n", "tokens": ["********\n"]}
    tokens = ["********\n", reference, "\n********"]
    line = {"sample_id": sample_id, "text": "".join(tokens), "tokens": tokens}
    if k == 1:
        line |= {
            "logprobs": [-0.1] * 3,
            "top_logprobs": [[-0.1, -2.5]] * 3,
            "top_tokens": [[t, "x"] for t in tokens],
        }
    elif k == 2:
        line |= {
            "logprobs": [-0.1] * 3,
            "top_logprobs": [[-0.1, float("-inf")]] * 3,
            "top_tokens": [[t, "y"] for t in tokens],
        }
    return line


@pytest.fixture(scope="session")
def imported_explorer(tmp_path_factory) -> tuple[ExplorerSummary, pl.DataFrame]:
    """The explorer of one imported DNA cell (:func:`_imported_line`) and its dataset."""
    root = tmp_path_factory.mktemp("imported")
    dataset = get_task("dna").generate(5, 3, min_codons=2, max_codons=4)
    lines = [
        json.dumps(_imported_line(k, sample_id, reference)) + "\n"
        for k, (sample_id, reference) in enumerate(dataset.select("sample_id", "reference").iter_rows())
    ]
    (root / "g.jsonl").write_text("".join(lines), encoding="utf-8")
    frame = import_generations(
        root / "g.jsonl", "jsonl", {"dna": dataset}, model_name="imp", styles=["direct"], n_shots=None
    ).frames[("direct", "dna")]
    units = score_generations(frame, dataset, "dna", fence_rule="line").select(
        pl.lit("imp").alias("model"), pl.lit("direct").alias("style"), pl.lit("dna").alias("task"), pl.all()
    )
    paths = {
        kind: root / "data" / kind / "imp" / "direct" / "dna.parquet" for kind in ("units", "generations")
    }
    write_table(units, paths["units"], provenance(stage="units"), "units")
    write_table(frame, paths["generations"], provenance(stage="generations"), "generations")
    write_table(dataset, root / "dna.parquet", provenance(stage="datasets"), "dataset")
    cells = [CellFiles("imp", "direct", "dna", paths["units"], paths["generations"])]
    return build_explorer(root / "explorer", cells, {"dna": root / "dna.parquet"}), dataset
