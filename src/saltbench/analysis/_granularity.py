"""Ranking quality by unit granularity: AUROC at atom vs line vs generation, pooled and per response."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import polars as pl

from saltbench.confidence import CONFIDENCE_FUNCTIONS, ranking_scores
from saltbench.core.contracts import GRANULARITY_TABLE, confidence_column
from saltbench.core.seeds import derive_seed
from saltbench.core.vocabulary import FLAVOURS, GRANULARITIES
from saltbench.metrics import group_counts, weighted_auroc

from ._common import METRICS_SCHEMA, NAN, nan_for_null, require_columns, response_units
from ._reasoning import _percentile_ci

GRANULARITY_SCHEMA: Mapping[str, pl.DataType] = GRANULARITY_TABLE.columns
"""Columns of :func:`granularity_table` (the contract :data:`saltbench.core.contracts.GRANULARITY_TABLE`)."""

AUROC_METRICS: tuple[str, ...] = ("auroc_pooled", "auroc_per_response")

CELL: tuple[str, ...] = ("model", "style", "task", "granularity")

_DELTA_COLUMNS: tuple[str, ...] = ("delta_vs_line", "delta_ci_low", "delta_ci_high", "n_models_delta")
"""The granularity table's columns from :func:`granularity_deltas`."""

_COUNTS: tuple[str, ...] = ("n_correct", "n_incorrect", "n_responses")
"""The support of a granularity-table row: the units its AUROCs rank and the responses they lie in."""

COUNTS_SCHEMA: Mapping[str, pl.DataType] = {
    "model": pl.String(),
    "style": pl.String(),
    "task": pl.String(),
    "granularity": pl.String(),
    **{name: pl.Int64() for name in _COUNTS},
    **{f"{name}_mixed": pl.Int64() for name in _COUNTS},
}
"""Columns of :func:`auroc_unit_counts`."""


def _response_counts(scored: pl.DataFrame) -> pl.DataFrame:
    """Per (model, style, task, granularity): the correct and incorrect units and the responses, of all
    responses and of those holding both classes (``_mixed``)."""
    correct = pl.col("status").cast(pl.String) == "correct"
    per_response = scored.group_by([pl.col(CELL).cast(pl.String), "sample_id"]).agg(
        n_correct=correct.sum().cast(pl.Int64), n_incorrect=(~correct).sum().cast(pl.Int64)
    )
    mixed = (pl.col("n_correct") > 0) & (pl.col("n_incorrect") > 0)
    return per_response.group_by(list(CELL)).agg(
        pl.col("n_correct", "n_incorrect").sum(),
        pl.len().cast(pl.Int64).alias("n_responses"),
        *(pl.col(name).filter(mixed).sum().alias(f"{name}_mixed") for name in ("n_correct", "n_incorrect")),
        mixed.sum().cast(pl.Int64).alias("n_responses_mixed"),
    )


def auroc_unit_counts(
    units: pl.DataFrame | Iterable[pl.DataFrame],
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
) -> pl.DataFrame:
    """The units an AUROC of ``confidence`` ranks, per (model, style, task, granularity): the response units
    (status correct, incorrect, selective, redundant) whose ``{flavour}.{confidence}`` value is finite, split
    into ``n_correct`` and ``n_incorrect`` (every other response status) — the metrics stage's protocol
    (docs/metrics.md §9) — and the ``n_responses`` (``sample_id``) they lie in. The ``_mixed`` columns count
    the same over the responses that hold both classes: the only ones a per-response AUROC is defined on.

    ``units``: a units table or an iterable of them (one file at a time keeps memory bounded; a response's
    units in one table).

    >>> units = pl.DataFrame({"model": "m", "style": "direct", "task": "dna", "granularity": "atom",
    ...     "sample_id": ["a", "a", "b", "b", "c"], "status": ["correct", "incorrect", "missing", "correct",
    ...     "correct"], "topk.mean_probability": [0.9, 0.2, float("nan"), 0.5, float("nan")]})
    >>> auroc_unit_counts(units).select("n_correct", "n_incorrect", "n_responses", "n_responses_mixed").row(0)
    (2, 1, 2, 1)
    """
    column = confidence_column(flavour, confidence)
    frames = [units] if isinstance(units, pl.DataFrame) else units
    parts = []
    for frame in frames:
        require_columns(frame, [*CELL, "sample_id", "status", column], "units")
        parts.append(_response_counts(response_units(frame).filter(pl.col(column).is_finite())))
    if not parts:
        return pl.DataFrame(schema=dict(COUNTS_SCHEMA))
    counts = pl.concat(parts).group_by(list(CELL)).agg(pl.exclude(CELL).sum())
    return counts.select(pl.col(name).cast(dtype) for name, dtype in COUNTS_SCHEMA.items()).sort(list(CELL))


