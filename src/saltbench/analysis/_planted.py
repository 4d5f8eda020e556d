"""Planted unit-level values of a simulated model at one granularity: precision, pooled AUROC, Brier and ECE
(docs/simulation.md §4.1).

Every written unit of a cell falls in one of four classes ``(y, λ)``: ``y`` its correctness as scored, ``λ``
whether its confidence latent is the separated one (its atom correct, or with a line latent its line
correct), so that its score is ``s ~ N(d_g·λ, 1)`` with ``d_g`` the separation of the unit's latent
(:mod:`saltbench.inference.simulated.params`). :func:`row_geometry` says, for one dataset row, which atoms
each reference unit holds, whether each unit's tokens all carry one latent (else no confidence value is
planted at that granularity), and how a response cut inside its answer writes the units; :func:`cell_counts`
turns the planted atom chain into the expected per-response precision and the expected pooled class counts;
:func:`class_auroc`, :func:`class_brier` and :func:`class_ece` read the confidence metrics off the counts.

A response cut inside its answer (``truncation_rate``) is the fence and the first ``c`` characters of its
answer, ``c`` uniform on ``0..L−1`` (the simulated backend's cut); its units are those of the cut text
(docs/evaluation.md §3), compared position by position with the reference's (strict alignment, §5): unit
``i`` is correct when its text equals the reference's unit ``i`` and the unit's atoms are planted correct;
any other written unit (a partial one, a cut line) is incorrect and keeps the latent of reference unit
``i``. Precision ``C/R`` (0 without units). The cut text is taken from the reference, so a wrong atom of
another length than its reference (``True`` → ``False``) moves the cut by a character: an approximation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from saltbench.evaluation import decompose_clean, resolve_task
from saltbench.inference import simulated
from saltbench.inference.simulated import SimulationParams
from saltbench.tasks import get_task

PROBABILITY_MAPS: Mapping[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean_probability": lambda p: p,
    "median_probability": lambda p: p,
    "max_probability": lambda p: p,
    "min_probability": lambda p: p,
    "mean_margin": lambda p: p - (1 - p) / 19,  # top-1 minus top-2: the other 19 share 1 − p evenly
}
"""Confidence functions whose value on a unit whose tokens all have chosen probability ``p`` is a known
probability (``calibration: none``): its Brier and ECE are planted."""
RANKS_BY_LATENT = frozenset(
    {
        *PROBABILITY_MAPS,
        "max_log_probability",
        "log_perplexity",
        "perplexity",
        "max_entropy",
        "mean_entropy",
        "mean_renyi_negentropy",
        "mean_fisher_rao",
    }
)
"""Confidence functions monotone in ``p`` on such a unit (all but ``log_probability_sum``, which counts
tokens): they rank units as the latent does, so the pooled AUROC is planted for them."""


@dataclass(frozen=True)
class RowGeometry:
    """One dataset row at one granularity: ``members`` [atoms, units] (1 where the atom lies in the unit),
    ``latents`` [atoms, latent groups], ``unit_latent`` (each unit's latent group; -1 when its tokens mix
    latents), and over the cut positions of a response cut inside its answer, per reference unit: the
    share written and matching (``match``), written and not matching (``other``), and ``Σ match/R`` over
    the cuts (``weight``, its precision weight)."""

    members: np.ndarray
    latents: np.ndarray
    unit_latent: np.ndarray
    match: np.ndarray
    other: np.ndarray
    weight: np.ndarray

    @property
    def confident(self) -> bool:
        """Whether every unit's tokens carry one latent (its confidence is planted)."""
        return bool((self.unit_latent >= 0).all())


def _membership(starts: np.ndarray, unit_starts: np.ndarray, unit_ends: np.ndarray) -> np.ndarray:
    """[atoms, units]: 1 where the atom starting at ``starts`` lies inside the unit."""
    inside = (starts[:, None] >= unit_starts[None, :]) & (starts[:, None] < unit_ends[None, :])
    return inside.astype(np.float64)


