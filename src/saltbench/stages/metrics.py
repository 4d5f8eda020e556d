"""Metrics stage: a units table -> one row per (granularity, confidence, flavour, calibration, metric).

Every confidence column of the units table is scored, whatever its source (docs/confidence.md §Families): the
token functions in the run's flavours, then the estimators read from another source (CCP, the trace, the
draws, the second pass) wherever their column is present; the ``flavour`` column holds the source.

Protocol (docs/metrics.md §9, docs/confidence.md §5; the split is our choice — the paper's is not public):

* Units scored are the *response* units (correct, incorrect, selective, redundant); missing reference
  units only count for recall. Correctness = status ``correct``.
* ``precision`` / ``recall``: mean over responses of the per-response values of docs/evaluation.md §8
  (precision = C / (R + I), recall = C / G), CI by resampling responses.
* Ranking and rejection (``auroc_pooled``, ``auroc_per_response``, ``prr``, ``aurc``) use the raw
  scores oriented so that higher = more confident, on all responses; rows have ``calibration = none``.
  ``auroc_pooled`` pools every unit of every response into one ranking (the authors' "macro");
  ``auroc_per_response`` averages the defined per-response AUROCs (close to the authors' "micro").
* Calibration (``ece``, ``mce``, ``brier``): responses are split by sample id (seeded, fraction from
  config) into a calibration split, where each calibrator is fitted, and a disjoint evaluation split,
  where the metric is computed. ``none`` is only used for functions that already are probabilities.
* Every value has a percentile bootstrap interval over responses (seeded; NaN when undefined).

The metrics are those of the registry (:func:`saltbench.core.metric_registry.metric_registry`, plugins
included), each computed from what it takes (``responses``, ``scores``, ``scores_by_response`` or
``probabilities``), in registry order within each group of rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from saltbench.calibration import fit_calibrator, split_by_sample
from saltbench.confidence import CONFIDENCE_FUNCTIONS, ranking_scores
from saltbench.config import MetricsConfig
from saltbench.core.contracts import METRIC_ROW_COLUMNS, is_confidence_column
from saltbench.core.metric_registry import MetricInput, MetricSpec, metric_registry
from saltbench.core.vocabulary import FLAVOURS, RESPONSE_STATUSES, SOURCES
from saltbench.metrics import bootstrap_ci, bootstrap_cis

log = logging.getLogger(__name__)

METRIC_ROW_SCHEMA = METRIC_ROW_COLUMNS
"""Columns of the metrics table (the workflow adds model, style, task in front)."""


def _row(
    granularity: str,
    confidence: str | None,
    flavour: str | None,
    calibration: str | None,
    metric: str,
    ci: tuple[float, float, float],
    n_units: int,
    n_responses: int,
) -> dict[str, object]:
    return {
        "granularity": granularity,
        "confidence": confidence,
        "flavour": flavour,
        "calibration": calibration,
        "metric": metric,
        "value": ci[0],
        "ci_low": ci[1],
        "ci_high": ci[2],
        "n_units": n_units,
        "n_responses": n_responses,
    }


def _ci(
    fn: Callable[..., float],
    scores: np.ndarray,
    correct: np.ndarray,
    groups: np.ndarray,
    settings: MetricsConfig,
    seed: int,
    *,
    with_groups: bool = False,
) -> tuple[float, float, float]:
    if scores.size == 0:
        return (float("nan"),) * 3
    if settings.n_bootstrap == 0:
        value = fn(scores, correct, groups) if with_groups else fn(scores, correct)
        return float(value), float("nan"), float("nan")
    ci = bootstrap_ci(
        fn,
        scores,
        correct,
        groups,
        n_resamples=settings.n_bootstrap,
        alpha=1 - settings.ci_level,
        seed=seed,
        with_groups=with_groups,
    )
    return ci.point, ci.low, ci.high


def _ranking_cis(
    fns: Sequence[Callable[..., float]],
    scores: np.ndarray,
    correct: np.ndarray,
    groups: np.ndarray,
    settings: MetricsConfig,
    seed: int,
) -> list[tuple[float, float, float]]:
    """:func:`_ci` of each of ``fns`` on the same units, drawing the resamples once
    (:func:`~saltbench.metrics.bootstrap_cis`: the pooled ranking metrics share their block sums)."""
    if scores.size == 0 or settings.n_bootstrap == 0:
        return [_ci(fn, scores, correct, groups, settings, seed) for fn in fns]
    intervals = bootstrap_cis(
        list(fns),
        scores,
        correct,
        groups,
        n_resamples=settings.n_bootstrap,
        alpha=1 - settings.ci_level,
        seed=seed,
    )
    return [(ci.point, ci.low, ci.high) for ci in intervals]


def _taking(takes: MetricInput) -> list[MetricSpec]:
    """The metrics of the registry that take ``takes``, in registry order."""
    return [spec for spec in metric_registry().values() if spec.takes == takes]


def response_accuracy(units: pl.DataFrame) -> pl.DataFrame:
    """Per (granularity, response): precision = C / (R + I) and recall = C / G (0 when undefined).

    ``I`` (internal missing) counts missing units followed by a later response unit (dynamic alignment).
    """
    later_response = pl.col("status").ne("missing").cast(pl.Int32).reverse().cum_sum().reverse().over(
        "granularity", "sample_id"
    ) - pl.col("status").ne("missing").cast(pl.Int32)
    flagged = units.sort("granularity", "sample_id", "unit_index").with_columns(
        internal_missing=(pl.col("status").eq("missing") & (later_response > 0))
    )
    stats = flagged.group_by("granularity", "sample_id", maintain_order=True).agg(
        correct=pl.col("status").eq("correct").sum(),
        response=pl.col("status").is_in(RESPONSE_STATUSES).sum(),
        internal=pl.col("internal_missing").sum(),
        reference=pl.col("reference_unit").is_not_null().sum(),
    )

    def ratio(num: str, den: pl.Expr) -> pl.Expr:
        return pl.when(den > 0).then(pl.col(num) / den).otherwise(0.0)

    return stats.with_columns(
        precision=ratio("correct", pl.col("response") + pl.col("internal")),
        recall=ratio("correct", pl.col("reference")),
    )


def scored_functions(columns: Sequence[str]) -> list[str]:
    """The confidence functions with a column among ``columns`` (``{flavour}.{name}``), first seen first.

    >>> scored_functions(["n_tokens", "topk.perplexity", "topk.mean_margin", "full.perplexity"])
    ['perplexity', 'mean_margin']
    """
    names = [c.split(".", 1)[1] for c in columns if is_confidence_column(c)]
    return list(dict.fromkeys(names))


def scored_sources(
    columns: Sequence[str], confidences: Sequence[str], flavours: Sequence[str]
) -> list[tuple[str, str]]:
    """The ``(source, name)`` pairs :func:`compute_metrics` scores, in order: each of ``confidences`` in each
    of ``flavours`` that has its column, then the estimators of ``confidences`` whose own source
    (:attr:`~saltbench.confidence.ConfidenceSpec.source`) is another one, or is a source beyond the flavours,
    with a column among ``columns``.

    >>> scored_sources(["full.perplexity", "draws.agreement", "topk.ccp"], ["perplexity", "agreement", "ccp"],
    ...                ["full"])
    [('full', 'perplexity'), ('topk', 'ccp'), ('draws', 'agreement')]
    """
    present = set(columns)
    pairs = [(f, n) for f in flavours for n in confidences if f"{f}.{n}" in present]
    for source in SOURCES:
        for name in confidences:
            own = CONFIDENCE_FUNCTIONS[name].source if name in CONFIDENCE_FUNCTIONS else ""
            beyond = own == source or source not in FLAVOURS  # not a token function in an unscored flavour
            if beyond and (source, name) not in pairs and f"{source}.{name}" in present:
                pairs.append((source, name))
    return pairs


def compute_metrics(
    units: pl.DataFrame,
    *,
    confidences: Sequence[str] | None = None,
    flavours: Sequence[str] = ("topk", "full"),
    settings: MetricsConfig | None = None,
    seed: int = 0,
) -> pl.DataFrame:
    """All metrics of one units table (see the module docstring for the protocol).

    ``confidences``: the functions to evaluate (default: every function with a column in ``units``, in
    column order); a function is evaluated in each of ``flavours`` that has its column, an estimator of
    another source (draws, second pass, trace, CCP's topk) wherever its column is (:func:`scored_sources`).
    ``settings``: the
    ``metrics`` block (default: its defaults); ``seed``: of the calibration split and the bootstrap. Returns
    a frame with :data:`METRIC_ROW_SCHEMA`; undefined values are NaN, never an exception.
    """
    settings = settings or MetricsConfig()
    if confidences is None:
        confidences = scored_functions(units.columns)
    rows: list[dict[str, object]] = []
    acc = response_accuracy(units)
    for granularity in units["granularity"].unique(maintain_order=True).cast(pl.String).to_list():
        per_response = acc.filter(pl.col("granularity").cast(pl.String) == granularity)
        codes = np.arange(per_response.height)
        for spec in _taking("responses"):
            vals = per_response[spec.name].to_numpy().astype(np.float64)
            ci = _ci(spec.bind(settings), vals, vals, codes, settings, seed)
            rows.append(
                _row(
                    granularity,
                    None,
                    None,
                    None,
                    spec.name,
                    ci,
                    int(per_response["response"].sum()),
                    per_response.height,
                )
            )
        scored = units.filter(
            (pl.col("granularity").cast(pl.String) == granularity) & pl.col("status").is_in(RESPONSE_STATUSES)
        )
        if scored.height == 0:
            continue
        rows += _granularity_rows(granularity, scored, confidences, flavours, settings, seed)
    return (
        pl.DataFrame(rows, schema=METRIC_ROW_SCHEMA, orient="row")
        if rows
        else pl.DataFrame(schema=METRIC_ROW_SCHEMA)
    )


def _granularity_rows(
    granularity: str,
    scored: pl.DataFrame,
    confidences: Sequence[str],
    flavours: Sequence[str],
    settings: MetricsConfig,
    seed: int,
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    correct = scored["is_correct"].to_numpy().astype(np.int8)
    sample_ids = scored["sample_id"].to_numpy()
    _, groups = np.unique(sample_ids, return_inverse=True)
    n_responses = int(groups.max()) + 1
    calib_mask = split_by_sample(sample_ids, settings.calibration_fraction, seed) if n_responses > 1 else None
    ranking = {spec.name: spec.bind(settings) for spec in _taking("scores")}
    grouped = {spec.name: spec.bind(settings) for spec in _taking("scores_by_response")}
    for flavour, name in scored_sources(scored.columns, confidences, flavours):
        raw = scored[f"{flavour}.{name}"].to_numpy().astype(np.float64)
        defined = np.isfinite(raw)
        if not defined.any():
            continue
        raw_d, y, g = raw[defined], correct[defined], groups[defined]
        oriented = ranking_scores(name, raw_d)
        n_units = int(raw_d.size)
        intervals = _ranking_cis(list(ranking.values()), oriented, y, g, settings, seed)
        for metric, ci in zip(ranking, intervals):
            rows.append(_row(granularity, name, flavour, "none", metric, ci, n_units, n_responses))
        for metric, fn in grouped.items():
            ci = _ci(fn, oriented, y, g, settings, seed, with_groups=True)
            rows.append(_row(granularity, name, flavour, "none", metric, ci, n_units, n_responses))
        rows += _calibration_rows(
            granularity,
            name,
            flavour,
            raw_d,
            y,
            g,
            None if calib_mask is None else calib_mask[defined],
            settings,
            seed,
        )
    return rows


def _calibration_rows(
    granularity: str,
    name: str,
    flavour: str,
    raw: np.ndarray,
    y: np.ndarray,
    g: np.ndarray,
    calib_mask: np.ndarray | None,
    settings: MetricsConfig,
    seed: int,
) -> list[dict[str, object]]:
    spec = CONFIDENCE_FUNCTIONS[name]
    methods = list(settings.calibration_methods)
    if not spec.needs_calibration and "none" not in methods:
        methods.append("none")
    calibration = {metric.name: metric.bind(settings) for metric in _taking("probabilities")}
    rows: list[dict[str, object]] = []
    for method in methods:
        if method == "none" and spec.needs_calibration:
            continue
        nan3 = (float("nan"),) * 3
        if calib_mask is None or calib_mask.all() or not calib_mask.any():
            results = dict.fromkeys(calibration, nan3)
            n_eval, n_resp = 0, 0
        else:
            calibrator = fit_calibrator(method, raw[calib_mask], y[calib_mask], spec.higher_is_confident)
            evaluation = ~calib_mask
            probs = np.clip(calibrator.apply(raw[evaluation]), 0.0, 1.0)
            ye, ge = y[evaluation], g[evaluation]
            results = {metric: _ci(fn, probs, ye, ge, settings, seed) for metric, fn in calibration.items()}
            n_eval, n_resp = int(probs.size), int(np.unique(ge).size)
        for metric, ci in results.items():
            rows.append(_row(granularity, name, flavour, method, metric, ci, n_eval, n_resp))
    return rows
