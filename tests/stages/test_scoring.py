"""Scoring stage: token -> unit alignment through the evaluator's spans, every unit gets a score."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.confidence import PAPER_CONFIDENCE_NAMES as CONFIDENCE_NAMES
from saltbench.confidence import unit_confidence
from saltbench.config import MetricsConfig
from saltbench.inference.records import GenerationRecord, TokenScores, records_to_frame
from saltbench.stages.metrics import compute_metrics, response_accuracy
from saltbench.stages.scoring import confidence_column, score_generations, token_unit_pairs


def make_record(texts: list[str], probs: list[float]) -> GenerationRecord:
    """A record whose chosen token has probability p and a single alternative with 1 - p."""
    n = len(texts)
    chosen = np.log(np.asarray(probs, dtype=np.float32))
    k = 20
    topk_ids = np.full((n, k), -1, np.int32)
    topk_lp = np.full((n, k), -np.inf, np.float32)
    topk_ids[:, 0] = np.arange(n)
    topk_lp[:, 0] = chosen
    topk_ids[:, 1] = 10_000
    topk_lp[:, 1] = np.log1p(-np.minimum(np.asarray(probs, dtype=np.float32), 0.999999))
    scores = TokenScores(np.arange(n, dtype=np.int32), chosen, topk_ids, topk_lp, np.full(n, 0.5, np.float32))
    return GenerationRecord.from_scores(scores, texts, finish_reason="eos", num_prompt_tokens=3)


def frames(records: list[GenerationRecord], references: list[str], variant: str | None = None):
    ids = [f"s{i}" for i in range(len(records))]
    gens = records_to_frame(records, {"sample_id": ids})
    data = pl.DataFrame({"sample_id": ids, "variant": [variant] * len(ids), "reference": references})
    return gens, data


def test_token_unit_pairs_docstring_case():
    tok, unit = token_unit_pairs(
        np.array([0, 1, 3, 4, 5, 7]), 9, np.array([0, 2, 4, 6, 8]), np.array([1, 3, 5, 7, 9])
    )
    assert tok.tolist() == [0, 1, 3, 4, 5] and unit.tolist() == [0, 1, 2, 3, 4]


def test_straddling_token_counts_for_both_units():
    # " 7 8" is one token covering atoms 7 and 8
    tok, unit = token_unit_pairs(np.array([0, 1, 3]), 7, np.array([0, 2, 4, 6]), np.array([1, 3, 5, 7]))
    assert list(zip(tok.tolist(), unit.tolist())) == [(0, 0), (1, 1), (2, 2), (2, 3)]


def test_salt_example_atoms_lines_generation():
    """docs/confidence.md §3.4: tokens 5, ' 4', '\\n', 6, ' 7', ' 8' inside fences; reference 5 4 / 5 7."""
    texts = ["****", "****", "\n", "5", " 4", "\n", "6", " 7", " 8", "\n", "********"]
    probs = [0.99, 0.99, 0.99, 0.9, 0.8, 0.905, 0.5, 0.6, 0.7, 0.99, 0.99]
    gens, data = frames([make_record(texts, probs)], ["5 4\n5 7"])
    units = score_generations(gens, data, "matmul", flavours=("full",))
    col = confidence_column("full", "mean_probability")
    atoms = units.filter(pl.col("granularity") == "atom")
    assert atoms["status"].cast(pl.String).to_list() == [
        "correct",
        "correct",
        "incorrect",
        "correct",
        "redundant",
    ]
    assert np.allclose(atoms[col].to_numpy(), [0.9, 0.8, 0.5, 0.6, 0.7], atol=1e-6)
    lines = units.filter(pl.col("granularity") == "line")
    assert np.allclose(lines[col].to_numpy(), [0.85, 0.6], atol=1e-6)
    gen = units.filter(pl.col("granularity") == "generation")
    # our generation unit spans 5 ... 8: the newline token between the lines is inside it
    assert gen[col].item() == pytest.approx(np.mean([0.9, 0.8, 0.905, 0.5, 0.6, 0.7]), abs=1e-6)
    assert (units["n_tokens"] > 0).all()


def test_answer_repeated_in_reasoning_uses_the_fenced_tokens():
    """§10.4: the authors aligned to the first occurrence; we use the extracted fenced answer."""
    texts = ["TCT", " CGA", " maybe", "\n", "********", "\n", "TCT", " CGA", "\n", "********"]
    probs = [0.1, 0.1, 0.5, 0.5, 0.9, 0.9, 0.8, 0.7, 0.9, 0.9]
    gens, data = frames([make_record(texts, probs)], ["TCT CGA"])
    atoms = score_generations(gens, data, "dna", flavours=("full",)).filter(pl.col("granularity") == "atom")
    assert np.allclose(atoms["full.mean_probability"].to_numpy(), [0.8, 0.7], atol=1e-6)


def test_topk_flavour_matches_unit_confidence_reference():
    texts = ["********\n", "TCT", " AAA", "\n********"]
    probs = [0.9, 0.6, 0.3, 0.9]
    rec = make_record(texts, probs)
    gens, data = frames([rec], ["TCT CGA"])
    atoms = score_generations(gens, data, "dna").filter(pl.col("granularity") == "atom")
    for i, tok in enumerate([1, 2]):
        vec = [float(rec.chosen_logprobs[tok]), float(rec.topk_logprobs[tok, 1])]
        expected = unit_confidence([vec], flavour="topk")
        for name in CONFIDENCE_NAMES:
            assert atoms[f"topk.{name}"][i] == pytest.approx(expected[name], rel=1e-5), name


def test_logic_atoms_get_one_score_each():
    """§10.5: upstream split `p1: True` into two spans; our spans are the evaluator's units."""
    texts = ["********", "\n", "p1", ":", " True", "\n", "p2", ":", " False", "\n", "********"]
    gens, data = frames([make_record(texts, [0.9] * len(texts))], ["p1: True\np2: True\n"])
    atoms = score_generations(gens, data, "logic").filter(pl.col("granularity") == "atom")
    assert atoms.height == 2 and atoms["n_tokens"].to_list() == [3, 3]
    assert atoms["is_correct"].to_list() == [True, False]


