"""``scoring`` and ``metrics``: how generations become scored units, and the metrics computed on them
(docs/configuration.md, docs/metrics.md)."""

from __future__ import annotations

from dataclasses import dataclass

from saltbench.confidence import PAPER_CONFIDENCE_NAMES
from saltbench.config.schema import (
    Block,
    ConfidenceFunctionName,
    Count,
    OpenUnit,
    PositiveInt,
    setting,
)
from saltbench.core.vocabulary import (
    Alignment,
    CalibrationMethod,
    EceBinning,
    FenceRule,
    Flavour,
    Granularity,
    RejectionTies,
)


@dataclass(frozen=True, kw_only=True)
class ScoringConfig(Block):
    """``scoring``: how generations become scored units."""

    alignment: Alignment = setting("strict", "Alignment of answer atoms to the reference.")
    keyword_filter: bool = setting(
        True,
        "The authors' bad-keyword filter: an answer region containing e.g. 'answer' or 'end' is no answer.",
    )
    fence_rule: FenceRule = setting(
        "line",
        "Which runs of four or more '*' are fences: line (one that starts a line, or ends one and closes a "
        "fence, so a fence quoted in prose is none) or positional (every run, the authors' rule); "
        "docs/compatibility.md §1.3.",
    )
    granularities: tuple[Granularity, ...] = setting(
        ("atom", "line", "generation"), "Unit granularities scored.", minItems=1, uniqueItems=True
    )
    flavours: tuple[Flavour, ...] = setting(
        ("topk", "full"), "Confidence flavours scored.", minItems=1, uniqueItems=True
    )
    confidence_functions: tuple[ConfidenceFunctionName, ...] = setting(
        PAPER_CONFIDENCE_NAMES,
        "Confidence functions scored, each in every flavour it supports (names of "
        "saltbench.confidence.TOKEN_FUNCTIONS, computed from token distributions, plugins included; "
        "default: the paper's nine). The other estimators come from the stages that compute them.",
        minItems=1,
        uniqueItems=True,
    )


@dataclass(frozen=True, kw_only=True)
class MetricsConfig(Block):
    """``metrics``: calibration, binning and bootstrap settings of the metrics stage."""

    calibration_methods: tuple[CalibrationMethod, ...] = setting(
        ("zscore_sigmoid", "platt", "isotonic", "histogram"),
        "Calibration methods fitted (names of saltbench.calibration.CALIBRATION_METHODS).",
        uniqueItems=True,
    )
    calibration_fraction: OpenUnit = setting(0.5, "Share of the samples used to fit the calibration.")
    n_bins: PositiveInt = setting(15, "Bins of the ECE.")
    ece_binning: EceBinning = setting("paper", "Bin edges of the ECE.")
    prr_ties: RejectionTies = setting("average", "Tie handling of the PRR.")
    n_bootstrap: Count = setting(200, "Bootstrap resamples of the confidence intervals.")
    ci_level: OpenUnit = setting(0.95, "Level of the confidence intervals.")
    default_confidence: ConfidenceFunctionName = setting(
        "mean_probability",
        "Confidence function of the leaderboard, granularity and reasoning tables: one of "
        "scoring.confidence_functions.",
    )