_SUMMARY_KEYS: tuple[str, ...] = ("task", "style", "granularity", "metric")
"""The columns that identify a granularity-table row; per-model values are summarised per combination."""


def _auroc_rows(metrics: pl.DataFrame, confidence: str, flavour: str) -> pl.DataFrame:
    """The metrics rows of the AUROC kinds (:data:`AUROC_METRICS`) of one function and flavour, raw ranking
    (calibration ``"none"``)."""
    return metrics.filter(
        pl.col("metric").is_in(AUROC_METRICS)
        & (pl.col("confidence") == confidence)
        & (pl.col("flavour") == flavour)
        & (pl.col("calibration") == "none")
    )


def _complete_grid(metrics: pl.DataFrame) -> pl.DataFrame:
    """Every task × style × granularity × AUROC metric, tasks and styles in their order in ``metrics``."""
    tasks = metrics["task"].unique(maintain_order=True).to_list()
    styles = metrics["style"].unique(maintain_order=True).to_list()
    return pl.DataFrame(
        [
            (task, style, granularity, metric)
            for task in tasks
            for style in styles
            for granularity in GRANULARITIES
            for metric in AUROC_METRICS
        ],
        schema={"task": pl.String(), "style": pl.String(), "granularity": pl.String(), "metric": pl.String()},
        orient="row",
    )


def _per_model_values(rows: pl.DataFrame, counts: pl.DataFrame | None) -> pl.DataFrame:
    """Mean value per task, style, granularity, metric and model, with the model's support where its value
    is defined (0 where it is not; null without ``counts``): of every response for the pooled AUROC, of
    the responses holding both classes for the per-response AUROC."""
    per_model = rows.group_by([*_SUMMARY_KEYS, "model"], maintain_order=True).agg(pl.col("value").mean())
    if counts is None:
        return per_model.with_columns(pl.lit(None, pl.Int64).alias(column) for column in _COUNTS)
    per_response = pl.col("metric") == "auroc_per_response"
    joined = per_model.join(counts, on=list(CELL), how="left", maintain_order="left")
    return joined.with_columns(
        # a model's support counts where its value is defined (the models the summary is over)
        pl.when(pl.col("value").is_finite())
        .then(pl.when(per_response).then(pl.col(f"{column}_mixed")).otherwise(pl.col(column)).fill_null(0))
        .otherwise(0)
        .alias(column)
        for column in _COUNTS
    )


def _values_over_models(per_model: pl.DataFrame, counted: bool) -> pl.DataFrame:
    """The per-model values of each task, style, granularity and metric as a list, with the support counts
    summed over models (``counted``) or the null count carried over."""
    return per_model.group_by(list(_SUMMARY_KEYS), maintain_order=True).agg(
        pl.col("value"),
        *(pl.col(column).sum().cast(pl.Int64) if counted else pl.col(column).first() for column in _COUNTS),
    )


