"""docs/confidence.md §4.3 reference numbers (README/tutorial toy matrix) from the metric functions alone."""

from __future__ import annotations

import math

import pytest

from saltbench.calibration import zscore_sigmoid
from saltbench.confidence import ranking_scores
from saltbench.metrics import auroc, calibration_errors, prr


@pytest.mark.parametrize(
    ("conf", "correct", "precision", "ece_", "auroc_", "prr_"),
    [
        ([1, 1, 0.8, 0.8, 0.8], [1, 1, 0, 1, 0], 0.600, 0.280, 0.833, 0.667),  # atom
        ([1.0, 0.8], [1, 0], 0.500, 0.400, 1.000, 1.000),  # line
        ([0.88], [0], 0.000, 0.880, None, None),  # generation
    ],
)
def test_toy_matrix(conf, correct, precision, ece_, auroc_, prr_):
    assert round(sum(correct) / len(correct), 3) == precision
    assert round(calibration_errors(conf, correct)[0], 3) == ece_
    got_auroc, got_prr = auroc(conf, correct), prr(conf, correct, ties="paper")
    if auroc_ is None:
        assert math.isnan(got_auroc) and math.isnan(got_prr)
    else:
        assert round(got_auroc, 3) == auroc_
        assert round(got_prr, 3) == prr_


def test_perplexity_with_zscore_calibration():
    perplexities = [1, 1, 1.8, 1.8, 1.8]
    correct = [1, 1, 0, 1, 0]
    calibrated = zscore_sigmoid(perplexities, perplexities, higher_is_confident=False)
    ece_, mce_ = calibration_errors(calibrated, correct)
    assert round(ece_, 3) == 0.107
    assert round(mce_, 4) == 0.2271
    ranking = ranking_scores("perplexity", perplexities)
    assert ranking.tolist() == [-1, -1, -1.8, -1.8, -1.8]
    assert round(auroc(ranking, correct), 3) == 0.833
    assert round(prr(ranking, correct, ties="paper"), 3) == 0.667
    assert round(prr(ranking, correct), 3) == 0.667


def test_matrix_with_perplexities():
    ranking = ranking_scores("perplexity", [1, 1.5, 8, 2])
    assert ranking.tolist() == [-1, -1.5, -8, -2]
    assert auroc(ranking, [1, 1, 0, 1]) == 1.0