def _cut_shares(reference: str, rule: object, granularity: str, keys: list[str]) -> tuple[np.ndarray, ...]:
    """``match``, ``other`` and ``weight`` of :class:`RowGeometry` over the cuts ``c = 0..L−1``."""
    size = len(keys)
    match, other, weight = np.zeros(size), np.zeros(size), np.zeros(size)
    key = rule.key  # type: ignore[attr-defined]
    for c in range(len(reference)):
        units = decompose_clean(reference[:c].strip(), rule, granularity, with_spans=False)[0]  # type: ignore[arg-type]
        hits = [i < size and key(u) == keys[i] for i, u in enumerate(units)]
        for i, hit in enumerate(hits):
            j = min(i, size - 1)
            if hit:
                match[j] += 1
                weight[j] += 1 / len(units)
            else:
                other[j] += 1
    length = max(len(reference), 1)
    return match / length, other / length, weight / length


def _atom_unit(own: np.ndarray, atoms: tuple[np.ndarray, np.ndarray], span: tuple[int, int]) -> int:
    """One latent per atom: the unit's latent is its atom's when the unit is exactly one atom, else -1."""
    index = np.flatnonzero(own)
    if index.size == 1 and (int(atoms[0][index[0]]), int(atoms[1][index[0]])) == span:
        return int(index[0])
    return -1


def _unit_latent(
    own: np.ndarray,
    group: np.ndarray,
    covered: tuple[np.ndarray, np.ndarray],
    span: tuple[int, int],
) -> int:
    """A line latent: the unit's latent is the line of its atoms when they share one and the unit's
    characters lie within what that line's probability covers (its first atom's start to its last atom's
    end), else -1."""
    lines = np.unique(group[own])
    if lines.size != 1:
        return -1
    line = int(lines[0])
    return line if covered[0][line] <= span[0] and span[1] <= covered[1][line] else -1


def row_geometry(
    reference: str, task: str, variant: str | None, granularity: str, line_latent: bool, cuts: bool
) -> RowGeometry:
    """The :class:`RowGeometry` of one reference (stripped) at ``granularity``; the cut shares only when
    ``cuts`` (else zeros)."""
    rule = resolve_task(get_task(task, variant))
    _, (a_starts, a_ends) = decompose_clean(reference, rule, "atom")
    units, (u_starts, u_ends) = decompose_clean(reference, rule, granularity)
    starts, ends = np.asarray(a_starts, np.int64), np.asarray(a_ends, np.int64)
    u_starts_a, u_ends_a = np.asarray(u_starts, np.int64), np.asarray(u_ends, np.int64)
    members = _membership(starts, u_starts_a, u_ends_a)
    group = simulated.atom_lines(reference, starts) if line_latent else np.arange(starts.size)
    n_groups = int(group.max()) + 1 if group.size else 0
    latents = np.zeros((starts.size, n_groups))
    latents[np.arange(starts.size), group] = 1.0
    # the characters each latent group's probability covers: its atoms, and with a line latent the
    # separators between them
    g_lo = np.full(n_groups, np.iinfo(np.int64).max)
    g_hi = np.full(n_groups, -1)
    np.minimum.at(g_lo, group, starts)
    np.maximum.at(g_hi, group, ends)
    spans = [(int(a), int(b)) for a, b in zip(u_starts_a, u_ends_a, strict=True)]
    unit_latent = np.array(
        [
            _unit_latent(members[:, j] > 0, group, (g_lo, g_hi), span)
            if line_latent
            else _atom_unit(members[:, j] > 0, (starts, ends), span)
            for j, span in enumerate(spans)
        ],
        np.int64,
    )
    keys = [rule.key(u) for u in units]
    shares = _cut_shares(reference, rule, granularity, keys) if cuts else (np.zeros(len(units)),) * 3
    return RowGeometry(members, latents, unit_latent, *shares)


