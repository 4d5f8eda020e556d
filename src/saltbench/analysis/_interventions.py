"""Atom-level interventions: how corrupted prefixes and answer length drive the next atom's correctness.

Each intervention row (:data:`~saltbench.analysis._common.INTERVENTIONS_SCHEMA`) forces a prefix of ``k-1``
answer atoms, ``c`` of them corrupted (``placement``: ``clean`` = none, ``random``, ``local`` = the atoms
just before position ``k``, ``distant`` = atoms far from it), and records whether the model's next atom
(``k``) is correct.

* :func:`fit_intervention_effects` — regression of ``next_correct`` on the corrupted fraction, the
  placement (local / random vs distant) and the position fraction, per model × task, with cluster-bootstrap
  intervals over samples, and a ``status`` saying why an estimate is missing (:data:`FIT_STATUSES`);
* :func:`accuracy_by_position`, :func:`accuracy_by_corruption`, :func:`accuracy_by_placement` — the
  aggregated accuracy tables behind the intervention figures (Wilson intervals; each table also carries
  ``n_correct`` and ``n`` so that it can be re-aggregated exactly, e.g. over models); the placement table
  also compares placements on matched interventions, with cluster-bootstrap intervals over samples
  (:func:`placement_contrasts`).

Nothing is pooled over tasks: tasks reach different corrupted fractions and positions (a corrupted
fraction ``c/(k-1)`` depends on the answer length) and differ in base accuracy, so a pooled fit or table
mixes tasks in proportions that change along its axis and can show a trend that no task has.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from saltbench.core.contracts import INTERVENTIONS_BY_PLACEMENT_TABLE, INTERVENTIONS_TABLE
from saltbench.core.seeds import derive_seed
from saltbench.core.vocabulary import FitMethod
from saltbench.metrics import group_counts

from ._common import INTERVENTIONS_SCHEMA, NAN, nan_for_null, require_columns, wilson_interval
from ._reasoning import _percentile_ci

logger = logging.getLogger(__name__)

TERMS: tuple[str, ...] = (
    "intercept",
    "corrupted_fraction",
    "placement_local",
    "placement_random",
    "position_fraction",
)
"""Reported regression terms; placement terms are contrasts against ``distant`` (and clean rows, which have
``corrupted_fraction = 0``)."""

EFFECTS_SCHEMA: Mapping[str, pl.DataType] = INTERVENTIONS_TABLE.columns
"""Columns of :func:`fit_intervention_effects` (the contract
:data:`saltbench.core.contracts.INTERVENTIONS_TABLE`)."""

MIN_SAMPLES = 10
"""Fewest samples (clusters) a fit is reported for: the cluster bootstrap resamples whole samples, and with
fewer than 10 its distribution has too few distinct values to give an interval."""

FIT_STATUSES: Mapping[str, str] = {
    "ok": "estimated",
    "too_few_samples": f"fewer than {MIN_SAMPLES} samples",
    "no_variation": "the outcome does not vary (every next atom correct, or every one wrong)",
    "separation": "(quasi-)complete separation: a combination of the terms predicts the outcome exactly, so "
    "the maximum-likelihood estimate does not exist (it is infinite)",
    "term_constant": "the term's variable does not vary in this group (e.g. no random placements)",
}
"""Values of the effects table's ``status`` column and what they mean; only ``ok`` rows have estimates."""


