"""Planted truth: what a simulated model's parameters say each estimate of the study should be, and whether
the run recovered it (docs/simulation.md §4).

:func:`planted_values` turns the parameters of the run's simulated models
(:class:`~saltbench.inference.simulated.SimulationParams`) and its datasets into one planted value per
quantity; :func:`recovery_estimates` reads the same quantities, with their intervals, from the run's tables;
:func:`recovery_table` joins them (``inside``: the planted value lies in the interval).

Quantities (``quantity`` column), per model, style and task unless said otherwise:

* ``{g}_precision``, ``{g}_auroc``, ``{g}_brier``, ``{g}_ece`` — at each granularity ``g`` of
  ``granularities`` (``atom``, ``line`` and the configured one, ``analysis.granularity``): the mean over
  responses of the per-response precision, and the pooled AUROC, Brier and ECE of the configured confidence
  function (``metrics.default_confidence``, flavour ``analysis.flavour``; Brier and ECE uncalibrated,
  ``calibration: none``). The planted values come from the atom chain by Monte Carlo (``replicates`` answers
  per length) and the scoring rules (:mod:`saltbench.analysis._planted`, docs/simulation.md §4.1): responses
  cut inside their thinking, or a ``think`` model's responses without a trace, have no units (precision 0);
  those cut inside their answer write the units of the cut text. A value that is not derivable is NaN
  ("not planted", ``inside`` null): the AUROC of a function that counts tokens (``log_probability_sum``) or
  of a plugin, Brier and ECE of a function that is no known probability, any confidence value at a
  granularity whose units mix latents (a line of several atoms with one latent per atom), and every value of
  a ``cot`` cell with unfenced answers (the working is scored with them) or of a cell with cut answers
  under dynamic alignment;
* ``truncated_share`` — the share of responses cut off: ``ρq + (1 − ρq)·truncation_rate`` for a model with
  ``reasoning_format: think`` (``ρ = reasoning_rate``, ``q`` the share of its traces cut inside the thinking
  under the cell's budget, :func:`~saltbench.inference.simulated.planted_thinking`), ``truncation_rate``
  for any other (interval: Wilson, from the health table's counts). Exact when the budget leaves room for
  the answer after every trace that ends before it;
* ``reasoning_truncated_share`` (``think`` models) — the share of responses cut with every token reasoning
  (``truncated`` and ``num_reasoning_tokens = num_generated_tokens``, from the units tables' response
  columns): ``ρq + (1 − ρ)·truncation_rate`` (a response without a trace has no ``</think>``: the scoring
  stage reads all of it as reasoning that never ended, docs/reasoning.md §1); interval: Wilson;
* ``reasoning_tokens`` (``think`` models with ``reasoning_rate > 0``) — the mean ``num_reasoning_tokens`` of
  the responses whose reasoning ended before the budget (``0 < num_reasoning_tokens <
  num_generated_tokens``): ``E[L | L < B]`` of the planted trace length (``reasoning_tokens`` itself when
  the budget cuts none); interval: normal, ``mean ± 1.96·sd/√n``;
* ``intervention_<term>`` (interventions' style, per model and task) — the terms of the interventions'
  logistic regression (docs/interventions.md). The planted process (``η`` of
  :mod:`~saltbench.inference.simulated.params`) is that regression with the exposure ``[atom k−1 corrupted]``
  in place of the placement labels; the two agree for ``clean``, ``local`` and ``distant`` rows, but a
  ``random`` placement corrupts atom ``k−1`` with probability ``c/(k−1)`` — the corrupted fraction — so the
  regression cannot separate its terms as planted. Their planted values are therefore the regression's
  *estimand*: the coefficients it converges to on the run's own interventions when each next atom is correct
  with its planted probability (:func:`~saltbench.analysis._interventions.population_effects`); the
  ``structural`` column sets the parameters beside them (:data:`STRUCTURAL_TERMS`; NaN for
  ``placement_random``, which has none);
* ``delta_precision`` and ``rel_delta_auroc`` (task ``all``, style ``a→b``) — the reasoning trade-off's
  comparisons (:mod:`saltbench.analysis._reasoning`) at the configured granularity: the differences of the
  planted task means above.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from saltbench.core.contracts import RECOVERY_TABLE
from saltbench.inference import simulated  # its chain (numba) loads on first use, not while planning
from saltbench.inference.simulated import SimulationParams

from ._common import response_units, wilson_interval
from ._interventions import distinct_interventions, population_effects
from ._leaderboard import select_metric
from ._planted import (
    PROBABILITY_MAPS,
    RANKS_BY_LATENT,
    RowGeometry,
    Shapes,
    agreement_auroc,
    cell_counts,
    class_auroc,
    class_brier,
    class_ece,
    draw_class_pmfs,
    entropy_auroc,
    p_true_auroc,
    row_geometry,
    verbalized_auroc,
)

RECOVERY_SCHEMA: Mapping[str, pl.DataType] = RECOVERY_TABLE.columns
PLANTED_SCHEMA = {
    "model": pl.String(),
    "style": pl.String(),
    "task": pl.String(),
    "quantity": pl.String(),
    "planted": pl.Float64(),
    "structural": pl.Float64(),
}
ESTIMATE_SCHEMA = {
    "model": pl.String(),
    "style": pl.String(),
    "task": pl.String(),
    "quantity": pl.String(),
    "estimate": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
}
STRUCTURAL_TERMS = {
    "corrupted_fraction": "propagation_fraction",
    "placement_local": "propagation_local",
    "position_fraction": "position_effect",
}
"""The parameter behind each intervention term (the intercept's is ``logit(accuracy[task]) + style_shift``,
:meth:`~saltbench.inference.simulated.SimulationParams.base_logit`)."""
NAN = float("nan")
Row = tuple[str, str, str, str, float, float]


@dataclass(frozen=True)
class SimulatedRun:
    """What the planted values depend on: the simulated models' parameters, the styles and datasets, the
    interventions (models, tasks, style, and their rows: the design of the regression), the reasoning
    comparisons ``(model_a, style_a, model_b, style_b)`` of the run, the models with ``reasoning_format:
    think`` (``thinking``), the budget of each of their ``(model, style, task)`` (``budgets``), and what the
    estimates are of: the configured granularity (``granularity``, the trade-off's), the granularities
    planted (``granularities``), the confidence function, the ECE's bins and the alignment; the draws per
    prompt (``draws``, ``inference.samples.n``; 0: none) and which of the :data:`ESTIMATORS` the run scored
    at which granularity (``estimators``: ``(granularity, source, name)``, the metrics table's
    ``(granularity, flavour, confidence)``)."""

    params: Mapping[str, SimulationParams]
    styles: Sequence[str]
    datasets: Mapping[str, pl.DataFrame]
    intervention_models: Sequence[str] = ()
    intervention_tasks: Sequence[str] = ()
    intervention_style: str = "direct"
    interventions: pl.DataFrame | None = None
    comparisons: Sequence[tuple[str, str, str, str]] = ()
    thinking: Collection[str] = ()
    budgets: Mapping[tuple[str, str, str], int] | None = None
    granularity: str = "atom"
    granularities: Sequence[str] = ("atom", "line")
    confidence: str = "mean_probability"
    n_bins: int = 15
    alignment: str = "strict"
    draws: int = 0
    estimators: Collection[tuple[str, str, str]] = ()


def expected_precision(
    params: SimulationParams, task: str, style: str, lengths: np.ndarray, replicates: int, seed: int
) -> float:
    """The mean over answers of ``lengths`` atoms of ``E[correct atoms / n]`` — the metrics' precision, a
    mean of per-response precisions (Monte Carlo, ``replicates`` each; answers without atoms left out)."""
    rng = np.random.default_rng(seed)
    total, count_all = 0.0, 0
    for n, count in zip(*np.unique(lengths[lengths > 0], return_counts=True), strict=True):
        chain, _ = simulated.atom_chain(params, task, style, int(n), rng.random((replicates, int(n))))
        total += count * chain.mean()
        count_all += int(count)
    return total / count_all if count_all else float("nan")


def planted_values(run: SimulatedRun, *, replicates: int = 2000, seed: int = 0) -> pl.DataFrame:
    """One planted value per quantity (module docstring): columns model, style, task, quantity, planted,
    structural."""
    rows: list[Row] = []
    granularities = list(dict.fromkeys([*run.granularities, run.granularity]))
    geometry = _Geometries(run)
    values: dict[tuple[str, str, str, str], float] = {}
    for m, (model, p) in enumerate(run.params.items()):
        for s, style in enumerate(run.styles):
            for t, task in enumerate(run.datasets):
                shares, shapes = _planted_shares(run, model, style, task)
                rows += [(model, style, task, quantity, value, NAN) for quantity, value in shares.items()]
                cell_seed = seed + 7919 * (
                    m * len(run.styles) * len(run.datasets) + s * len(run.datasets) + t
                )
                for g in granularities:
                    planted = _unit_values(run, p, task, style, g, shapes, geometry, replicates, cell_seed)
                    for quantity, value in planted.items():
                        values[model, style, task, f"{g}_{quantity}"] = value
                        rows.append((model, style, task, f"{g}_{quantity}", value, NAN))
                cell = (p, task, style, shapes)
                new = _estimator_values(run, cell, geometry, replicates, cell_seed)
                rows += [(model, style, task, quantity, value, NAN) for quantity, value in new.items()]
    rows += _intervention_estimands(run)
    rows += _comparisons(run, values)
    return pl.DataFrame(rows, schema=PLANTED_SCHEMA, orient="row")


def _comparisons(run: SimulatedRun, values: Mapping[tuple[str, str, str, str], float]) -> list[Row]:
    """The reasoning trade-off's planted ``rel_delta_auroc`` and ``delta_precision`` at the configured
    granularity: the changes of the task means (NaN where a task's value is not planted)."""
    rows: list[Row] = []
    g = run.granularity
    for model_a, style_a, model_b, style_b in run.comparisons:
        if model_a not in run.params or model_b not in run.params:
            continue
        label, styles = f"{model_a}:{style_a}→{model_b}:{style_b}", f"{style_a}→{style_b}"
        for quantity in ("auroc", "precision"):
            a = np.mean([values.get((model_a, style_a, t, f"{g}_{quantity}"), NAN) for t in run.datasets])
            b = np.mean([values.get((model_b, style_b, t, f"{g}_{quantity}"), NAN) for t in run.datasets])
            if quantity == "auroc":  # the trade-off compares the task means of the AUROC
                rows.append((label, styles, "all", "rel_delta_auroc", float((b - a) / a), NAN))
            else:
                rows.append((label, styles, "all", "delta_precision", float(b - a), NAN))
    return rows


class _Geometries:
    """The :class:`~saltbench.analysis._planted.RowGeometry` of every dataset row, per task, granularity,
    latent and whether cuts are needed, made once."""

    def __init__(self, run: SimulatedRun) -> None:
        self.run = run
        self.cache: dict[tuple[str, str, bool, bool], list[RowGeometry]] = {}

    def rows(self, task: str, granularity: str, line_latent: bool, cuts: bool) -> list[RowGeometry]:
        key = (task, granularity, line_latent, cuts)
        if key not in self.cache:
            frame = self.run.datasets[task].select("reference", "variant")
            self.cache[key] = [
                row_geometry(ref.strip(), task, variant, granularity, line_latent, cuts)
                for ref, variant in frame.iter_rows()
            ]
        return self.cache[key]


def _unit_values(
    run: SimulatedRun,
    p: SimulationParams,
    task: str,
    style: str,
    granularity: str,
    shapes: Shapes | None,
    geometry: _Geometries,
    replicates: int,
    seed: int,
) -> dict[str, float]:
    """Planted precision, AUROC, Brier and ECE of one cell at one granularity (NaN: not planted)."""
    out = dict.fromkeys(("precision", "auroc", "brier", "ece"), NAN)
    if shapes is None or (shapes.cut > 0 and run.alignment != "strict"):
        return out
    line_latent = p.line_separation is not None
    rows = geometry.rows(task, granularity, line_latent, shapes.cut > 0)
    precision, counts = cell_counts(p, task, style, rows, shapes, replicates, seed)
    out["precision"] = precision
    if not all(r.confident for r in rows if r.members.shape[1]):
        return out
    d = p.line_separation_for(style) if line_latent else p.separation_for(style)
    assert d is not None
    if run.confidence in RANKS_BY_LATENT:
        out["auroc"] = class_auroc(counts, d)
    if run.confidence in PROBABILITY_MAPS:
        out["brier"] = class_brier(counts, p, d, run.confidence)
        out["ece"] = class_ece(counts, p, d, run.confidence, run.n_bins)
    return out


ESTIMATORS: tuple[tuple[str, str], ...] = (
    ("draws", "agreement"),
    ("draws", "entropy"),
    ("second_pass", "verbalized"),
    ("second_pass", "p_true"),
)
"""The estimators beyond the token functions whose pooled AUROC is planted (``{g}_auroc_{name}``,
docs/simulation.md §9–10): (source, name) as the metrics table's (flavour, confidence)."""


MIN_CLASS_UNITS = 10
"""The fewest correct and the fewest wrong units a cell's pooled AUROC of one of the :data:`ESTIMATORS` must
rank for its interval to be compared with the planted value (docs/simulation.md §10.2): below it the
responses-resampled percentile interval is degenerate (one correct answer: ``[0.5, 0.5]`` or a point) or
short — whole-answer intervals with 5–9 units of the smaller class held their planted value 0.88 (30
answers a cell) and 0.78 (120) of the time, those with 10–14 0.90 and 0.91."""
RANKED_COLUMNS: tuple[str, ...] = (
    "model",
    "style",
    "task",
    "granularity",
    "status",
    "is_correct",
    *(f"{source}.{name}" for source, name in ESTIMATORS),
)
"""The units columns :func:`ranked_classes` reads (those of an estimator the run did not score may be
absent)."""
CLASS_SCHEMA: Mapping[str, pl.DataType] = {
    "model": pl.String(),
    "style": pl.String(),
    "task": pl.String(),
    "quantity": pl.String(),
    "n_correct": pl.Int64(),
    "n_wrong": pl.Int64(),
}


def ranked_classes(units: pl.DataFrame) -> pl.DataFrame:
    """The correct and wrong units each of the :data:`ESTIMATORS` ranks in ``units``, per model, style, task
    and granularity — the units its pooled AUROC is computed on: response units (status in
    ``RESPONSE_STATUSES``) with a finite value (docs/metrics.md; the metrics stage's protocol). Columns
    :data:`CLASS_SCHEMA`, ``quantity`` as the recovery rows name it (``{granularity}_auroc_{name}``); an
    estimator without its column in ``units`` has no rows.

    Example:
        >>> units = pl.DataFrame({
        ...     "model": ["m"] * 3, "style": ["direct"] * 3, "task": ["dna"] * 3,
        ...     "granularity": ["generation"] * 3, "status": ["correct", "incorrect", "incorrect"],
        ...     "is_correct": [True, False, False], "draws.agreement": [1.0, 0.4, float("nan")]})
        >>> ranked_classes(units).select("quantity", "n_correct", "n_wrong").row(0)
        ('generation_auroc_agreement', 1, 1)
    """
    written = response_units(units)
    correct = pl.col("is_correct").cast(pl.Boolean)
    frames = []
    for source, name in ESTIMATORS:
        column = f"{source}.{name}"
        if column not in written.columns:
            continue
        ranked = pl.col(column).cast(pl.Float64).is_finite().fill_null(False)
        counts = written.group_by(
            "model", "style", "task", pl.col("granularity").cast(pl.String), maintain_order=True
        ).agg(n_correct=(ranked & correct).sum(), n_wrong=(ranked & ~correct).sum())
        quantity = pl.col("granularity") + f"_auroc_{name}"
        frames.append(
            counts.select(
                "model", "style", "task", quantity=quantity, n_correct="n_correct", n_wrong="n_wrong"
            )
        )
    frames = [f.cast(CLASS_SCHEMA) for f in frames]  # type: ignore[arg-type]
    return pl.concat(frames) if frames else pl.DataFrame(schema=CLASS_SCHEMA)


def _estimator_values(
    run: SimulatedRun,
    cell: tuple[SimulationParams, str, str, Shapes | None],
    geometry: _Geometries,
    replicates: int,
    seed: int,
) -> dict[str, float]:
    """Planted pooled AUROC of the draws' and second pass's estimators of one cell (``{g}_auroc_{name}``;
    NaN where not derivable, module docstring). Draws: whole answers only (no cut, no answer shapes, units
    planted), a model with a planted sampling signal; entropy where every unit is one atom. Second pass:
    strict alignment
    (the simulated model judges a unit as the strict alignment pairs it)."""
    p, task, style, shapes = cell
    out: dict[str, float] = {}
    drawn = (
        run.draws > 0
        and p.repeat_correct is not None
        and shapes is not None
        and shapes.cut == 0
        and not any(p.shape_rates.values())
    )
    strict = run.alignment == "strict"
    pmfs: dict[str, np.ndarray] = {}
    for g, source, name in sorted(e for e in run.estimators if e[1:] in ESTIMATORS):
        value = NAN
        if source == "draws" and drawn:
            rows = geometry.rows(task, g, False, False)
            if g not in pmfs:
                pmfs[g] = draw_class_pmfs(p, task, style, rows, run.draws, replicates, seed)
            single = all((r.members.sum(0) == 1).all() for r in rows)  # every unit one atom
            value = (
                agreement_auroc(pmfs[g])
                if name == "agreement"
                else entropy_auroc(pmfs[g])
                if name == "entropy" and single
                else NAN
            )
        elif source == "second_pass" and strict:
            value = verbalized_auroc(p) if name == "verbalized" else p_true_auroc(p)
        out[f"{g}_auroc_{name}"] = value
    return out


def _planted_shares(
    run: SimulatedRun, model: str, style: str, task: str
) -> tuple[dict[str, float], Shapes | None]:
    """The planted truncation quantities of one cell (module docstring), and the shares of its responses
    answered whole and cut inside the answer (``None`` where the units of its responses are not planted: a
    ``cot`` cell with unfenced answers)."""
    p = run.params[model]
    t, unfenced = p.truncation_rate, p.no_fence_rate
    # an unfenced direct answer is scored whole, as a fenced one; in cot the working is scored with it
    shapes = None if unfenced > 0 and style == "cot" else Shapes(1 - t, t)
    if model not in run.thinking:
        return {"truncated_share": t}, shapes
    budget = (run.budgets or {}).get((model, style, task))
    if budget is None:
        raise ValueError(
            f"no budget for the reasoning model {model!r} in {style}/{task}: its planted cuts need one"
        )
    rho = p.reasoning_rate
    q, mean_length = simulated.planted_thinking(p, budget)
    shares = {
        "truncated_share": rho * q + (1 - rho * q) * t,
        "reasoning_truncated_share": rho * q + (1 - rho) * t,
    }
    if rho > 0 and not np.isnan(mean_length):
        shares["reasoning_tokens"] = mean_length
    # responses cut inside the thinking, and those without a trace (read whole as reasoning), have no units
    kept = rho * (1 - q)
    return shares, None if shapes is None else Shapes(kept * shapes.answered, kept * shapes.cut)


def intervention_p_correct(
    params: SimulationParams, task: str, style: str, frame: pl.DataFrame
) -> np.ndarray:
    """``P(next atom correct)`` of each intervention row under the planted process: ``σ(η_k)`` with the row's
    corrupted fraction, position fraction and whether atom ``k−1`` is among its corrupted positions."""
    last = (
        frame.select(pl.col("corrupted_positions").list.contains(pl.col("position") - 1).fill_null(False))
        .to_series()
        .to_numpy()
        .astype(np.float64)
    )
    eta = simulated.planted_logit(
        params,
        task,
        style,
        frame["position_fraction"].to_numpy(),
        frame["corrupted_fraction"].to_numpy(),
        last,
    )
    return 1.0 / (1.0 + np.exp(-eta))


def _intervention_estimands(run: SimulatedRun) -> list[Row]:
    """Planted values of the intervention regression's terms (module docstring), per model and task, with
    the structural parameter behind each (NaN for ``placement_random``)."""
    if run.interventions is None or not run.interventions.height:
        return []
    if "corrupted_positions" not in run.interventions.columns:
        raise ValueError("the interventions have no corrupted_positions column: their planted values need it")
    rows = []
    data = distinct_interventions(run.interventions).filter(pl.col("next_correct").is_not_null())
    for (model, task), frame in data.group_by(["model", "task"], maintain_order=True):
        if model not in run.params or task not in run.intervention_tasks:
            continue
        params, style = run.params[str(model)], run.intervention_style
        p = intervention_p_correct(params, str(task), style, frame)
        for term, value in population_effects(frame, p).items():
            structural = (
                params.base_logit(str(task), style)
                if term == "intercept"
                else float(getattr(params, STRUCTURAL_TERMS[term]))
                if term in STRUCTURAL_TERMS
                else NAN
            )
            rows.append((str(model), style, str(task), f"intervention_{term}", value, structural))
    return rows


def _unit_estimates(metrics: pl.DataFrame, granularity: str, confidence: str, flavour: str) -> pl.DataFrame:
    """The metrics' precision, pooled AUROC, Brier and ECE (uncalibrated) at one granularity, of one
    confidence function and flavour, as ``{granularity}_{quantity}`` estimates."""
    frames = []
    for quantity, metric, calibration in (
        ("precision", "precision", None),
        ("auroc", "auroc_pooled", "none"),
        ("brier", "brier", "none"),
        ("ece", "ece", "none"),
    ):
        rows = select_metric(
            metrics,
            metric,
            granularity=granularity,
            confidence=None if calibration is None else confidence,
            flavour=None if calibration is None else flavour,
            calibration=calibration,
        )
        frames.append(
            rows.select(
                "model",
                "style",
                "task",
                quantity=pl.lit(f"{granularity}_{quantity}"),
                estimate="value",
                ci_low="ci_low",
                ci_high="ci_high",
            ).cast(ESTIMATE_SCHEMA)  # type: ignore[arg-type]
        )
    return pl.concat(frames)


def scored_estimators(metrics: pl.DataFrame) -> set[tuple[str, str, str]]:
    """``(granularity, source, name)`` of the :data:`ESTIMATORS` whose pooled AUROC ``metrics`` holds (the
    ``estimators`` of :class:`SimulatedRun`)."""
    rows = metrics.filter(pl.col("metric") == "auroc_pooled").select(
        pl.col("granularity").cast(pl.String), pl.col("flavour").cast(pl.String), "confidence"
    )
    return {row for row in rows.unique().iter_rows() if row[1:] in ESTIMATORS}


def estimator_estimates(metrics: pl.DataFrame) -> pl.DataFrame:
    """The metrics' pooled AUROC of the :data:`ESTIMATORS` at every granularity they were scored at, as
    ``{granularity}_auroc_{name}`` estimates (none where the metrics have no such rows)."""
    frames = []
    for source, name in ESTIMATORS:
        rows = select_metric(metrics, "auroc_pooled", confidence=name, flavour=source, calibration="none")
        frames.append(
            rows.select(
                "model",
                "style",
                "task",
                quantity=pl.col("granularity").cast(pl.String) + f"_auroc_{name}",
                estimate="value",
                ci_low="ci_low",
                ci_high="ci_high",
            ).cast(ESTIMATE_SCHEMA)  # type: ignore[arg-type]
        )
    return pl.concat(frames)


def recovery_estimates(
    metrics: pl.DataFrame,
    health: pl.DataFrame,
    interventions: pl.DataFrame | None = None,
    tradeoff: pl.DataFrame | None = None,
    responses: pl.DataFrame | None = None,
    *,
    granularities: Sequence[str] = ("atom", "line"),
    confidence: str = "mean_probability",
    flavour: str = "topk",
) -> pl.DataFrame:
    """The run's estimates of the planted quantities with their 95 % intervals (module docstring), of the
    ``confidence`` function in ``flavour`` at each of ``granularities``; ``responses`` (one row per
    response, the units tables' response columns) gives those of the reasoning traces
    (:func:`reasoning_estimates`)."""
    frames = [_unit_estimates(metrics, g, confidence, flavour) for g in granularities]
    frames.append(estimator_estimates(metrics))
    cells = ["model", "style", "task"]
    cut = np.rint(health["truncated"].to_numpy() * health["responses"].to_numpy())
    low, high = wilson_interval(cut, health["responses"].to_numpy())
    frames.append(
        health.select(
            *cells,
            quantity=pl.lit("truncated_share"),
            estimate="truncated",
            ci_low=pl.Series(low),
            ci_high=pl.Series(high),
        )
    )
    if interventions is not None and interventions.height:
        ok = interventions.filter(pl.col("status") == "ok", pl.col("method") == "logistic")
        frames.append(
            ok.select(
                "model",
                style=pl.lit(None, pl.String()),
                task="task",
                quantity=pl.lit("intervention_") + pl.col("term"),
                estimate="estimate",
                ci_low="ci_low",
                ci_high="ci_high",
            )
        )
    if responses is not None and responses.height:
        frames.append(reasoning_estimates(responses))
    if tradeoff is not None and tradeoff.height:
        label = pl.format("{}:{}→{}:{}", "model_a", "style_a", "model_b", "style_b")
        for quantity in ("delta_precision", "rel_delta_auroc"):
            frames.append(
                tradeoff.select(
                    model=label,
                    style=pl.format("{}→{}", "style_a", "style_b"),
                    task=pl.lit("all"),
                    quantity=pl.lit(quantity),
                    estimate=quantity,
                    ci_low=f"{quantity}_ci_low",
                    ci_high=f"{quantity}_ci_high",
                )
            )
    return pl.concat([f.cast(ESTIMATE_SCHEMA) for f in frames])  # type: ignore[arg-type]


def reasoning_estimates(responses: pl.DataFrame, z: float = 1.959964) -> pl.DataFrame:
    """Per model, style and task of ``responses`` (one row each; ``answer_status``,
    ``num_generated_tokens``, ``num_reasoning_tokens``): ``reasoning_truncated_share`` — the share cut with
    every token reasoning, Wilson interval — and ``reasoning_tokens`` — the mean reasoning tokens of the
    responses whose reasoning ended before the budget, interval ``mean ± z·sd/√n`` (null below two).

    Example:
        >>> responses = pl.DataFrame({
        ...     "model": ["m"] * 3, "style": ["cot"] * 3, "task": ["dna"] * 3,
        ...     "answer_status": ["answered", "answered", "truncated"],
        ...     "num_generated_tokens": [90, 95, 120], "num_reasoning_tokens": [50, 50, 120]})
        >>> table = reasoning_estimates(responses).select("quantity", "estimate", "ci_low", "ci_high")
        >>> [(q, round(e, 3), round(lo, 3), round(hi, 3)) for q, e, lo, hi in table.rows()]
        [('reasoning_truncated_share', 0.333, 0.061, 0.792), ('reasoning_tokens', 50.0, 50.0, 50.0)]
    """
    generated, thinking = pl.col("num_generated_tokens"), pl.col("num_reasoning_tokens")
    cut = (pl.col("answer_status").cast(pl.String) == "truncated") & (thinking == generated) & (generated > 0)
    ended = thinking.filter((thinking > 0) & (thinking < generated)).cast(pl.Float64)
    cells = responses.group_by("model", "style", "task", maintain_order=True).agg(
        n=pl.len(), cut=cut.sum(), ended=ended.len(), mean=ended.mean(), sd=ended.std()
    )
    low, high = wilson_interval(cells["cut"].to_numpy(), cells["n"].to_numpy(), z)
    half = z * pl.col("sd") / pl.col("ended").sqrt()
    shares = cells.select(
        "model",
        "style",
        "task",
        quantity=pl.lit("reasoning_truncated_share"),
        estimate=pl.col("cut") / pl.col("n"),
        ci_low=pl.Series(low),
        ci_high=pl.Series(high),
    )
    lengths = cells.filter(pl.col("ended") > 0).select(
        "model",
        "style",
        "task",
        quantity=pl.lit("reasoning_tokens"),
        estimate="mean",
        ci_low=pl.when(pl.col("ended") > 1).then(pl.col("mean") - half),
        ci_high=pl.when(pl.col("ended") > 1).then(pl.col("mean") + half),
    )
    return pl.concat([shares, lengths]).cast(ESTIMATE_SCHEMA)  # type: ignore[arg-type]


def recovery_table(
    planted: pl.DataFrame,
    estimates: pl.DataFrame,
    intervention_style: str = "direct",
    classes: pl.DataFrame | None = None,
    min_class_units: int = MIN_CLASS_UNITS,
) -> pl.DataFrame:
    """Each planted value (and the structural parameter behind it, ``structural``) beside its estimate and
    interval; ``inside`` says whether the interval holds it (null where the run has no estimate or interval,
    or the value is not planted: NaN, or — a row of ``classes``, :func:`ranked_classes` — its cell ranks
    fewer than ``min_class_units`` correct or wrong units: not compared). Columns: :data:`RECOVERY_SCHEMA`."""
    estimates = estimates.with_columns(
        style=pl.when(pl.col("quantity").str.starts_with("intervention_"))
        .then(pl.lit(intervention_style))
        .otherwise(pl.col("style"))
    )
    cell = ["model", "style", "task", "quantity"]
    joined = planted.join(estimates, on=cell, how="left").join(
        pl.DataFrame(schema=CLASS_SCHEMA) if classes is None else classes.cast(CLASS_SCHEMA),  # type: ignore[arg-type]
        on=cell,
        how="left",
    )
    few = (pl.min_horizontal("n_correct", "n_wrong") < min_class_units).fill_null(False)
    unknown = pl.col("ci_low").is_null() | pl.col("ci_high").is_null() | pl.col("planted").is_nan() | few
    joined = joined.with_columns(
        inside=pl.when(unknown | pl.col("ci_low").is_nan() | pl.col("ci_high").is_nan())
        .then(None)
        .otherwise((pl.col("ci_low") <= pl.col("planted")) & (pl.col("planted") <= pl.col("ci_high"))),
        error=pl.col("estimate") - pl.col("planted"),
    )
    table = joined.select(list(RECOVERY_SCHEMA)).sort("quantity", "model", "style", "task")
    return table.cast(dict(RECOVERY_SCHEMA))  # type: ignore[arg-type]


__all__ = [
    "CLASS_SCHEMA",
    "ESTIMATORS",
    "MIN_CLASS_UNITS",
    "RANKED_COLUMNS",
    "RECOVERY_SCHEMA",
    "STRUCTURAL_TERMS",
    "SimulatedRun",
    "estimator_estimates",
    "expected_precision",
    "intervention_p_correct",
    "planted_values",
    "ranked_classes",
    "reasoning_estimates",
    "recovery_estimates",
    "recovery_table",
    "scored_estimators",
]