@dataclass(frozen=True)
class Shapes:
    """Shares of a cell's responses: ``answered`` whole, ``cut`` inside the answer; the rest has no
    units (cut inside the thinking, or a ``think`` model's response without a trace)."""

    answered: float
    cut: float


def wrong_chains(
    params: SimulationParams, task: str, style: str, rows: list[RowGeometry], replicates: int, seed: int
) -> Iterator[tuple[RowGeometry, np.ndarray]]:
    """Each row with units and which atoms of ``replicates`` planted answers of its length are wrong
    ([replicates, atoms]; one Monte Carlo set per length, drawn from ``seed`` in the rows' order)."""
    rng = np.random.default_rng(seed)
    chains: dict[int, np.ndarray] = {}
    for row in rows:
        n, size = row.members.shape
        if size == 0:
            continue
        if n not in chains:
            chains[n] = ~simulated.atom_chain(params, task, style, n, rng.random((replicates, n)))[0]
        yield row, chains[n]


def cell_counts(
    params: SimulationParams,
    task: str,
    style: str,
    rows: list[RowGeometry],
    shapes: Shapes,
    replicates: int,
    seed: int,
) -> tuple[float, np.ndarray]:
    """Expected precision (mean over the rows with units of ``answered·A + cut·T``, module docstring) and
    expected pooled class counts per response ``[n11, n10, n01, n00]`` (``(y, λ)``) of one cell."""
    precision, counts, used = 0.0, np.zeros(4), 0
    for row, wrong in wrong_chains(params, task, style, rows, replicates, seed):
        y = (wrong @ row.members) == 0  # [replicates, units]
        group_ok = (wrong @ row.latents) == 0
        lam = group_ok[:, np.maximum(row.unit_latent, 0)]
        joint = np.stack([(y & lam).mean(0), (y & ~lam).mean(0), (~y & lam).mean(0), (~y & ~lam).mean(0)])
        p_y, p_lam = joint[0] + joint[1], joint[0] + joint[2]
        # sums, not BLAS dot products: the same bits whatever the threads (a table's bytes are compared)
        precision += shapes.answered * p_y.mean() + shapes.cut * float(np.sum(row.weight * p_y))
        other = [np.sum(row.other * p_lam), np.sum(row.other * (1 - p_lam))]
        cut = np.sum(joint * row.match, axis=1) + np.array([0.0, 0.0, *other])
        counts += shapes.answered * joint.sum(1) + shapes.cut * cut
        used += 1
    return (precision / used if used else float("nan")), counts / max(used, 1)


def class_auroc(counts: np.ndarray, separation: float) -> float:
    """Pooled AUROC of units in classes ``[n11, n10, n01, n00]`` with scores ``N(separation·λ, 1)``:
    ``Σ n_a n_b Φ((μ_a − μ_b)/√2) / (N₊ N₋)`` over correct ``a`` and incorrect ``b`` (ties at ½)."""
    n11, n10, n01, n00 = counts
    positives, negatives = n11 + n10, n01 + n00
    if positives <= 0 or negatives <= 0:
        return float("nan")

    def phi(x: float) -> float:
        return 0.5 * (1.0 + math.erf(x / 2.0))  # Φ(x/√2)

    pairs = n11 * (n01 * 0.5 + n00 * phi(separation)) + n10 * (n01 * phi(-separation) + n00 * 0.5)
    return float(pairs / (positives * negatives))


def _class_integrals(
    params: SimulationParams, separation: float, confidence: str
) -> tuple[np.ndarray, np.ndarray]:
    """Confidences on a grid of latent scores and the grid's normal weights for ``λ = 1`` and ``λ = 0``."""
    grid = np.linspace(-12.0, 12.0 + max(separation, 0.0), 48001)
    step = grid[1] - grid[0]
    values = PROBABILITY_MAPS[confidence](simulated.token_probability(params, grid))
    weights = np.stack(
        [np.exp(-0.5 * (grid - mu) ** 2) * step / math.sqrt(2 * math.pi) for mu in (separation, 0.0)]
    )
    return values, weights