def _design(frame: pl.DataFrame) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Design matrix (columns :data:`TERMS`), its column names and the response."""
    x = _design_matrix(frame)
    return x, list(TERMS), frame["next_correct"].cast(pl.Float64).to_numpy()


def _design_matrix(frame: pl.DataFrame) -> np.ndarray:
    """The columns :data:`TERMS` of the regression, one row per intervention."""
    placement = frame["placement"].to_numpy()
    cols = {
        "intercept": np.ones(frame.height),
        "corrupted_fraction": frame["corrupted_fraction"].to_numpy().astype(np.float64),
        "placement_local": (placement == "local").astype(np.float64),
        "placement_random": (placement == "random").astype(np.float64),
        "position_fraction": frame["position_fraction"].to_numpy().astype(np.float64),
    }
    return np.column_stack([cols[n] for n in TERMS])


def separated(x: np.ndarray, y: np.ndarray, tol: float = 1e-7) -> bool:
    r"""Whether binary outcomes ``y`` are (quasi-)completely separated by the columns of ``x``.

    The logistic maximum-likelihood estimate exists exactly when no direction :math:`\beta \ne 0` has
    :math:`s_i\, x_i^\top \beta \ge 0` for every row, where :math:`s_i = 2y_i - 1` (Albert & Anderson,
    1984). This solves the linear programme "maximise :math:`\sum_i s_i x_i^\top \beta` subject to those
    constraints and :math:`-1 \le \beta_j \le 1`": a positive optimum is such a direction. Columns that
    are identical up to scale are harmless (the objective only counts strict margins).

    Example:
        >>> x = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
        >>> separated(x, np.array([0, 0, 1, 1])), separated(x, np.array([0, 1, 0, 1]))
        (True, False)
    """
    from scipy.optimize import linprog

    signed = (2.0 * np.asarray(y, dtype=np.float64) - 1.0)[:, None] * np.asarray(x, dtype=np.float64)
    result = linprog(
        -signed.sum(axis=0), A_ub=-signed, b_ub=np.zeros(signed.shape[0]), bounds=(-1, 1), method="highs"
    )
    return bool(result.status == 0 and -result.fun > tol * max(signed.shape[0], 1))


def _fit(
    x: np.ndarray, y: np.ndarray, method: FitMethod, ridge: float, probabilities: bool = False
) -> np.ndarray:
    """Coefficients; columns without variation (other than the intercept) get NaN, and so does every
    coefficient of a logistic fit on separated data (its estimate would only be the penalty's bound).
    ``probabilities``: ``y`` holds probabilities in (0, 1), not outcomes (nothing to be separated)."""
    varies = np.ones(x.shape[1], dtype=bool)
    varies[1:] = x[:, 1:].std(axis=0) > 0
    xs = x[:, varies]
    beta = np.full(x.shape[1], NAN)
    if xs.shape[0] == 0:
        return beta
    if method == "logistic" and not probabilities and separated(xs, y):
        return beta
    penalty = np.full(xs.shape[1], ridge)
    penalty[0] = 0.0
    if method == "linear":
        gram = xs.T @ xs + np.diag(penalty)
        beta[varies] = np.linalg.solve(gram, xs.T @ y)
        return beta
    beta[varies] = _newton(xs, y, penalty)
    return beta


def _newton(x: np.ndarray, y: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    """Penalised logistic maximum likelihood by Newton's method; ``y`` may be probabilities (the expected
    log-likelihood of outcomes with those probabilities)."""
    b = np.zeros(x.shape[1])
    for _ in range(100):
        eta = np.clip(x @ b, -30, 30)
        p = 1.0 / (1.0 + np.exp(-eta))
        w = np.maximum(p * (1 - p), 1e-10)
        grad = x.T @ (y - p) - penalty * b
        hess = (x * w[:, None]).T @ x + np.diag(penalty) + 1e-12 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        b = b + step
        if np.max(np.abs(step)) < 1e-9:
            break
    return b


def population_effects(frame: pl.DataFrame, p_correct: np.ndarray, ridge: float = 1e-3) -> dict[str, float]:
    """The coefficients :func:`fit_intervention_effects` (logistic) converges to on the design of ``frame``
    (one model × task) when each row's next atom is correct with probability ``p_correct``: the maximiser of
    the expected log-likelihood, the estimand of the fit (a term that does not vary: NaN)."""
    p = np.asarray(p_correct, dtype=np.float64)
    beta = _fit(_design_matrix(frame), p, "logistic", ridge, probabilities=True)
    return dict(zip(TERMS, beta.tolist(), strict=True))


def _cluster_codes(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Sample cluster code per row and the task code of each cluster."""
    keys = frame.select("task", "sample_id")
    uniq = keys.unique(maintain_order=True).with_row_index("_c")
    codes = keys.join(uniq, on=["task", "sample_id"], how="left", maintain_order="left")["_c"].to_numpy()
    task_of = np.unique(uniq["task"].to_numpy(), return_inverse=True)[1].reshape(-1)
    return codes.astype(np.int64), task_of


def _group_status(x: np.ndarray, y: np.ndarray, n_samples: int, method: FitMethod) -> str:
    """Why a group has no estimates (a key of :data:`FIT_STATUSES`), or ``"ok"``."""
    if n_samples < MIN_SAMPLES:
        return "too_few_samples"
    if y.size == 0 or y.min() == y.max():
        return "no_variation"
    varies = np.ones(x.shape[1], dtype=bool)
    varies[1:] = x[:, 1:].std(axis=0) > 0
    if method == "logistic" and separated(x[:, varies], y):
        return "separation"
    return "ok"


