"""Tables are byte-identical across processes on identical inputs: no group or summation order depends on a
process's hash seeds (docs/reliability.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CODE = """
import sys
from helpers.synthetic_tables import synthetic_metrics
from saltbench.analysis import dominance, dominance_cells, granularity_table
metrics = synthetic_metrics(models=("m-a", "m-b", "m-c", "m-d", "m-e"), seed=3)
build = {"dominance": dominance, "cells": dominance_cells, "granularity": granularity_table}[sys.argv[1]]
table = build(metrics)
sys.stdout.write(table.write_csv(float_precision=None))
"""


TESTS = Path(__file__).resolve().parents[1]
PYTHONPATH = os.pathsep.join([str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])])
"""The subprocesses import the tests' helpers (``tests/helpers``) as pytest does."""


@pytest.mark.parametrize("table", ["dominance", "cells", "granularity"])
def test_a_table_is_byte_identical_across_processes(table: str) -> None:
    outputs = {
        subprocess.run(
            [sys.executable, "-c", CODE, table],
            capture_output=True,
            text=True,
            check=True,
            env={
                **os.environ,
                "PYTHONPATH": PYTHONPATH,
                "PYTHONHASHSEED": str(seed),
                "POLARS_MAX_THREADS": threads,
            },
        ).stdout
        for seed, threads in ((1, "1"), (2, "2"), (3, "2"), (4, "1"))
    }
    assert len(outputs) == 1 and next(iter(outputs)).count("\n") > 5