def _model_statistics(values: Sequence[float]) -> dict[str, float | int]:
    """Mean, median and quartiles of the finite per-model values (NaN when there is none) and their number."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    statistics = (
        (float(finite.mean()), float(np.median(finite)), *map(float, np.quantile(finite, [0.25, 0.75])))
        if finite.size
        else (np.nan,) * 4
    )
    return dict(zip(("mean", "median", "q25", "q75"), statistics)) | {"n_models": int(finite.size)}


def _summary_table(grouped: pl.DataFrame) -> pl.DataFrame:
    """One row per task, style, granularity and metric of ``grouped``: the statistics of its per-model values
    and its unit counts (:data:`GRANULARITY_SCHEMA`)."""
    records = []
    for record in grouped.iter_rows(named=True):
        keys = {key: record[key] for key in _SUMMARY_KEYS}
        counts = {column: record[column] for column in _COUNTS}
        records.append(keys | _model_statistics(record["value"]) | counts)
    schema = {name: dtype for name, dtype in GRANULARITY_SCHEMA.items() if name not in _DELTA_COLUMNS}
    return pl.DataFrame(records, schema=schema)


DELTA_REFERENCE = "line"
"""The granularity every other one is compared with (:func:`granularity_deltas`)."""

DELTA_SCHEMA: Mapping[str, pl.DataType] = {
    "task": pl.String(),
    "style": pl.String(),
    "granularity": pl.String(),
    "metric": pl.String(),
    "delta_vs_line": pl.Float64(),
    "delta_ci_low": pl.Float64(),
    "delta_ci_high": pl.Float64(),
    "n_models_delta": pl.Int64(),
}
"""Columns of :func:`granularity_deltas`."""


def _prompt_counts(sample_ids: np.ndarray, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's prompt code and the ``(1 + R, S)`` multiplicities of the ``S`` prompts: a row of ones
    (the data), then ``R`` resamples of the prompts drawn with replacement (``numpy.random.default_rng``
    of ``seed``)."""
    prompts, codes = np.unique(sample_ids, return_inverse=True)
    draws = np.random.default_rng(seed).integers(0, prompts.size, size=(n_resamples, prompts.size))
    counts = np.vstack([np.ones((1, prompts.size)), group_counts(draws, prompts.size)])
    return codes.reshape(-1), counts


PAIR_PROMPTS = 1000
"""Most prompts for which :func:`_resampled_aurocs` uses the prompts' pair counts (their ``S × S`` matrix
and an ``O(R S^2)`` product)."""