def _fit_group(
    frame: pl.DataFrame,
    method: FitMethod,
    n_resamples: int,
    alpha: float,
    seed: int,
    ridge: float,
) -> list[tuple[str, float, float, float, str]]:
    x, names, y = _design(frame)
    codes, task_of = _cluster_codes(frame)
    status = _group_status(x, y, task_of.size, method)
    if status != "ok":
        return [(term, NAN, NAN, NAN, status) for term in names]
    point = _fit(x, y, method, ridge)
    n_clusters = task_of.size
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=n_clusters)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    rng = np.random.default_rng(seed)
    boots = []
    if n_clusters >= 2:
        for _ in range(n_resamples):
            draw = np.empty(n_clusters, dtype=np.int64)
            for t in np.unique(task_of):  # stratified by task: each task keeps its number of samples
                members = np.flatnonzero(task_of == t)
                draw[members] = members[rng.integers(0, members.size, members.size)]
            sz = sizes[draw]
            offsets = np.cumsum(sz) - sz
            rows = order[np.repeat(starts[draw] - offsets, sz) + np.arange(int(sz.sum()))]
            boots.append(_fit(x[rows], y[rows], method, ridge))
    out = []
    stack = np.array(boots) if boots else np.empty((0, len(names)))
    for j, term in enumerate(names):
        if not np.isfinite(point[j]):
            out.append((term, NAN, NAN, NAN, "term_constant"))
            continue
        vals = stack[:, j][np.isfinite(stack[:, j])] if stack.size else np.empty(0)
        if vals.size and vals.size >= 0.5 * max(n_resamples, 1):
            low, high = np.quantile(vals, [alpha / 2, 1 - alpha / 2])
        else:
            low, high = NAN, NAN
        out.append((term, float(point[j]), float(low), float(high), "ok"))
    return out


_FIT_COLUMNS: tuple[str, ...] = (
    "model",
    "task",
    "sample_id",
    "placement",
    "corrupted_fraction",
    "position_fraction",
    "next_correct",
)
"""Columns :func:`fit_intervention_effects` needs."""


def _fit_data(interventions: pl.DataFrame) -> pl.DataFrame:
    """The distinct interventions (:func:`distinct_interventions`) with an outcome and finite fractions,
    sample ids as strings."""
    return (
        distinct_interventions(interventions)
        .filter(
            pl.col("next_correct").is_not_null()
            & pl.col("corrupted_fraction").is_finite()
            & pl.col("position_fraction").is_finite()
        )
        .with_columns(pl.col("sample_id").cast(pl.String))
    )


def _effect_rows(
    model: object,
    task: object,
    fits: Sequence[tuple[str, float, float, float, str]],
    n_rows: int,
    n_samples: int,
    method: FitMethod,
) -> list[dict[str, object]]:
    """The effects-table rows of one model × task: one per fitted term (estimate, interval, status), with the
    group's row and sample counts."""
    return [
        {
            "model": model,
            "task": task,
            "term": term,
            "estimate": estimate,
            "ci_low": low,
            "ci_high": high,
            "n_rows": n_rows,
            "n_samples": n_samples,
            "method": method,
            "status": status,
        }
        for term, estimate, low, high, status in fits
    ]


