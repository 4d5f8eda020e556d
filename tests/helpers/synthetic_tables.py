"""Synthetic tables with the upstream schemas, for tests, docs and figure previews.

Nothing here is a result: the generators draw plausible numbers with known structure (e.g. a known
intervention slope, a known style effect) so that the analysis functions can be checked against it.
All generators are deterministic for a given ``seed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np
import polars as pl

from saltbench.analysis import INTERVENTIONS_SCHEMA, METRICS_SCHEMA, TRAIN_LOG_SCHEMA
from saltbench.confidence import PAPER_CONFIDENCE_NAMES
from saltbench.core.contracts import ARTIFACTS, UNIT_COLUMNS
from saltbench.core.vocabulary import FLAVOURS, GRANULARITIES
from saltbench.stages.interventions import CONFIDENCE_COLUMNS
from saltbench.tasks import TASK_SLUGS as TASKS

_CALIBRATED = frozenset({"ece", "mce", "brier"})


def metrics_rows(
    rows: Sequence[tuple[str, str | None, float]],
    *,
    model: str = "m",
    style: str = "direct",
    task: str = "dna",
    granularity: str = "atom",
    flavour: str = "topk",
    calibration: str = "zscore_sigmoid",
    ci_halfwidth: float = 0.05,
) -> pl.DataFrame:
    """A metrics table from ``(metric, confidence, value)`` triples of one cell.

    Precision and recall rows get null confidence and flavour; ECE/MCE/Brier rows get ``calibration``;
    ranking rows get ``"none"``. CIs are ``value ± ci_halfwidth`` (NaN value → NaN CI).
    """
    out = []
    for metric, confidence, value in rows:
        is_acc = metric in ("precision", "recall")
        out.append(
            {
                "model": model,
                "style": style,
                "task": task,
                "granularity": granularity,
                "confidence": None if is_acc else confidence,
                "flavour": None if is_acc else flavour,
                "calibration": calibration if metric in _CALIBRATED else "none",
                "metric": metric,
                "value": float(value),
                "ci_low": float(value) - ci_halfwidth,
                "ci_high": float(value) + ci_halfwidth,
                "n_units": 100,
                "n_responses": 10,
            }
        )
    return pl.DataFrame(out, schema=dict(METRICS_SCHEMA))


def synthetic_metrics(
    models: Sequence[str] = ("model-a", "model-b"),
    styles: Sequence[str] = ("direct", "cot"),
    tasks: Sequence[str] = TASKS,
    *,
    seed: int = 0,
    cot_precision_gain: float = 0.08,
    cot_auroc_change: float = -0.03,
) -> pl.DataFrame:
    """A full metrics table: every metric, function, flavour and calibration method, with CIs.

    Structure: precision falls from atom to line to generation; AUROC of each confidence function has a
    fixed offset (``mean_probability`` and ``max_entropy`` best at ranking, ``perplexity`` best at ECE)
    plus noise; ``cot`` adds ``cot_precision_gain`` to precision and ``cot_auroc_change`` to AUROC.
    Generation-level per-response AUROC is NaN (one unit per response).
    """
    rng = np.random.default_rng(seed)
    fn_names = list(PAPER_CONFIDENCE_NAMES)
    auroc_offset = dict(zip(fn_names, [0.06, 0.02, 0.0, -0.02, -0.01, 0.03, 0.03, 0.05, 0.04]))
    ece_offset = dict(zip(fn_names, [0.04, 0.06, 0.07, 0.03, 0.05, 0.02, 0.01, 0.04, 0.05]))
    gran_drop = {"atom": 0.0, "line": 0.15, "generation": 0.35}
    rows: list[dict[str, object]] = []

    def add(
        base: dict[str, object],
        confidence: str | None,
        flavour: str | None,
        calibration: str,
        metric: str,
        value: float,
        half: float,
    ) -> None:
        half = float("nan") if np.isnan(value) else half
        rows.append(
            base
            | {
                "confidence": confidence,
                "flavour": flavour,
                "calibration": calibration,
                "metric": metric,
                "value": value,
                "ci_low": value - half,
                "ci_high": value + half,
            }
        )

    for mi, model in enumerate(models):
        skill = 0.45 + 0.4 * (mi + 1) / (len(models) + 1)
        for style in styles:
            gain = cot_precision_gain if style == "cot" else 0.0
            dauc = cot_auroc_change if style == "cot" else 0.0
            for ti, task in enumerate(tasks):
                difficulty = 0.1 * ((ti % 3) - 1)
                for gran in GRANULARITIES:
                    level = skill + gain - difficulty - gran_drop[gran]
                    prec = float(np.clip(level + rng.normal(0, 0.03), 0.01, 0.99))
                    base = {
                        "model": model,
                        "style": style,
                        "task": task,
                        "granularity": gran,
                        "n_units": 200,
                        "n_responses": 20,
                    }
                    add(base, None, None, "none", "precision", prec, 0.05)
                    add(base, None, None, "none", "recall", prec * 0.95, 0.05)
                    for fn, flavour in product(fn_names, FLAVOURS):
                        shift = auroc_offset[fn] + dauc - 0.05 * (gran == "atom") + 0.01 * (flavour == "full")
                        auc = float(np.clip(0.68 + shift + rng.normal(0, 0.02), 0.3, 0.99))
                        ranking = {
                            "auroc_pooled": auc,
                            "auroc_per_response": auc - 0.04,
                            "prr": 2 * auc - 1.1,
                            "aurc": (1 - prec) * (1.2 - auc),
                        }
                        if gran == "generation":
                            ranking["auroc_per_response"] = float("nan")
                        for metric, value in ranking.items():
                            add(base, fn, flavour, "none", metric, value, 0.04)
                        for cal in ("zscore_sigmoid", "platt", "isotonic", "histogram"):
                            noise = rng.normal(0, 0.01)
                            e = float(abs(ece_offset[fn] + 0.02 * (cal == "zscore_sigmoid") + noise))
                            for metric, value in (("ece", e), ("mce", 2.5 * e), ("brier", 0.15 + e)):
                                add(base, fn, flavour, cal, metric, value, 0.01)
    return pl.DataFrame(rows, schema=dict(METRICS_SCHEMA))


def synthetic_units(
    models: Sequence[str] = ("model-a",),
    styles: Sequence[str] = ("direct", "cot"),
    tasks: Sequence[str] = ("dna", "matmul"),
    *,
    n_samples: int = 20,
    atoms_per_sample: tuple[int, int] = (4, 16),
    atoms_per_line: int = 4,
    informativeness: float = 1.5,
    cot_accuracy_gain: float = 0.1,
    seed: int = 0,
) -> pl.DataFrame:
    """A units table with all 9 confidence functions in both flavours, derived from simulated tokens.

    Every atom has 1–3 tokens whose probabilities are higher for correct atoms (log-odds shift
    ``informativeness``); token entropies assume the remaining mass spread over 19 alternatives. Lines
    group ``atoms_per_line`` atoms and are correct iff all their atoms are; the generation is one unit
    covering every atom. Confidence functions follow docs/confidence.md §4.1; the ``full`` flavour uses
    slightly lower probabilities and higher entropies.
    """
    rng = np.random.default_rng(seed)
    tok_frames = []
    unit_frames = []
    for model in models:
        skill = rng.uniform(0.45, 0.75)
        for style in styles:
            p_correct = min(0.97, skill + (cot_accuracy_gain if style == "cot" else 0.0))
            for task in tasks:
                n_atoms = rng.integers(atoms_per_sample[0], atoms_per_sample[1] + 1, size=n_samples)
                sample = np.repeat(np.arange(n_samples), n_atoms)
                atom_index = np.concatenate([np.arange(n) for n in n_atoms])
                line_index = atom_index // atoms_per_line
                correct = rng.random(sample.size) < p_correct
                n_tok = rng.integers(1, 4, size=sample.size)
                atom_of_tok = np.repeat(np.arange(sample.size), n_tok)
                shift = informativeness * np.where(correct, 1.0, -0.5)[atom_of_tok]
                logit = 1.0 + shift + rng.normal(0, 1.2, atom_of_tok.size)
                p = 1.0 / (1.0 + np.exp(-logit))
                tok_frames.append(
                    pl.DataFrame(
                        {
                            "model": model,
                            "style": style,
                            "task": task,
                            "sample_id": np.char.add(f"{task}-", sample[atom_of_tok].astype(str)),
                            "atom": atom_index[atom_of_tok],
                            "line": line_index[atom_of_tok],
                            "p": p,
                        }
                    )
                )
                unit_frames.append(
                    pl.DataFrame(
                        {
                            "model": model,
                            "style": style,
                            "task": task,
                            "sample_id": np.char.add(f"{task}-", sample.astype(str)),
                            "atom": atom_index,
                            "line": line_index,
                            "is_correct": correct,
                        }
                    )
                )
    tokens = pl.concat(tok_frames)
    atoms = pl.concat(unit_frames)
    key = ["model", "style", "task", "sample_id"]
    out = []
    for gran, unit_cols in (("atom", ["atom"]), ("line", ["line"]), ("generation", [])):
        agg_keys = [*key, *unit_cols]
        correct = atoms.group_by(agg_keys).agg(pl.col("is_correct").all())
        exprs = _confidence_exprs("topk", 1.0, 0.0) + _confidence_exprs("full", 0.93, 0.25)
        unit = tokens.group_by(agg_keys).agg(exprs)
        frame = correct.join(unit, on=agg_keys, how="left").with_columns(
            pl.lit(gran).alias("granularity"),
            (pl.col(unit_cols[0]) if unit_cols else pl.lit(0)).cast(pl.Int64).alias("unit_index"),
        )
        out.append(frame.drop(unit_cols))
    units = pl.concat(out, how="diagonal_relaxed").with_columns(
        pl.lit("").alias("variant"),
        pl.when(pl.col("is_correct")).then(pl.lit("correct")).otherwise(pl.lit("incorrect")).alias("status"),
    )
    whole = pl.col("n_tokens").filter(pl.col("granularity") == "generation").first()  # the response's tokens
    units = units.with_columns(
        response_unit=pl.lit("x"),
        reference_unit=pl.lit("x"),
        span_start=pl.lit(0),
        span_end=pl.lit(1),
        answer_status=pl.lit("answered"),
        finish_reason=pl.lit("eos"),
        num_reasoning_tokens=pl.lit(0),
        max_new_tokens=pl.lit(512),
        num_generated_tokens=whole.over(key),
    )
    return (
        units.select([*UNIT_COLUMNS, *CONFIDENCE_COLUMNS])
        .sort("model", "style", "task", "sample_id", "granularity", "unit_index")
        .cast(dict(UNIT_COLUMNS))  # type: ignore[arg-type]  # the dtypes of the units contract
    )


def _confidence_exprs(flavour: str, scale: float, entropy_shift: float) -> list[pl.Expr]:
    p = (pl.col("p") * scale).clip(1e-20, 1.0)
    logp = p.log()
    rest = (1.0 - p).clip(1e-20, 1.0)
    entropy = -(p * logp) - rest * (rest / 19).log() + entropy_shift
    exprs = [
        p.mean().alias("mean_probability"),
        p.median().alias("median_probability"),
        p.max().alias("max_probability"),
        logp.sum().alias("log_probability_sum"),
        logp.max().alias("max_log_probability"),
        (-logp.mean()).alias("log_perplexity"),
        (-logp.mean()).exp().alias("perplexity"),
        entropy.mean().alias("mean_entropy"),
        entropy.max().alias("max_entropy"),
    ]
    out = [e.name.prefix(f"{flavour}.") for e in exprs]
    if flavour == "topk":
        out.append(pl.len().cast(pl.Int64).alias("n_tokens"))
    return out


def synthetic_interventions(
    models: Sequence[str] = ("model-a",),
    tasks: Sequence[str] = ("dna", "matmul"),
    *,
    n_samples: int = 30,
    beta_corrupted: float = -2.5,
    beta_local: float = -0.4,
    beta_position: float = -0.6,
    intercept: float = 1.8,
    seed: int = 0,
) -> pl.DataFrame:
    """An interventions table whose next-atom correctness follows a known logistic model.

    ``logit P(correct) = intercept + beta_corrupted·c/(k-1) + beta_local·[local] + beta_position·k/n``
    (random and distant placements have no extra term). Each sample gets clean prefixes at every third
    position and corrupted prefixes with 1, 2 or 4 corrupted atoms in each placement.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for model in models:
        for task in tasks:
            for s in range(n_samples):
                n = int(rng.integers(8, 30))
                for k in range(2, n + 1, 3):
                    options = [("clean", 0)]
                    placements = ("random", "local", "distant")
                    options += [(p, c) for p in placements for c in (1, 2, 4) if c <= k - 1]
                    for placement, c in options:
                        cf = c / (k - 1)
                        local = beta_local * (placement == "local")
                        eta = intercept + beta_corrupted * cf + local + beta_position * k / n
                        prob = 1 / (1 + np.exp(-eta))
                        ok = bool(rng.random() < prob)
                        rows.append(
                            {
                                "model": model,
                                "task": task,
                                "sample_id": f"{task}-{s}",
                                "n_atoms": n,
                                "position": k,
                                "position_fraction": k / n,
                                "n_corrupted": c,
                                "corrupted_fraction": cf,
                                "placement": placement,
                                "next_correct": ok,
                                "next_m_accuracy": float(np.clip(prob + rng.normal(0, 0.05), 0, 1)),
                                "next_confidence": float(np.clip(prob + rng.normal(0.05, 0.1), 0, 1)),
                                "tf_logprob_correct": float(np.log(prob)),
                            }
                        )
    return pl.DataFrame(rows, schema=dict(INTERVENTIONS_SCHEMA))


