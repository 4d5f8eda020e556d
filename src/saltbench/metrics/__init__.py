"""Uncertainty metrics: calibration (ECE, MCE, Brier), ranking (AUROC) and rejection (PRR, AURC).

Conventions shared by every function here:

* ``scores`` / ``confidences`` are **higher = more confident**; negate uncertainty-style scores
  (perplexity, entropy) first, or calibrate them with :mod:`saltbench.calibration`.
* ``correct`` is binary (0/1 or bools); inputs are Python sequences or 1-D numpy arrays.
* Undefined values (one class empty, nothing to rank) are returned as ``nan``, never raised.
* Invalid input raises ``ValueError`` naming the argument and the bad value.

Paper compatibility (docs/metrics.md; docs/compatibility.md §1.7–1.8): ``ece(..., binning="paper")``
and ``prr(..., ties="paper")`` reproduce the authors' quirks; the defaults of ``prr``/``aurc`` use
order-independent tie handling.
"""

from saltbench.core.metric_registry import MetricSpec, metric_registry

from ._aurc import aurc
from ._auroc import auroc, auroc_per_group, auroc_per_response
from ._bootstrap import ConfidenceInterval, bootstrap_ci, bootstrap_cis, mean_score
from ._brier import brier
from ._ece import BINNINGS, Binning, calibration_errors, ece, mce
from ._prr import (
    GROUP_WEIGHTINGS,
    GroupWeighting,
    PRRDetails,
    prr,
    prr_details,
    prr_per_group,
    prr_per_response,
)
from ._rejection import TIES, RejectionCurve, RejectionCurves, Ties, rejection_curve
from ._weighted import group_counts, weighted_auroc

__all__ = [
    "MetricSpec",
    "mean_score",
    "metric_registry",
    "BINNINGS",
    "GROUP_WEIGHTINGS",
    "TIES",
    "Binning",
    "ConfidenceInterval",
    "GroupWeighting",
    "PRRDetails",
    "RejectionCurve",
    "RejectionCurves",
    "Ties",
    "aurc",
    "auroc",
    "auroc_per_group",
    "auroc_per_response",
    "bootstrap_ci",
    "bootstrap_cis",
    "brier",
    "calibration_errors",
    "ece",
    "mce",
    "prr",
    "prr_details",
    "prr_per_group",
    "prr_per_response",
    "rejection_curve",
    "group_counts",
    "weighted_auroc",
]
