"""A tiny simulated run and its explorer, shared by the explorer tests (built once per session, ~10 s)."""

from __future__ import annotations

import pytest
from helpers.simulated_run import SimulatedRun, simulated_run

from saltbench.explorer import ExplorerOptions, ExplorerSummary, build_explorer

OPTIONS = ExplorerOptions(top_k=5, list_size=10, default_column="topk.mean_probability", min_units=20)


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory) -> SimulatedRun:
    return simulated_run(tmp_path_factory.mktemp("simulated-run"))


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
