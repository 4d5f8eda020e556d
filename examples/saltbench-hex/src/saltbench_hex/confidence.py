"""``covered_mass``: how much of the model's probability the stored candidates hold, per token (mean)."""

from __future__ import annotations

import numpy as np

from saltbench.confidence import ConfidenceSpec


def covered_mass(distributions) -> np.ndarray:  # noqa: ANN001 - a saltbench.confidence.TokenDistributions
    """Σ_i p_ti over the chosen token and the returned alternatives (full flavour: not renormalised)."""
    return np.exp(distributions.logprobs).sum(axis=1)


COVERED_MASS = ConfidenceSpec(
    "covered_mass",
    higher_is_confident=True,
    needs_calibration=False,
    formula="(1/T) Σ_t Σ_i p_ti over the stored candidates of token t",
    token_score=covered_mass,
    reduce="mean",
    flavours=("full",),  # the topk flavour renormalises: its candidates always hold all the mass
    label="covered mass",
)
