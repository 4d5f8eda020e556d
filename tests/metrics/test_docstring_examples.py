"""The runnable examples in the docstrings are exact: run them."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "saltbench.metrics._ece",
    "saltbench.metrics._auroc",
    "saltbench.metrics._rejection",
    "saltbench.metrics._prr",
    "saltbench.metrics._aurc",
    "saltbench.metrics._brier",
    "saltbench.metrics._bootstrap",
    "saltbench.metrics._weighted",
    "saltbench.calibration",
    "saltbench.confidence",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