def test_error_and_empty_generations_are_scored_not_crashing():
    failed = GenerationRecord.failed("prompt longer than the context window", num_prompt_tokens=9000)
    empty = make_record([], [])
    gens, data = frames([failed, empty, make_record(["garbage ***"], [0.5])], ["TCT", "TCT CGA", "AAA"])
    units = score_generations(gens, data, "dna")
    missing = units.filter(pl.col("sample_id").is_in(["s0", "s1"]))
    assert set(missing["status"].cast(pl.String).to_list()) == {"missing"}
    metrics = compute_metrics(units, settings=MetricsConfig(n_bootstrap=20))
    precision = metrics.filter((pl.col("metric") == "precision") & (pl.col("granularity") == "atom"))
    assert precision["value"].item() == 0.0
    auroc = metrics.filter(pl.col("metric") == "auroc_pooled")["value"]
    assert auroc.is_nan().all()  # one class only: undefined, not a crash


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from(["TCT", "CGA", "AAA", "GGG"]), min_size=1, max_size=12),
    st.lists(st.integers(1, 3), min_size=12, max_size=12),
    st.data(),
)
def test_every_response_unit_gets_tokens(atoms, pieces, data):
    """Random tokenisations of a fenced answer: every response unit is covered by >= 1 token."""
    text = "********\n" + " ".join(atoms) + "\n********"
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(text) - 1), max_size=len(text) // 2))))
    bounds = [0, *cuts, len(text)]
    texts = [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    gens, frame = frames([make_record(texts, [0.7] * len(texts))], [" ".join(reversed(atoms))])
    units = score_generations(gens, frame, "dna")
    scored = units.filter(pl.col("status") != "missing")
    assert (scored["n_tokens"] >= 1).all()
    assert not scored["topk.mean_probability"].is_nan().any()


def test_metrics_rows_and_accuracy():
    records, refs = [], []
    rng = np.random.default_rng(0)
    for _ in range(12):
        atoms = ["TCT", "CGA", "AAA", "GGG"]
        wrong = rng.random(4) < 0.4
        resp = ["TTT" if w else a for a, w in zip(atoms, wrong)]
        texts = ["********\n", *[(" " if j else "") + a for j, a in enumerate(resp)], "\n********"]
        probs = [0.9, *[0.3 if w else 0.8 for w in wrong], 0.9]
        records.append(make_record(texts, probs))
        refs.append(" ".join(atoms))
    gens, data = frames(records, refs)
    units = score_generations(gens, data, "dna")
    metrics = compute_metrics(units, settings=MetricsConfig(n_bootstrap=50), seed=1)
    atom = metrics.filter(pl.col("granularity") == "atom")
    auroc = atom.filter(
        (pl.col("metric") == "auroc_pooled")
        & (pl.col("confidence") == "mean_probability")
        & (pl.col("flavour") == "full")
    )
    assert auroc["value"].item() == pytest.approx(1.0)
    perplexity = atom.filter(
        (pl.col("metric") == "auroc_pooled")
        & (pl.col("confidence") == "perplexity")
        & (pl.col("flavour") == "full")
    )
    assert perplexity["value"].item() == pytest.approx(1.0)  # oriented: lower perplexity = confident
    ece_rows = atom.filter(pl.col("metric") == "ece")
    assert set(ece_rows["calibration"].to_list()) >= {
        "zscore_sigmoid",
        "platt",
        "isotonic",
        "histogram",
        "none",
    }
    assert ece_rows.filter(pl.col("calibration") == "none")["confidence"].unique().sort().to_list() == sorted(
        ["ccp", "max_probability", "mean_probability", "median_probability"]  # the probabilities
    )
    acc = response_accuracy(units).filter(pl.col("granularity") == "atom")
    expected = (
        units.filter(pl.col("granularity") == "atom").group_by("sample_id").agg(pl.col("is_correct").mean())
    )
    assert acc["precision"].mean() == pytest.approx(expected["is_correct"].mean())
    prec = atom.filter(pl.col("metric") == "precision")
    assert prec["ci_low"].item() <= prec["value"].item() <= prec["ci_high"].item()
    assert not math.isnan(prec["ci_low"].item())


def test_a_reasoning_models_units_come_from_its_answer_and_each_response_has_a_status():
    """The scoring stage with a reasoning format (docs/reasoning.md §2): the thinking, which quotes the
    fence and the answer, yields no unit; a trace cut inside its thinking has no unit and is truncated; the
    tokens before the final content are counted as reasoning tokens."""
    import dataclasses
    import re

    from helpers.reasoning_corpus import QWEN3_THINKING, REFERENCE

    def record(text: str, finish: str) -> GenerationRecord:
        pieces = re.findall(r"\s*\S+|\s+", text)  # one token per word with its leading whitespace
        return dataclasses.replace(make_record(pieces, [0.9] * len(pieces)), finish_reason=finish)

    cut = QWEN3_THINKING[: QWEN3_THINKING.index("</think>")]
    gens, data = frames([record(QWEN3_THINKING, "eos"), record(cut, "length")], [REFERENCE, REFERENCE])
    units = score_generations(gens, data, "dna", reasoning="think", fence_rule="line")
    per_response = units.unique("sample_id", maintain_order=True)
    assert per_response["answer_status"].cast(pl.String).to_list() == ["answered", "truncated"]
    assert per_response["finish_reason"].cast(pl.String).to_list() == ["eos", "length"]
    generated = per_response["num_generated_tokens"].to_list()
    thinking = per_response["num_reasoning_tokens"].to_list()
    assert thinking[1] == generated[1] and 0 < thinking[0] < generated[0]
    answered = units.filter((pl.col("sample_id") == "s0") & (pl.col("granularity") == "atom"))
    assert answered["status"].cast(pl.String).to_list() == ["correct", "correct"]
    assert (answered["span_start"] > QWEN3_THINKING.index("</think>")).all()
    cut_units = units.filter(pl.col("sample_id") == "s1")
    assert set(cut_units["status"].cast(pl.String).to_list()) == {"missing"}


def test_every_family_of_the_corpus_through_the_scoring_stage():
    """The reasoning corpus (tests/helpers/reasoning_corpus.py) through ``score_generations``: each response's
    status is the corpus's, and its atoms — never from the thinking — give the corpus's precision."""
    import dataclasses
    import re

    from helpers.reasoning_corpus import CASES, REFERENCE

    from saltbench.evaluation import final_content

    for case in CASES:
        pieces = re.findall(r"\s*\S+|\s+", case.text)
        if case.finish_reason == "error":
            record = GenerationRecord.failed("refused", num_prompt_tokens=3)
        else:
            record = dataclasses.replace(
                make_record(pieces, [0.9] * len(pieces)), finish_reason=case.finish_reason
            )
        gens, data = frames([record], [REFERENCE])
        units = score_generations(gens, data, "dna", reasoning=case.reasoning, fence_rule="line")
        assert units["answer_status"].cast(pl.String).unique().to_list() == [case.status], case.family
        atoms = units.filter(pl.col("granularity") == "atom")
        produced = atoms.filter(pl.col("span_start").is_not_null())
        precision = produced["is_correct"].mean() if produced.height else 0.0
        assert precision == pytest.approx(case.precision), case.family
        content = final_content(case.text, case.reasoning)
        assert content is not None or produced.height == 0
        assert (produced["span_start"] >= (content[0] if content else 0)).all(), case.family