def class_brier(counts: np.ndarray, params: SimulationParams, separation: float, confidence: str) -> float:
    """``Σ_k n_k E[(c(s) − y_k)²] / N`` over the classes, ``c`` the confidence function's value
    (:data:`PROBABILITY_MAPS`), ``s ~ N(separation·λ_k, 1)`` (docs/metrics.md §7)."""
    values, weights = _class_integrals(params, separation, confidence)
    total = 0.0
    for n, (y, lam) in zip(counts, ((1, 1), (1, 0), (0, 1), (0, 0)), strict=True):
        total += n * float(np.sum(weights[1 - lam] * (values - y) ** 2))
    return total / float(counts.sum())


def class_ece(
    counts: np.ndarray, params: SimulationParams, separation: float, confidence: str, n_bins: int
) -> float:
    """The population ECE of the classes (docs/metrics.md §2: bins ``((j−1)/m, j/m]``):
    ``Σ_j |Σ_k n_k E[(c(s) − y_k)·1{c(s) ∈ B_j}]| / N``."""
    values, weights = _class_integrals(params, separation, confidence)
    bins = np.searchsorted(np.arange(n_bins + 1) / n_bins, values, side="left")
    gaps = np.zeros(n_bins + 1)
    for n, (y, lam) in zip(counts, ((1, 1), (1, 0), (0, 1), (0, 0)), strict=True):
        gaps += n * np.bincount(bins, weights=weights[1 - lam] * (values - y), minlength=n_bins + 1)
    return float(np.abs(gaps[1:]).sum() / counts.sum())


# -- the new estimators: draws and second pass (docs/simulation.md §9–10) -------------------------------
def discrete_auroc(values: np.ndarray, positive: np.ndarray, negative: np.ndarray) -> float:
    """AUROC of a score that takes ``values`` with weights ``positive`` (correct units) and ``negative``
    (incorrect): ``P(X₊ > X₋) + ½ P(X₊ = X₋)``, equal values merged (ties counted half); NaN without
    both classes.

    Example:
        >>> discrete_auroc(np.array([0.0, 1.0, 1.0]), np.array([0.0, 1.0, 1.0]), np.array([1.0, 1.0, 0.0]))
        0.75
    """
    unique, index = np.unique(np.asarray(values, np.float64), return_inverse=True)
    pos = np.bincount(index, weights=np.asarray(positive, np.float64), minlength=unique.size)
    neg = np.bincount(index, weights=np.asarray(negative, np.float64), minlength=unique.size)
    total = float(pos.sum()) * float(neg.sum())
    if total <= 0:
        return float("nan")
    below = np.cumsum(neg) - neg
    return float(np.sum(pos * (below + 0.5 * neg)) / total)


def binomial_pmf(n: int, q: np.ndarray) -> np.ndarray:
    """``P(K = k)``, ``k = 0..n``, of ``K ~ Binomial(n, q)`` for every ``q`` (a last axis of ``n + 1``)."""
    k = np.arange(n + 1)
    comb = np.array([math.comb(n, int(j)) for j in k], np.float64)
    q = np.asarray(q, np.float64)[..., None]
    return comb * q**k * (1.0 - q) ** (n - k)


def draw_class_pmfs(
    params: SimulationParams,
    task: str,
    style: str,
    rows: list[RowGeometry],
    n_draws: int,
    replicates: int,
    seed: int,
) -> np.ndarray:
    """[2, n + 1]: the expected units per response, correct (row 0) and incorrect (row 1), that ``k`` of
    ``n_draws`` draws repeat, ``k = 0..n``: a unit of ``a`` correct and ``b`` wrong atoms (the planted atom
    chain, ``replicates`` answers per length) is repeated by each draw with probability ``r_1^a r_0^b``
    (:mod:`saltbench.inference.simulated.params`), correct when ``b = 0``. Whole answers only (no cut)."""
    if params.repeat_correct is None or params.repeat_wrong is None:
        raise ValueError("draw_class_pmfs needs a model with repeat_correct and repeat_wrong")
    out, used = np.zeros((2, n_draws + 1)), 0
    for row, chain in wrong_chains(params, task, style, rows, replicates, seed):
        wrong = chain.astype(np.float64) @ row.members  # [replicates, units]: b
        right = row.members.sum(0)[None, :] - wrong  # a
        pmf = binomial_pmf(n_draws, params.repeat_correct**right * params.repeat_wrong**wrong)
        correct = (wrong == 0)[..., None]
        out[0] += np.sum(np.where(correct, pmf, 0.0), axis=(0, 1)) / replicates
        out[1] += np.sum(np.where(correct, 0.0, pmf), axis=(0, 1)) / replicates
        used += 1
    return out / max(used, 1)