def fit_intervention_effects(
    interventions: pl.DataFrame,
    *,
    method: FitMethod = "logistic",
    n_resamples: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
    ridge: float = 1e-3,
) -> pl.DataFrame:
    r"""Regression of next-atom correctness on the intervention variables, per model × task.

    Model (``method="logistic"``; ``"linear"`` fits the same design by least squares, a linear probability
    model whose coefficients are accuracy changes):

    .. math::

        \operatorname{logit} P(\text{next correct}) = \beta_0 + \beta_c\,\frac{c}{k-1}
            + \beta_\text{local}[\text{local}] + \beta_\text{random}[\text{random}]
            + \beta_k\,\frac{k}{n}

    ``corrupted_fraction`` is :math:`c/(k-1)` and ``position_fraction`` :math:`k/n`. An intervention that
    corrupts every prefix atom enters once, as ``local`` (:func:`distinct_interventions`). Placement terms
    compare with ``distant`` corruption (clean rows have :math:`c = 0` and no placement dummy), so
    :math:`\beta_\text{local} > 0` means nearby corruption hurts less than distant corruption at equal
    corrupted fraction. A small L2 penalty ``ridge`` on the slopes stabilises nearly separated fits.

    Honest estimates: a group is not fitted, and its rows carry NaN with a ``status`` saying why
    (:data:`FIT_STATUSES`), when it has fewer than :data:`MIN_SAMPLES` samples, when the outcome does not
    vary, or when (logistic only) the data are (quasi-)completely separated (:func:`separated`) — there the
    likelihood has no maximum and any number would be the optimiser's or the penalty's bound. A term whose
    variable does not vary in the group (e.g. no ``random`` rows) is NaN with status ``term_constant``.

    Intervals: percentile cluster bootstrap — whole samples (all interventions of one ``sample_id``) are
    resampled with replacement, ``n_resamples`` times; separated resamples give no estimate and are left
    out; the interval is NaN when fewer than half of the resamples give one.

    Returns:
        :data:`EFFECTS_SCHEMA`, one row per model × task × term of :data:`TERMS`.
    """
    require_columns(interventions, _FIT_COLUMNS, "interventions")
    if method not in ("logistic", "linear"):
        raise ValueError(f"method must be 'logistic' or 'linear', got {method!r}")
    if not ridge >= 0:
        raise ValueError(f"ridge must be >= 0, got {ridge!r}")
    groups = _fit_data(interventions).sort("model", "task").group_by(["model", "task"], maintain_order=True)
    rows: list[dict[str, object]] = []
    for group_index, ((model, task), frame) in enumerate(groups):
        n_samples = frame.select("task", "sample_id").n_unique()
        fits = _fit_group(frame, method, n_resamples, alpha, seed + group_index, ridge)
        rows.extend(_effect_rows(model, task, fits, frame.height, n_samples, method))
    return nan_for_null(pl.DataFrame(rows, schema=dict(EFFECTS_SCHEMA)))


