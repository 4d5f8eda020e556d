"""``analysis``: options of the tables and figures (docs/configuration.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from saltbench.config.schema import (
    Block,
    Count,
    Keywords,
    PositiveInt,
    setting,
)
from saltbench.core.vocabulary import (
    CalibrationMethod,
    FitMethod,
    Flavour,
    Granularity,
    ReasoningLevel,
)


@dataclass(frozen=True, kw_only=True)
class AnalysisConfig(Block):
    """``analysis``: options of the tables and figures (rules/analysis.smk, rules/figures.smk)."""

    flavour: Flavour = setting(
        "topk", "Flavour of the confidence scores in every table and figure (one of scoring.flavours)."
    )
    granularity: Granularity = setting(
        "atom",
        "Granularity of ECE / AUROC / PRR in the leaderboard and the reasoning table (one of "
        "scoring.granularities).",
    )
    ece_calibration: CalibrationMethod = setting(
        "zscore_sigmoid",
        "Calibration method whose ECE is reported and compared: a name of "
        "saltbench.calibration.CALIBRATION_METHODS, computed by the metrics stage (in "
        "metrics.calibration_methods, or none).",
    )
    reasoning_level: ReasoningLevel = setting(
        "task", "task: pairs = tasks (metrics tables); sample: pairs = samples (units tables)."
    )
    paired_bootstrap: PositiveInt = setting(
        2000,
        "Resamples of the paired bootstraps: the task-level reasoning trade-off and the granularity table's "
        "atom-vs-line difference.",
    )
    intervention_fit: FitMethod = setting("logistic", "Model of the intervention effects.")
    intervention_bootstrap: Count = setting(
        200,
        "Cluster-bootstrap resamples of the intervention fits and the placement comparisons (0 = no "
        "intervals).",
    )
    position_bins: PositiveInt = setting(10, "Equal-width bins of k/n (clean-prefix accuracy).")
    corruption_bins: PositiveInt = setting(5, "Equal-width bins of the corrupted fraction.")
    rejection_points: Annotated[int, Keywords(minimum=2)] = setting(
        101, "Coverages of the averaged risk-coverage curves."
    )
    reliability_top: PositiveInt = setting(
        4, "Panels of the reliability diagrams (best-calibrated functions)."
    )
    reliability_granularity: Granularity = setting(
        "atom", "Granularity of the reliability diagrams (one of scoring.granularities)."
    )
    rejection_top: PositiveInt = setting(3, "Functions per risk-coverage panel (lowest AURC).")
    label_noise_epsilons: tuple[Annotated[float, Keywords(minimum=0, maximum=0.5)], ...] = setting(
        (0.0, 0.05, 0.1, 0.2, 0.3),
        "Fractions of the correctness labels flipped in the label-noise sensitivity table (each in "
        "[0, 0.5]).",
        minItems=1,
        uniqueItems=True,
    )
    min_answered_share: Annotated[float, Keywords(minimum=0, maximum=1)] = setting(
        0.9,
        "The findings page and the report name every model (and prompt style) whose answered responses are "
        "fewer than this share: its estimates rest on cut-off, unfenced or failed responses "
        "(docs/reasoning.md §3).",
    )
    eligible_answered_share: Annotated[float, Keywords(minimum=0, maximum=1)] = setting(
        0.5,
        "A model (and prompt style) whose answered responses are fewer than this share enters no pooled or "
        "compared estimate: findings, dominance, figures, label noise, reasoning pairs "
        "(docs/metrics.md §10).",
    )
    min_model_units: Count = setting(
        10,
        "A model's (style, task, granularity) cell enters a pooled or compared confidence estimate only with "
        "at least this many correct and this many incorrect units (docs/metrics.md §10; 0: no floor).",
    )
    label_noise_replicates: Annotated[int, Keywords(minimum=1, maximum=10000)] = setting(
        20,
        "Bootstrap-and-noise replicates per (model, style, task, granularity) cell of the label-noise table.",
    )
    min_units: PositiveInt = setting(
        20,
        "A pooled AUROC estimate resting on fewer correct or fewer incorrect units than this (summed over "
        "the eligible models) is drawn as "
        "unreliable (hollow grey marker) in the granularity figure and named as such on the findings page.",
    )
    explorer_alternatives: Annotated[int, Keywords(minimum=1, maximum=20)] = setting(
        5,
        "Top-k alternatives shown per token when hovering a unit in the explorer (results/explorer; at most "
        "inference.top_k are stored).",
    )
    explorer_list_size: PositiveInt = setting(
        25,
        "Entries of the explorer's lists 'confident and wrong' and 'unsure and right', per picked cell or "
        "per task.",
    )
