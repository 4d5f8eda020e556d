"""Tables of the SALT study, as pure functions of the tidy metrics / units / interventions tables.

Every function takes polars frames with the upstream schemas (:mod:`saltbench.analysis._common`) and
returns a tidy polars frame; :func:`write_table_outputs` writes one as Parquet, CSV and LaTeX. The tables
themselves (names, formats, when a run makes them, the rule behind each) are declared in
:mod:`saltbench.workflow.tables`, their contracts in :data:`saltbench.core.contracts.TABLES`; the function
behind each is named in its contract's docstring and in docs/architecture.md §4.
"""

from saltbench.core.vocabulary import GRANULARITIES, RESPONSE_STATUSES

from ._common import (
    ASPECT_METRICS,
    INTERVENTIONS_SCHEMA,
    METRICS_SCHEMA,
    TRAIN_LOG_SCHEMA,
    combine_intervals,
    read_tables,
    read_train_logs,
    wilson_interval,
)
from ._cost import estimator_cost, family_costs
from ._dominance import across_families, dominance, dominance_cells
from ._eligibility import (
    eligibility_table,
    eligible_metrics,
    eligible_styles,
    eligible_units,
    excluded_cells,
    excluded_models,
    exclusion_lines,
    mark_eligible,
)
from ._export import TABLE_FORMATS, latex_escape, to_latex, write_table_outputs
from ._findings import FINDINGS_TABLES, findings_markdown
from ._frontier import frontier
from ._granularity import (
    auroc_unit_counts,
    granularity_deltas,
    granularity_table,
    too_few_units,
    too_little_support,
)
from ._health import (
    DRAW_HEALTH_COLUMNS,
    RESPONSE_COLUMNS,
    SECOND_PASS_COUNTS,
    draw_counts,
    generation_health,
    second_pass_counts,
    thin_models,
)
from ._interventions import (
    FIT_STATUSES,
    MIN_SAMPLES,
    accuracy_by_corruption,
    accuracy_by_placement,
    accuracy_by_position,
    distinct_interventions,
    fit_intervention_effects,
    placement_contrasts,
    separated,
)
from ._label_noise import (
    LABEL_NOISE_CELLS_SCHEMA,
    LABEL_NOISE_SCHEMA,
    NOISE_MODES,
    expected_auroc,
    flip_labels,
    label_noise_cells,
    label_noise_sensitivity,
    label_noise_summary,
)
from ._leaderboard import accuracy_by_task, leaderboard, select_metric
from ._pairs import Comparison, ModelPair, base_model, comparisons, model_pairs
from ._reasoning import (
    MIN_PAIRS,
    TRADEOFF_STATUSES,
    comparison_seed,
    empty_tradeoff,
    paired_bootstrap,
    paired_test,
    reasoning_tradeoff,
    reasoning_tradeoff_units,
)
from ._recovery import (
    MIN_CLASS_UNITS,
    RANKED_COLUMNS,
    SimulatedRun,
    planted_values,
    ranked_classes,
    recovery_estimates,
    recovery_table,
    scored_estimators,
)
from ._unit_tables import BASELINES, rejection_table, reliability_table

__all__ = [
    "across_families",
    "estimator_cost",
    "family_costs",
    "frontier",
    "eligibility_table",
    "eligible_metrics",
    "eligible_styles",
    "eligible_units",
    "excluded_cells",
    "excluded_models",
    "exclusion_lines",
    "mark_eligible",
    "ASPECT_METRICS",
    "FINDINGS_TABLES",
    "GRANULARITIES",
    "INTERVENTIONS_SCHEMA",
    "LABEL_NOISE_CELLS_SCHEMA",
    "LABEL_NOISE_SCHEMA",
    "METRICS_SCHEMA",
    "NOISE_MODES",
    "FIT_STATUSES",
    "MIN_CLASS_UNITS",
    "MIN_PAIRS",
    "MIN_SAMPLES",
    "TRADEOFF_STATUSES",
    "RANKED_COLUMNS",
    "RESPONSE_COLUMNS",
    "SECOND_PASS_COUNTS",
    "RESPONSE_STATUSES",
    "TRAIN_LOG_SCHEMA",
    "Comparison",
    "ModelPair",
    "SimulatedRun",
    "accuracy_by_corruption",
    "accuracy_by_placement",
    "placement_contrasts",
    "accuracy_by_position",
    "accuracy_by_task",
    "generation_health",
    "draw_counts",
    "DRAW_HEALTH_COLUMNS",
    "planted_values",
    "ranked_classes",
    "recovery_estimates",
    "recovery_table",
    "scored_estimators",
    "second_pass_counts",
    "thin_models",
    "base_model",
    "combine_intervals",
    "comparisons",
    "distinct_interventions",
    "dominance",
    "dominance_cells",
    "expected_auroc",
    "findings_markdown",
    "fit_intervention_effects",
    "flip_labels",
    "label_noise_cells",
    "label_noise_sensitivity",
    "label_noise_summary",
    "separated",
    "granularity_table",
    "granularity_deltas",
    "auroc_unit_counts",
    "too_few_units",
    "too_little_support",
    "latex_escape",
    "leaderboard",
    "model_pairs",
    "paired_bootstrap",
    "paired_test",
    "read_tables",
    "read_train_logs",
    "comparison_seed",
    "empty_tradeoff",
    "reasoning_tradeoff",
    "reasoning_tradeoff_units",
    "rejection_table",
    "reliability_table",
    "select_metric",
    "to_latex",
    "wilson_interval",
    "write_table_outputs",
    "TABLE_FORMATS",
    "BASELINES",
]