def _accuracy(frame: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    out = (
        frame.group_by(list(keys), maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("next_correct").cast(pl.Int64).sum().alias("n_correct"),
            pl.col("next_confidence").fill_nan(None).mean().alias("mean_confidence"),
            pl.col("next_m_accuracy").mean().alias("mean_m_accuracy"),
            pl.col("tf_logprob_correct").mean().alias("mean_tf_logprob"),
            *([pl.col("_x").mean().alias("x")] if "_x" in frame.columns else []),
        )
        .sort(list(keys))
    )
    low, high = wilson_interval(out["n_correct"].to_numpy(), out["n"].to_numpy())
    return nan_for_null(
        out.with_columns(
            (pl.col("n_correct") / pl.col("n")).alias("accuracy"),
            pl.Series("ci_low", low),
            pl.Series("ci_high", high),
        )
    )


def distinct_interventions(interventions: pl.DataFrame) -> pl.DataFrame:
    """``interventions`` without the ``random`` and ``distant`` copies of an intervention that corrupts every
    prefix atom (``c = k − 1``, ``corrupted_fraction`` 1): its prefix is the ``local`` one, so the plan's
    three placements are one intervention measured three times under three labels. Counted three times, they
    gave the ``distant`` baseline the effect of a corrupted last atom, which biased ``placement_local``
    towards 0 and ``corrupted_fraction`` away from it (a simulated model with planted effects showed both,
    docs/simulation.md §5); kept once, as ``local``.

    Example:
        >>> rows = pl.DataFrame({"placement": ["local", "distant", "random", "distant"],
        ...                      "corrupted_fraction": [1.0, 1.0, 1.0, 0.5]})
        >>> distinct_interventions(rows)["placement"].to_list()
        ['local', 'distant']
    """
    every = pl.col("corrupted_fraction") >= 1.0
    return interventions.filter(~(every & pl.col("placement").is_in(["random", "distant"])))


def _prepared(interventions: pl.DataFrame) -> pl.DataFrame:
    require_columns(interventions, INTERVENTIONS_SCHEMA, "interventions")
    return distinct_interventions(interventions).filter(pl.col("next_correct").is_not_null())


def _bin_expr(column: str, n_bins: int) -> pl.Expr:
    """Equal-width bin index ``0..n_bins-1`` of a value in (0, 1] (bins ``((j)/m, (j+1)/m]``)."""
    return (pl.col(column).clip(1e-12, 1.0) * n_bins).ceil().cast(pl.Int64).clip(1, n_bins) - 1


def accuracy_by_position(interventions: pl.DataFrame, *, n_bins: int = 10) -> pl.DataFrame:
    """Clean-prefix next-atom accuracy vs position fraction ``k/n`` (context-length effect).

    Clean rows (``placement == "clean"`` or ``n_corrupted == 0``) are binned into ``n_bins`` equal-width
    bins of ``position_fraction`` on (0, 1]; per model × task × bin: ``n``,
    ``n_correct``, ``accuracy`` with a Wilson 95% interval, ``x`` = mean position fraction in the bin,
    ``bin_low``/``bin_high``, and the means of ``next_confidence``, ``next_m_accuracy`` and
    ``tf_logprob_correct``.
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins!r}")
    clean = _prepared(interventions).filter((pl.col("placement") == "clean") | (pl.col("n_corrupted") == 0))
    binned = clean.with_columns(
        _bin_expr("position_fraction", n_bins).alias("bin"), pl.col("position_fraction").alias("_x")
    )
    out = _accuracy(binned, ["model", "task", "bin"])
    return out.with_columns(
        (pl.col("bin") / n_bins).alias("bin_low"), ((pl.col("bin") + 1) / n_bins).alias("bin_high")
    )


def accuracy_by_corruption(interventions: pl.DataFrame, *, n_bins: int = 5) -> pl.DataFrame:
    """Next-atom accuracy vs corrupted fraction ``c/(k-1)``, per placement (error propagation).

    Corrupted rows are binned into ``n_bins`` equal-width bins of ``corrupted_fraction`` on (0, 1] per
    placement; clean rows form their own row with ``placement = "clean"`` and ``bin = -1`` (fraction 0).
    Per model × task × placement × bin: the same columns as
    :func:`accuracy_by_position` (``x`` = mean corrupted fraction).
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins!r}")
    data = _prepared(interventions)
    is_clean = (pl.col("placement") == "clean") | (pl.col("n_corrupted") == 0)
    binned = data.with_columns(
        pl.when(is_clean).then(pl.lit("clean")).otherwise(pl.col("placement")).alias("placement"),
        pl.when(is_clean)
        .then(pl.lit(-1, dtype=pl.Int64))
        .otherwise(_bin_expr("corrupted_fraction", n_bins))
        .alias("bin"),
        pl.col("corrupted_fraction").alias("_x"),
    )
    out = _accuracy(binned, ["model", "task", "placement", "bin"])
    return out.with_columns(
        pl.when(pl.col("bin") < 0).then(0.0).otherwise(pl.col("bin") / n_bins).alias("bin_low"),
        pl.when(pl.col("bin") < 0).then(0.0).otherwise((pl.col("bin") + 1) / n_bins).alias("bin_high"),
    )


PLACEMENT_REFERENCES: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "distant": (("local", "random"), ("position", "n_corrupted")),
    "clean": (("local", "random", "distant"), ("position",)),
}
"""Reference placement -> (the placements compared with it, the columns an intervention is matched on
besides its sample): a placement against ``distant`` at the same position and corrupted count (the
regression's contrasts), and against the ``clean`` prefix at the same position (what the corruption costs)."""

CONTRAST_SCHEMA: Mapping[str, pl.DataType] = {
    "model": pl.String(),
    "task": pl.String(),
    "placement": pl.String(),
    **{
        name: dtype
        for name, dtype in INTERVENTIONS_BY_PLACEMENT_TABLE.columns.items()
        if name.endswith(tuple(f"_vs_{reference}" for reference in PLACEMENT_REFERENCES))
    },
}
"""Columns of :func:`placement_contrasts`."""


def _paired_sums(frame: pl.DataFrame, placement: str, reference: str, keys: Sequence[str]) -> pl.DataFrame:
    """Per sample: the sum over the interventions of ``placement`` matched with one of ``reference`` (same
    sample and ``keys``) of ``next_correct`` minus the reference's, and the number matched."""
    on = ["sample_id", *keys]
    outcome = pl.col("next_correct").cast(pl.Float64)
    base = frame.filter(pl.col("placement") == reference).group_by(on).agg(outcome.mean().alias("_reference"))
    matched = frame.filter(pl.col("placement") == placement).join(base, on=on, how="inner")
    sums = matched.group_by("sample_id").agg(
        (outcome - pl.col("_reference")).sum().alias("d"), pl.len().cast(pl.Float64).alias("n")
    )
    return sums.sort("sample_id")  # the resamples index the samples in this order