def _pair_auroc(
    scores: np.ndarray, labels: np.ndarray, prompts: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    r"""Pooled AUROC under every row of the prompt multiplicities ``counts`` ``(R, S)``, from the prompts'
    pair counts: :math:`U_{st}` = pairs of a correct unit of prompt :math:`s` above an incorrect one of
    prompt :math:`t` (ties one half). A resample drawing prompt :math:`s` :math:`c_s` times holds
    :math:`c_s c_t U_{st}` such pairs, so :math:`\mathrm{AUROC} = c^\top U c / ((c \cdot P)(c \cdot N))`
    with :math:`P_s`, :math:`N_s` the prompt's correct and incorrect units (NaN when either sum is 0):
    Mann–Whitney with average ranks, the value :func:`saltbench.metrics.weighted_auroc` gives (integers and
    halves, so exact), in :math:`O(R S^2)` instead of :math:`O(R \cdot \text{units})`."""
    n_prompts = counts.shape[1]
    correct = labels > 0
    order = np.argsort(scores[correct], kind="stable")  # sorted needles: searchsorted runs in cache
    hits, hit_prompts = scores[correct][order], prompts[correct][order]
    wrong, wrong_prompts = scores[~correct], prompts[~correct]
    by_prompt = np.lexsort((wrong, wrong_prompts))  # the incorrect units, by prompt, then by score
    present, starts = np.unique(wrong_prompts[by_prompt], return_index=True)
    pairs = np.zeros((n_prompts, n_prompts))
    for prompt, below in zip(present, np.split(wrong[by_prompt], starts[1:])):  # one column per prompt
        ranks = np.searchsorted(below, hits, "left") + np.searchsorted(below, hits, "right")
        pairs[:, prompt] = np.bincount(hit_prompts, weights=ranks / 2.0, minlength=n_prompts)
    n_hits = counts @ np.bincount(hit_prompts, minlength=n_prompts).astype(np.float64)
    n_wrong = counts @ np.bincount(wrong_prompts, minlength=n_prompts).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.einsum("rs,rs->r", counts @ pairs, counts) / (n_hits * n_wrong)
    return np.where((n_hits > 0) & (n_wrong > 0), out, NAN)


def _resampled_aurocs(
    cell: pl.DataFrame, column: str, confidence: str, counts: np.ndarray
) -> dict[tuple[str, str], np.ndarray]:
    """Per (model, granularity) of one task × style: its pooled AUROC under every row of ``counts`` (the
    data first, then each resample; correct = status ``correct``, scores oriented higher = more
    confident), by :func:`_pair_auroc` when there are at most :data:`PAIR_PROMPTS` prompts and the square
    of their number is at most 100 times the units, else by :func:`saltbench.metrics.weighted_auroc`: the
    same values, by the computation measured faster there (2,000 resamples, 2026-12-05: 300 prompts of 50
    units each about 10× faster by pairs, 1,000 of 40 about 3×; 300 of one unit about 2× slower)."""
    out = {}
    for (model, granularity), units in cell.partition_by(["model", "granularity"], as_dict=True).items():
        scores = ranking_scores(confidence, units[column].to_numpy())
        labels = (units["status"].cast(pl.String) == "correct").to_numpy().astype(np.float64)
        prompts = units["_prompt"].to_numpy()
        n_prompts = counts.shape[1]
        by_pairs = n_prompts <= PAIR_PROMPTS and n_prompts**2 <= 100 * scores.size
        estimate = _pair_auroc if by_pairs else weighted_auroc
        out[(str(model), str(granularity))] = estimate(scores, labels, prompts, counts)
    return out


def _cell_deltas(
    cell: pl.DataFrame, column: str, confidence: str, n_resamples: int, alpha: float, seed: int
) -> list[dict[str, object]]:
    """The rows of :func:`granularity_deltas` of one task × style (every granularity but the reference)."""
    task, style = str(cell["task"][0]), str(cell["style"][0])
    codes, counts = _prompt_counts(
        cell["sample_id"].cast(pl.String).to_numpy(),
        n_resamples,
        derive_seed(seed, "granularity", task, style),
    )
    values = _resampled_aurocs(cell.with_columns(pl.Series("_prompt", codes)), column, confidence, counts)
    models = sorted({model for model, _ in values})
    missing = np.full(counts.shape[0], NAN)
    rows = []
    for granularity in (g for g in GRANULARITIES if g != DELTA_REFERENCE):
        differences = np.array(
            [
                values.get((m, granularity), missing) - values.get((m, DELTA_REFERENCE), missing)
                for m in models
            ]
        ).reshape(len(models), counts.shape[0])
        paired = differences[np.isfinite(differences[:, 0])]
        # a resample where a paired model's AUROC is undefined (one class drawn) leaves the mean undefined
        mean = paired.mean(axis=0) if paired.size else missing
        interval = _percentile_ci(float(mean[0]), mean[1:], alpha, 0.5)
        rows.append(
            {"task": task, "style": style, "granularity": granularity, "metric": "auroc_pooled"}
            | dict(zip(_DELTA_COLUMNS, (*interval, paired.shape[0])))
        )
    return rows


def granularity_deltas(
    units: pl.DataFrame,
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
    n_resamples: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> pl.DataFrame:
    r"""Pooled AUROC at each granularity minus at line level, per task × style, with a paired bootstrap
    interval (docs/metrics.md §3.4).

    Per model :math:`m` of a task and style, :math:`d_m = \mathrm{AUROC}_g(m) - \mathrm{AUROC}_\text{line}(m)`
    (the pooled AUROC of ``{flavour}.{confidence}``, the metrics stage's protocol: response units with a
    finite value, correct = status ``correct``); ``delta_vs_line`` is the mean of :math:`d_m` over the
    ``n_models_delta`` models where both AUROCs are defined — the difference of the two means of
    :func:`granularity_table` where the same models define both.

    Interval: percentile bootstrap over prompts (``sample_id``), ``n_resamples`` resamples drawn with
    replacement from ``numpy.random.default_rng(derive_seed(seed, "granularity", task, style))``. A drawn
    prompt brings every unit of every model's response to it, at every granularity: the atoms and lines of
    a response stay together and both granularities (and all models) see the same resamples, so the
    interval is paired. A resample where a model's AUROC is undefined gives no value; with fewer than
    half of the resamples defined the bounds are NaN. Computed from the prompts' multiplicities in each
    resample (:func:`saltbench.metrics.weighted_auroc` or the prompts' pair counts, :func:`_pair_auroc`;
    no loop over resamples or units).

    ``units`` must hold every model of each task and style it holds (the resamples are drawn per task and
    style). Returns :data:`DELTA_SCHEMA`, one row per task × style × granularity other than line
    (``metric`` ``auroc_pooled``).
    """
    column = confidence_column(flavour, confidence)
    require_columns(units, ["model", "style", "task", "granularity", "sample_id", "status", column], "units")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    scored = response_units(units).filter(pl.col(column).is_finite())
    cells = scored.partition_by(["task", "style"], maintain_order=True)
    rows = [row for cell in cells for row in _cell_deltas(cell, column, confidence, n_resamples, alpha, seed)]
    return pl.DataFrame(rows, schema=dict(DELTA_SCHEMA))


def granularity_table(
    metrics: pl.DataFrame,
    *,
    confidence: str = "mean_probability",
    flavour: str = "topk",
    counts: pl.DataFrame | None = None,
    deltas: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """AUROC of one confidence function per task × style × granularity, summarised across models.

    For each task, prompt style, granularity (atom, line, generation) and AUROC kind (``auroc_pooled``:
    all units of all responses ranked together; ``auroc_per_response``: mean of the AUROCs inside each
    response), the per-model values (raw ranking, calibration ``"none"``) are summarised by their mean,
    median and inter-quartile range over the models where the value is defined (``n_models``).
    Generation-level per-response AUROC is undefined (one unit per response) and appears as NaN with
    ``n_models = 0``: every task × style × granularity × metric combination of the input is listed, so a
    missing value is visible instead of silently absent.

    ``n_correct`` / ``n_incorrect`` / ``n_responses``: the units the summarised AUROCs rank and the responses
    they lie in (:func:`auroc_unit_counts` of the same function and flavour, ``counts``) — for the
    per-response AUROC only those of responses holding both classes, the only ones it is defined on —
    summed over the models whose value is defined (0 when none is); null when ``counts`` is not given. An
    AUROC resting on little support is noise: the figure and the findings page mark estimates below
    ``analysis.min_units`` (:func:`too_little_support`, docs/explorer.md §5).

    ``delta_vs_line``, ``delta_ci_low``, ``delta_ci_high``, ``n_models_delta``: the paired difference of
    the pooled AUROC from the line level's and its interval (:func:`granularity_deltas`, ``deltas``) on
    the atom and generation rows of ``auroc_pooled``; NaN (and 0 models) on the other rows and without
    ``deltas``.

    Args:
        metrics: concatenated metrics tables.
        confidence: confidence function.
        flavour: ``"topk"`` or ``"full"``.
        counts: :func:`auroc_unit_counts` output.
        deltas: :func:`granularity_deltas` output.
    """
    require_columns(metrics, METRICS_SCHEMA, "metrics")
    if confidence not in CONFIDENCE_FUNCTIONS:
        raise ValueError(f"confidence must be one of {tuple(CONFIDENCE_FUNCTIONS)}, got {confidence!r}")
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be one of {FLAVOURS}, got {flavour!r}")
    rows = _auroc_rows(metrics, confidence, flavour)
    grid = _complete_grid(metrics)
    grouped = _values_over_models(_per_model_values(rows, counts), counted=counts is not None)
    summary = _summary_table(grouped)
    result = grid.join(summary, on=list(_SUMMARY_KEYS), how="left", maintain_order="left")
    filled = [pl.col("n_models").fill_null(0), pl.col("n_models_delta").fill_null(0)]
    if counts is not None:
        filled += [pl.col(column).fill_null(0) for column in _COUNTS]
    found = pl.DataFrame(schema=dict(DELTA_SCHEMA)) if deltas is None else deltas.select(list(DELTA_SCHEMA))
    result = result.join(found, on=list(_SUMMARY_KEYS), how="left", maintain_order="left")
    return nan_for_null(result.with_columns(filled)).select(list(GRANULARITY_SCHEMA))


def too_few_units(min_units: int) -> pl.Expr:
    """True on the rows of a granularity table whose estimate rests on fewer than ``min_units`` correct or
    fewer than ``min_units`` incorrect units (``analysis.min_units``); null where the units were not
    counted."""
    return (pl.col("n_correct") < min_units) | (pl.col("n_incorrect") < min_units)


def too_little_support(min_units: int) -> pl.Expr:
    """True on the rows of a granularity table that are no finding (drawn hollow): a pooled AUROC resting on
    fewer than ``min_units`` correct or incorrect units (:func:`too_few_units`), a per-response AUROC on
    fewer than ``min_units`` responses holding both classes (each defines one of the AUROCs it averages);
    null where nothing was counted."""
    per_response = pl.col("metric") == "auroc_per_response"
    return pl.when(per_response).then(pl.col("n_responses") < min_units).otherwise(too_few_units(min_units))
