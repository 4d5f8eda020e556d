"""Scoring stage, samples family: the draws of a (model, style, task) -> the consistency columns of its units.

Rule ``score_units`` reads a model's draws tables (``data/draws/{model}/{style}/{task}.parquet``,
docs/generation.md §7) as an extra input when the run asks for draws (``inference.samples.n > 0``) and adds
``draws.agreement``, ``draws.entropy`` and ``draws.distinct`` to each units table with
:func:`saltbench.evaluation.draw_consistency` (docs/confidence.md §7), the draws evaluated with the same
options as the greedy answers. Without draws the units table is left exactly as it is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import polars as pl

from saltbench.core.vocabulary import ReasoningFormat
from saltbench.evaluation import CONSISTENCY_COLUMNS, EvaluateOptions, draw_consistency

log = logging.getLogger(__name__)


def with_draw_consistency(
    units: pl.DataFrame,
    draws: pl.DataFrame | None,
    *,
    scoring: Mapping[str, Any],
    reasoning: ReasoningFormat | None = None,
) -> pl.DataFrame:
    """``units`` (one task's units table, ``task`` column included) with the consistency columns of ``draws``.

    Args:
        units: the units table of one (model, style, task) (docs/confidence.md §6).
        draws: that (model, style, task)'s draws table (contract ``draws``), or ``None`` when the run asks
            for none: ``units`` is then returned unchanged, the same object.
        scoring: the config's ``scoring`` block: the draws are extracted, decomposed and aligned with the
            options the greedy answers were scored with (:meth:`EvaluateOptions.from_scoring`).
        reasoning: the model's reasoning format (docs/reasoning.md §2), as for the greedy answers.

    Returns:
        ``units``, rows in order, plus the Float64 columns :data:`~saltbench.evaluation.CONSISTENCY_COLUMNS`
        (``draws.agreement`` higher is more confident; ``draws.entropy``, ``draws.distinct`` lower is more
        confident; NaN on ``missing`` units). An empty units table gets the columns with no rows; an empty
        draws table (an imported file that carries no draws) gives NaN everywhere.

    Raises:
        ValueError: from :func:`draw_consistency`: draws of prompts without greedy units, or a greedy
            response without draws (the two tables were not made from the same prompts).
    """
    if draws is None:
        return units
    if units.height == 0 or draws.height == 0:
        if units.height:
            log.warning(
                "no draws (an imported file that carries none, docs/backends.md §9.7): %s are NaN",
                ", ".join(CONSISTENCY_COLUMNS),
            )
        nan = pl.lit(float("nan"), dtype=pl.Float64)
        return units.with_columns(nan.alias(name) for name in CONSISTENCY_COLUMNS)
    options = EvaluateOptions.from_scoring(scoring, reasoning=reasoning)
    started = time.process_time()
    scored = draw_consistency(units, draws, options=options)
    n_draws = draws.group_by("sample_id").len()["len"]
    log.info(
        "draw consistency: %d units, %d draws of %d prompts (%s per prompt) in %.3f CPU s",
        units.height,
        draws.height,
        n_draws.len(),
        n_draws.unique().sort().to_list(),
        time.process_time() - started,
    )
    return scored


DRAW_INPUT_COLUMNS: tuple[str, ...] = ("sample_id", "draw", "text", "finish_reason", "error")
"""The draws table's columns :func:`with_draw_consistency` reads (the per-token columns stay on disk)."""