def _cluster_mean(
    sums: pl.DataFrame, n_resamples: int, alpha: float, seed: int
) -> tuple[float, float, float, int]:
    """The mean paired difference ``Σ d / Σ n`` and its percentile interval from ``n_resamples`` resamples
    of the samples (multiplicities ``c``: ``Σ c d / Σ c n``, all at once), and the number of samples; NaN
    bounds with fewer than :data:`MIN_SAMPLES` samples or no resamples."""
    d, n = sums["d"].to_numpy(), sums["n"].to_numpy()
    if not n.size:
        return NAN, NAN, NAN, 0
    point = float(d.sum() / n.sum())
    if n.size < MIN_SAMPLES or n_resamples < 1:
        return point, NAN, NAN, int(n.size)
    draws = np.random.default_rng(seed).integers(0, n.size, size=(n_resamples, n.size))
    counts = group_counts(draws, n.size)
    interval = _percentile_ci(point, (counts @ d) / (counts @ n), alpha, 0.5)
    return interval.point, interval.low, interval.high, int(n.size)


def placement_contrasts(
    interventions: pl.DataFrame, *, n_resamples: int = 200, alpha: float = 0.05, seed: int = 0
) -> pl.DataFrame:
    """Paired next-atom accuracy differences between placements, per model × task (docs/interventions.md §8).

    For each pair of :data:`PLACEMENT_REFERENCES` — ``local`` and ``random`` against ``distant`` at the same
    sample, position ``k`` and corrupted count ``c``; ``local``, ``random`` and ``distant`` against the
    ``clean`` prefix at the same sample and ``k`` — ``delta_vs_{reference}`` is the mean over the matched
    interventions of ``next_correct`` minus the reference's (:func:`distinct_interventions`: a prefix that
    corrupts every atom is ``local`` only, so it has no ``distant`` match), ``n_samples_vs_{reference}`` the
    samples with a match. Interval: percentile bootstrap over samples (a sample's interventions stay
    together, so the comparison is paired), ``n_resamples`` resamples from
    ``numpy.random.default_rng(derive_seed(seed, "placement", model, task, placement, reference))``; NaN
    with fewer than :data:`MIN_SAMPLES` samples. Returns :data:`CONTRAST_SCHEMA`, one row per model × task
    × placement present.
    """
    data = _prepared(interventions).with_columns(pl.col("sample_id").cast(pl.String))
    rows = []
    for (model, task), frame in data.sort("model", "task").group_by(["model", "task"], maintain_order=True):
        for placement in frame["placement"].unique().sort().to_list():
            row: dict[str, object] = {"model": model, "task": task, "placement": placement}
            for reference, (compared, keys) in PLACEMENT_REFERENCES.items():
                sums = _paired_sums(frame, placement, reference, keys) if placement in compared else None
                draw_seed = derive_seed(seed, "placement", model, task, placement, reference)
                values = (
                    (NAN, NAN, NAN, 0) if sums is None else _cluster_mean(sums, n_resamples, alpha, draw_seed)
                )
                names = ("delta", "delta_ci_low", "delta_ci_high", "n_samples")
                row |= {f"{name}_vs_{reference}": value for name, value in zip(names, values)}
            rows.append(row)
    return nan_for_null(pl.DataFrame(rows, schema=dict(CONTRAST_SCHEMA)))


def accuracy_by_placement(
    interventions: pl.DataFrame, *, n_resamples: int = 200, alpha: float = 0.05, seed: int = 0
) -> pl.DataFrame:
    """Next-atom accuracy per placement (clean, random, local, distant), per model × task, with the paired
    comparisons of :func:`placement_contrasts` (``n_resamples``, ``alpha``, ``seed``).

    Columns: model, task, placement, n, n_correct, accuracy, ci_low, ci_high (Wilson 95%),
    mean_confidence, mean_m_accuracy, mean_tf_logprob, then ``delta_vs_distant``, its interval and
    ``n_samples_vs_distant`` (local and random rows) and the same against ``clean`` (corrupted rows); NaN
    and 0 where a row has no such comparison.
    """
    accuracy = _accuracy(_prepared(interventions), ["model", "task", "placement"])
    contrasts = placement_contrasts(interventions, n_resamples=n_resamples, alpha=alpha, seed=seed)
    return accuracy.join(contrasts, on=["model", "task", "placement"], how="left", maintain_order="left")
