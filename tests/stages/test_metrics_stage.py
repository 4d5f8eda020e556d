"""The metrics stage with the batched bootstrap gives the rows of the per-resample path."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from helpers.synthetic_tables import synthetic_units

from saltbench.config import MetricsConfig
from saltbench.metrics import _bootstrap
from saltbench.stages.interventions import CONFIDENCE_COLUMNS
from saltbench.stages.metrics import compute_metrics

FLOATS = ["value", "ci_low", "ci_high"]


def _units(ties: bool) -> pl.DataFrame:
    units = synthetic_units(models=("m",), styles=("direct",), tasks=("dna",), n_samples=14, seed=4)
    if ties:  # coarse scores: many tied units inside and across responses
        units = units.with_columns(
            pl.col(c).round(1) for c in CONFIDENCE_COLUMNS if units[c].dtype.is_float()
        )
    return units


def assert_same_rows(fast: pl.DataFrame, slow: pl.DataFrame) -> None:
    assert fast.columns == slow.columns and fast.height == slow.height
    assert fast.drop(FLOATS).equals(slow.drop(FLOATS))
    for column in FLOATS:
        a, b = fast[column].to_numpy(), slow[column].to_numpy()
        assert np.array_equal(np.isnan(a), np.isnan(b)), column
        assert np.nanmax(np.abs(a - b), initial=0.0) <= 1e-12, column


@pytest.mark.parametrize(
    ("ties", "options"),
    [
        (False, {}),
        (True, {}),
        (True, {"ece_binning": "corrected", "prr_ties": "paper", "ci_level": 0.9}),
    ],
)
def test_compute_metrics_equals_the_per_resample_path(ties, options, monkeypatch):
    units = _units(ties)
    settings = MetricsConfig(n_bootstrap=60, **options)
    fast = compute_metrics(units, settings=settings, seed=11)
    with monkeypatch.context() as m:
        m.setattr(_bootstrap, "_batched", lambda *args: None)
        slow = compute_metrics(units, settings=settings, seed=11)
    assert fast.height > 0 and not fast["ci_low"].is_nan().all()
    assert_same_rows(fast, slow)