def agreement_auroc(pmfs: np.ndarray) -> float:
    """Planted AUROC of ``draws.agreement = k/n`` (higher is confident) from :func:`draw_class_pmfs`."""
    n = pmfs.shape[1] - 1
    return discrete_auroc(np.arange(n + 1) / n, pmfs[0], pmfs[1])


def entropy_auroc(pmfs: np.ndarray) -> float:
    """Planted AUROC of ``draws.entropy`` (lower is confident) where every unit is one atom: its ``n`` draws
    put two values there, the greedy one ``k`` times and its one alternative ``n − k`` times, so the entropy
    is ``−(k/n) ln(k/n) − (1 − k/n) ln(1 − k/n)``."""
    n = pmfs.shape[1] - 1
    share = np.arange(n + 1) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.nan_to_num(share * np.log(share)) + np.nan_to_num((1 - share) * np.log(1 - share))
    return discrete_auroc(terms, pmfs[0], pmfs[1])  # −entropy: higher is confident


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    flat = np.asarray(x, np.float64).ravel()
    values = [0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in flat.tolist()]
    return np.asarray(values, np.float64).reshape(np.shape(x))


def verbalized_pmfs(params: SimulationParams) -> tuple[np.ndarray, np.ndarray]:
    """The values a verbalized reply states (``0..100``, in steps) and their probabilities for a correct
    (row 0) and an incorrect (row 1) unit: ``P(V = step·j) = Φ(hi_j − d_v·y) − Φ(lo_j − d_v·y)`` with
    ``[lo_j, hi_j)`` the latents stated so (:meth:`SecondPassEffect.verbalized_bounds`)."""
    effect = params.second_pass
    step = int(effect.verbalized_step)
    top = math.floor(100 / step + 0.5)
    j = np.arange(top + 1)
    lo, hi = effect.verbalized_bounds(j)
    pmfs = np.stack([_normal_cdf(hi - d) - _normal_cdf(lo - d) for d in (effect.verbalized_separation, 0.0)])
    return np.minimum(step * j, 100).astype(np.float64), pmfs


def verbalized_auroc(params: SimulationParams) -> float:
    """Planted AUROC of ``second_pass.verbalized`` (unparsable replies, independent of correctness, left
    out): the same at every granularity, whatever the share of correct units."""
    values, pmfs = verbalized_pmfs(params)
    return discrete_auroc(values, pmfs[0], pmfs[1])


def p_true_auroc(params: SimulationParams) -> float:
    """Planted AUROC of ``second_pass.p_true``: ``Φ(d_t/√2)`` (``P(True)`` is increasing in a latent
    ``N(d_t·y, 1)``)."""
    return 0.5 * (1.0 + math.erf(params.second_pass.p_true_separation / 2.0))


__all__ = [
    "PROBABILITY_MAPS",
    "RANKS_BY_LATENT",
    "RowGeometry",
    "Shapes",
    "agreement_auroc",
    "binomial_pmf",
    "discrete_auroc",
    "draw_class_pmfs",
    "entropy_auroc",
    "p_true_auroc",
    "verbalized_auroc",
    "verbalized_pmfs",
    "cell_counts",
    "class_auroc",
    "class_brier",
    "class_ece",
    "row_geometry",
]
