"""One small, valid frame per artifact kind of :mod:`saltbench.core.contracts` (for the I/O and contract
tests)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from helpers.synthetic_tables import synthetic_units
from helpers.table_samples import TABLE_BUILDERS, realistic
from saltbench.analysis import label_noise_cells
from saltbench.config import MetricsConfig
from saltbench.core.contracts import ARTIFACTS, INTERVENTION_COLUMNS, TABLES
from saltbench.inference import GenerationRecord, TokenScores, records_to_frame
from saltbench.stages.interventions import CONFIDENCE_COLUMNS
from saltbench.stages.metrics import compute_metrics
from saltbench.tasks import get_task


def generation_record(
    rng: np.random.Generator, n: int, k: int = 20, finish: str = "length"
) -> GenerationRecord:
    """A generation of ``n`` tokens with random log-probabilities over a 50-token vocabulary (``k`` <= 50) and
    token texts drawn from a few awkward pieces (empty, multi-byte, newline, fence)."""
    if finish == "error":
        return GenerationRecord.failed("prompt too long", num_prompt_tokens=int(rng.integers(1, 99)), k=k)
    logits = rng.normal(size=(n, 50)).astype(np.float32)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    top = np.argsort(-logp, axis=1)[:, :k]
    scores = TokenScores(
        token_ids=top[:, 0].astype(np.int32),
        chosen_logprobs=np.take_along_axis(logp, top[:, :1], 1)[:, 0],
        topk_ids=top.astype(np.int32),
        topk_logprobs=np.take_along_axis(logp, top, 1),
        entropy=-(np.exp(logp) * logp).sum(1).astype(np.float32),
    )
    texts = [str(rng.choice(["a", " b", "", "é", "\n", "😀", "**"])) for _ in range(n)]
    return GenerationRecord.from_scores(
        scores, texts, finish_reason=finish, num_prompt_tokens=int(rng.integers(1, 99))
    )


def dataset() -> pl.DataFrame:
    return get_task("dna").generate(6, seed=3, min_codons=2, max_codons=5)


def generation_meta(rows: pl.DataFrame, prompts: list[str] | None = None) -> dict[str, list]:
    """The meta columns of a generations table of model ``m``, style ``direct``, for dataset ``rows``."""
    return {
        "sample_id": rows["sample_id"].to_list(),
        "task": rows["task"].to_list(),
        "variant": rows["variant"].to_list(),
        "model": ["m"] * rows.height,
        "style": ["direct"] * rows.height,
        "prompt": ["p"] * rows.height if prompts is None else prompts,
    }


def generations() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    rows = dataset()
    records = [generation_record(rng, int(n), k=5) for n in rng.integers(3, 12, size=rows.height)]
    return records_to_frame(records, generation_meta(rows))


def units() -> pl.DataFrame:
    return synthetic_units(styles=("direct",), tasks=("dna",), n_samples=6)


def metrics() -> pl.DataFrame:
    settings = MetricsConfig(calibration_methods=("isotonic",), n_bootstrap=5)
    rows = compute_metrics(units(), flavours=("topk",), settings=settings, seed=0)
    return rows.select(
        pl.lit("m").alias("model"), pl.lit("direct").alias("style"), pl.lit("dna").alias("task"), pl.all()
    )


def interventions() -> pl.DataFrame:
    rng = np.random.default_rng(1)
    n = 12
    c = rng.integers(0, 3, size=n)
    values = {
        "model": ["m"] * n,
        "task": ["dna"] * n,
        "sample_id": [f"s{i % 3}" for i in range(n)],
        "variant": [None] * n,
        "n_atoms": [9] * n,
        "position": (c + 3).tolist(),
        "position_fraction": ((c + 3) / 9).tolist(),
        "n_corrupted": c.tolist(),
        "corrupted_fraction": (c / (c + 2)).tolist(),
        "placement": ["clean" if x == 0 else "random" for x in c],
        "corrupted_positions": [list(range(1, x + 1)) for x in c],
        "corrupted_atoms": [["AAA"] * x for x in c],
        "next_m": [3] * n,
        "next_correct": (rng.random(n) < 0.5).tolist(),
        "next_m_accuracy": rng.random(n).tolist(),
        "next_status": ["correct"] * n,
        "next_atom": ["ACG"] * n,
        "reference_atom": ["ACG"] * n,
        "prefix_intact": [True] * n,
        "next_confidence": rng.random(n).tolist(),
        "next_n_tokens": [2] * n,
        "tf_logprob_correct": (-rng.random(n)).tolist(),
        "tf_logprob_with_gap": (-rng.random(n)).tolist(),
        "tf_n_tokens": [2] * n,
        "prefix_tokens": [20] * n,
        "canonical_cut": [True] * n,
        "prefix": ["ACG TTT"] * n,
        "continuation": [" ACG"] * n,
        "finish_reason": ["stop"] * n,
        **{name: rng.random(n).tolist() for name in CONFIDENCE_COLUMNS},
    }
    schema = {**INTERVENTION_COLUMNS, **{name: pl.Float64() for name in CONFIDENCE_COLUMNS}}
    return pl.DataFrame(values, schema=schema)


def train_log() -> pl.DataFrame:
    n = 40
    steps = np.arange(1, n + 1)
    return pl.DataFrame(
        {
            "step": steps,
            "loss": 3.0 / np.sqrt(steps),
            "lr": np.full(n, 1e-3),
            "tokens": np.full(n, 512),
            "answer_tokens": np.full(n, 200),
            "tokens_per_s": np.linspace(900.0, 1000.0, n),
            "elapsed_s": steps * 0.5,
        }
    )


def draws() -> pl.DataFrame:
    """Two draws of each dataset row (the draws table: docs/generation.md §7)."""
    from saltbench.stages.generation import draws_frame

    rng = np.random.default_rng(1)
    rows = dataset()
    records = [
        [generation_record(rng, int(n), k=5) for n in rng.integers(3, 12, size=2)] for _ in range(rows.height)
    ]
    return draws_frame(records, generation_meta(rows))


def second_pass() -> pl.DataFrame:
    """Both kinds asked about every line and whole answer of two dataset rows, one reply of each status (the
    second-pass table: docs/confidence.md §8)."""
    from saltbench.core.contracts import SECOND_PASS_COLUMNS

    ids = dataset()["sample_id"][:2].to_list()
    questions = [(s, g, i) for s in ids for g, i in (("generation", 0), ("line", 0), ("line", 1))]
    kinds = ("verbalized", "p_true")
    replies = {
        "verbalized": [("85", 0.85, "ok"), ("unsure", None, "unparsable"), ("120", None, "out_of_range")],
        "p_true": [("True", 0.9, "ok"), ("****", None, "no_true_false"), ("", None, "empty")],
    }
    rows = [
        (s, g, i, kind, *replies[kind][n % 3], 140, 3)
        for n, (s, g, i) in enumerate(questions)
        for kind in kinds
    ]
    frame = pl.DataFrame(rows, schema=list(SECOND_PASS_COLUMNS), orient="row")
    return frame.with_columns(pl.col("value").fill_null(float("nan"))).cast(dict(SECOND_PASS_COLUMNS))


def _table(name: str) -> Callable[[], pl.DataFrame]:
    return lambda: TABLE_BUILDERS[name](realistic())


SAMPLES = {
    "dataset": dataset,
    "generations": generations,
    "draws": draws,
    "second_pass": second_pass,
    "units": units,
    "metrics": metrics,
    "interventions": interventions,
    "train_log": train_log,
    **{artifact.name: _table(name) for name, artifact in TABLES.items()},
    "table_part.label_noise": lambda: label_noise_cells(
        realistic().units, epsilons=(0.0, 0.2), n_replicates=2
    ),
}
"""A builder for every artifact kind (each analysis table built by its function: tests/table_samples.py)."""

assert set(SAMPLES) == set(ARTIFACTS)