def synthetic_train_log(
    models: Sequence[str] = ("salt-tiny", "salt-small"), *, steps: int = 400, seed: int = 0
) -> pl.DataFrame:
    """Training curves: exponentially decaying loss with noise, a warm-up/cosine learning rate."""
    rng = np.random.default_rng(seed)
    frames = []
    for i, model in enumerate(models):
        step = np.arange(1, steps + 1)  # one row per optimizer step, as the training stage writes
        floor = 0.6 - 0.15 * i
        loss = floor + 3.5 * np.exp(-step / (60 + 30 * i)) + rng.normal(0, 0.04, step.size)
        decay = 0.5 * (1 + np.cos(np.pi * np.clip((step - 40) / (steps - 40), 0, 1)))
        lr = np.where(step < 40, step / 40, decay) * 3e-3
        frames.append(
            pl.DataFrame(
                {
                    "model": model,
                    "step": step,
                    "loss": loss,
                    "lr": lr,
                    "tokens_per_s": rng.normal(9000 / (i + 1), 300, step.size),
                }
            )
        )
    return pl.concat(frames).cast(dict(TRAIN_LOG_SCHEMA))  # type: ignore[arg-type]


def with_contract_columns(frame: pl.DataFrame, kind: str) -> pl.DataFrame:
    """``frame`` completed to the contract of artifact ``kind``: absent required columns as typed nulls, in
    the contract's order, then the frame's other columns (so synthetic tables can be written as artifacts)."""
    required = ARTIFACTS[kind].columns
    missing = [
        pl.lit(None, dtype=dtype).alias(name) for name, dtype in required.items() if name not in frame.columns
    ]
    frame = frame.with_columns(missing)
    return frame.select([*required, *(c for c in frame.columns if c not in required)])
