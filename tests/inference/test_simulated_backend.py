"""The ``simulated`` backend (docs/simulation.md): it answers as planted, scores as planted, and writes what a
real backend writes."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from helpers.simulated_run import simulated_model

from saltbench.analysis import wilson_interval
from saltbench.evaluation import evaluate, response_status
from saltbench.inference import GenerationRecord, load_model_registry
from saltbench.inference.backends import load_backend
from saltbench.inference.base import DrawSettings
from saltbench.inference.registry import ModelSpec, parse_model_registry
from saltbench.inference.simulated import (
    EOS_ID,
    TRACE_TAGS,
    SimulationParams,
    atom_chain,
    planted_logit,
    planted_thinking,
    trace_length_cdf,
)
from saltbench.inference.simulated.answers import wrong_atom
from saltbench.inference.simulated.thinking import draw_trace_length, trace_text
from saltbench.inference.sources import SimulatedSource
from saltbench.stages.generation import build_prompts, generate_rows
from saltbench.stages.scoring import response_columns
from saltbench.tasks import get_task

TASKS = {
    "dna": {"min_codons": 4, "max_codons": 12},
    "logic": {"num_variables": [6]},
    "matmul": {"output_lengths": [9]},
    "code": {},
    "words": {"min_words": 12, "max_words": 20, "min_needles": 2, "subjects": ["numbers"]},
}


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("datasets")
    for task, params in TASKS.items():
        get_task(task).generate(12, 3, **params).write_parquet(folder / f"{task}.parquet")
    return folder


simulated = simulated_model


def prompts_of(folder: Path, task: str, style: str) -> tuple[list[str], pl.DataFrame]:
    rows = pl.read_parquet(folder / f"{task}.parquet")
    return build_prompts(rows, style, None), rows


def test_answers_score_exactly_as_planted(datasets):
    model = simulated(datasets, seed=4)
    checked = 0
    for task in TASKS:
        for style in ("direct", "cot"):
            prompts, rows = prompts_of(datasets, task, style)
            for prompt, record, row in zip(
                prompts,
                model.generate(prompts, [4096] * len(prompts)),
                rows.iter_rows(named=True),
                strict=True,
            ):
                plan = model.plan(prompt)
                ev = evaluate(record.text, row["reference"], task, variant=row["variant"], fence_rule="line")
                assert [c.status == "correct" for c in ev.comparisons] == plan.correct.tolist(), record.text
                assert record.finish_reason == "eos" and record.token_ids[-1] == EOS_ID
                checked += 1
    assert checked == 12 * len(TASKS) * 2


def test_tokens_offsets_and_log_probabilities_are_those_of_a_real_record(datasets):
    model = simulated(datasets, seed=1)
    prompts, _ = prompts_of(datasets, "dna", "direct")
    record: GenerationRecord = model.generate(prompts[:1], [4096])[0]
    assert "".join(record.token_texts) == record.text
    assert record.token_offsets.tolist() == np.cumsum([0, *map(len, record.token_texts[:-1])]).tolist()
    assert record.topk_ids.shape == (len(record.token_ids), 20)
    assert (record.topk_ids[:, 0] == record.token_ids).all()
    assert (
        record.topk_logprobs[:, 0] == record.chosen_logprobs
    ).all()  # greedy: the chosen is the most likely
    assert (np.diff(record.topk_logprobs, axis=1) <= 0).all()
    total = np.exp(record.topk_logprobs.astype(np.float64)).sum(axis=1)
    assert np.allclose(total, 1.0, atol=1e-5)
    assert model.tokenizer.decode(record.token_ids.tolist(), skip_special_tokens=True) == record.text


def test_a_response_depends_on_its_prompt_and_seed_only(datasets):
    model = simulated(datasets, seed=2)
    prompts, _ = prompts_of(datasets, "logic", "direct")
    alone = [model.generate([p], [4096])[0].text for p in prompts]
    together = [r.text for r in model.generate(prompts[::-1], [4096] * len(prompts))][::-1]
    assert alone == together
    other = [r.text for r in simulated(datasets, seed=3).generate(prompts, [4096] * len(prompts))]
    assert other != alone


def test_draws_are_the_planted_process_run_again_from_their_own_seeds(datasets):
    """Draw d of a prompt is a response of the same process from the draw's seed: the same seed gives the
    same draws bit for bit, whatever the prompts beside it; another prompt seed gives other draws."""
    model = simulated(datasets, seed=2)
    prompts, _ = prompts_of(datasets, "logic", "direct")
    settings = DrawSettings(4)
    drawn = model.sample(prompts, [4096] * len(prompts), list(range(len(prompts))), settings)
    alone = model.sample(prompts[-1:], [4096], [len(prompts) - 1], settings)[0]
    assert [r.text for r in alone] == [r.text for r in drawn[-1]]
    assert all(np.array_equal(a.chosen_logprobs, b.chosen_logprobs) for a, b in zip(alone, drawn[-1]))
    texts = [r.text for draws in drawn for r in draws]
    assert len(set(texts)) > len(prompts)  # draws of one prompt differ
    other = model.sample(prompts, [4096] * len(prompts), [s + 100 for s in range(len(prompts))], settings)
    assert [r.text for draws in other for r in draws] != texts


def reasoner(folder: Path, **params: object) -> object:
    """A simulated model with ``reasoning_format: think`` and a trace before every answer."""
    spec = ModelSpec(
        name="sim",
        backend="simulated",
        chat_template="none",
        reasoning=True,
        reasoning_format="think",
        source=SimulatedSource(parameters=SimulationParams(reasoning_rate=1.0, **params)),
    )
    return load_backend(folder, spec)


def test_shapes_at_their_rates_reach_the_response_statuses(datasets):
    model = reasoner(
        datasets,
        seed=5,
        truncation_rate=0.3,
        no_fence_rate=0.2,
        reasoning_tokens=40,
        reasoning_truncation_rate=0.2,
    )
    statuses = []
    for task in TASKS:
        prompts, _ = prompts_of(datasets, task, "direct")
        for prompt, record in zip(prompts, model.generate(prompts, [4096] * len(prompts)), strict=True):
            plan = model.plan(prompt)
            status = response_status(record.text, record.finish_reason, reasoning="think", fence_rule="line")
            assert record.text.startswith("<think>\nI must print '********'")  # the trace quotes the fence
            shape = "truncated" if plan.trace_length is None else plan.shape  # cut inside the thinking
            expected = {"answered": "answered", "truncated": "truncated", "no_fence": "no_fence"}[shape]
            assert status == expected, (shape, record.text[-120:])
            if plan.trace_length is None:
                assert len(record.token_ids) == 4096 and "</think>" not in record.text
            statuses.append(status)
    assert {"answered", "truncated", "no_fence"} <= set(statuses)


def test_trace_lengths_and_cuts_inside_the_thinking_read_back_as_planted(datasets):
    """The scoring stage counts every planted trace length exactly; the cut share and the mean length of the
    traces that end come out within their 95 % intervals (seeded)."""
    params = {
        "seed": 7,
        "reasoning_tokens": 120,
        "reasoning_tokens_sd": 60.0,
        "reasoning_truncation_rate": 0.2,
    }
    model, budget = reasoner(datasets, **params), 200
    cut_share, mean_length = planted_thinking(SimulationParams(reasoning_rate=1.0, **params), budget)
    cut, ended = [], []
    for task in TASKS:
        for style in ("direct", "cot"):
            prompts, rows = prompts_of(datasets, task, style)
            gens = generate_rows(
                model, rows, model_name="sim", style=style, n_shots=None, max_new_tokens=budget
            )
            status, _, generated, thinking = response_columns(gens, reasoning="think", fence_rule="line")
            for prompt, *counts in zip(prompts, status, generated, thinking, strict=True):
                length = model.plan(prompt).trace_length
                if length is None or length >= budget:  # no token left for the answer
                    assert counts == ["truncated", budget, budget]
                else:
                    assert counts[2] == length  # the planted length, every tag counted
                cut.append(length is None or length >= budget)
                ended += [] if cut[-1] else [counts[2]]
    low, high = wilson_interval(np.array([sum(cut)]), np.array([len(cut)]))
    assert low[0] <= cut_share <= high[0] and 0 < sum(cut) < len(cut)
    half = 1.96 * np.std(ended, ddof=1) / np.sqrt(len(ended))
    assert abs(np.mean(ended) - mean_length) <= half


def test_trace_lengths_follow_their_planted_distribution():
    params = SimulationParams(reasoning_rate=1.0, reasoning_tokens=300, reasoning_tokens_sd=100.0)
    rng = np.random.default_rng(0)
    lengths = np.array([draw_trace_length(params, rng) for _ in range(20000)])
    assert lengths.min() >= TRACE_TAGS and abs(lengths.mean() - 300) < 3 * 100 / np.sqrt(20000)
    grid = np.arange(TRACE_TAGS, 1000)
    empirical = np.searchsorted(np.sort(lengths), grid, side="right") / len(lengths)
    assert np.abs(empirical - trace_length_cdf(params, grid)).max() < 0.012  # Kolmogorov–Smirnov, 1 %
    fixed = SimulationParams(reasoning_tokens=300)
    assert {draw_trace_length(fixed, rng) for _ in range(50)} == {300}
    assert planted_thinking(fixed, 300) == (1.0, pytest.approx(float("nan"), nan_ok=True))
    assert planted_thinking(fixed, 301) == (0.0, 300.0)
    assert [len(trace_text(n)) for n in (17, 18, 300)] == [17, 18, 300]


def test_a_budget_cuts_the_response(datasets):
    model = simulated(datasets, seed=1)
    prompts, _ = prompts_of(datasets, "dna", "direct")
    record = model.generate(prompts[:1], [10])[0]
    assert record.finish_reason == "length" and len(record.token_ids) == 10


def test_a_forced_prefix_acts_through_the_planted_terms(datasets):
    params = SimulationParams(
        seed=0,
        accuracy={"default": 0.8},
        position_effect=-0.5,
        propagation_fraction=-2.0,
        propagation_local=-1.0,
    )
    model = simulated(datasets, **params.__dict__)
    prompts, rows = prompts_of(datasets, "dna", "direct")
    prompt, reference = prompts[0], rows["reference"][0]
    atoms = reference.split()
    n, k = len(atoms), 4
    corrupted = [*atoms[: k - 2], wrong_atom(atoms[k - 2], __import__("random").Random(0))]  # atom k-1 wrong
    prefix = "********\n" + " ".join(corrupted) + " "
    target = atoms[k - 1]
    encode = model.tokenizer.encode
    out = model.force_and_continue(encode(prompt), [(encode(prefix), encode(target))], max_new_tokens=200)[0]
    eta = params.base_logit("dna", "direct") - 0.5 * k / n - 2.0 * 1 / (k - 1) - 1.0
    assert out.target_logprobs.sum() == pytest.approx(-np.log1p(np.exp(-eta)), rel=1e-5)
    assert out.generation.text.endswith("********") and out.finish_reason == "eos"
    assert len(out.generation.text.split("\n")[0].split()) == n - k + 1  # atoms k..n, then the fence


@pytest.mark.parametrize("task", TASKS)
def test_every_task_continues_a_forced_prefix_of_its_own_atoms(datasets, task):
    model = simulated(datasets, seed=3)
    prompts, rows = prompts_of(datasets, task, "direct")
    reference = rows["reference"][0].strip()
    half = reference[: len(reference) // 2]
    encode = model.tokenizer.encode
    out = model.force_and_continue(
        encode(prompts[0]), [(encode("********\n" + half), encode("x"))], max_new_tokens=4000
    )[0]
    assert out.finish_reason == "eos" and out.generation.text.endswith("********")


def test_the_chain_matches_its_formula():
    params = SimulationParams(
        accuracy={"default": 0.7}, position_effect=-1.0, propagation_fraction=-1.5, propagation_local=-0.5
    )
    prefix = np.array([[True, False, True]])
    _, p = atom_chain(params, "dna", "direct", 6, np.full((1, 3), 0.999), prefix)  # atoms 4..6, all wrong
    etas = [
        params.base_logit("dna", "direct") - 4 / 6 - 1.5 * 2 / 3 - 0.5,
        params.base_logit("dna", "direct") - 5 / 6 - 1.5 * 3 / 4 - 0.5,
        params.base_logit("dna", "direct") - 6 / 6 - 1.5 * 4 / 5 - 0.5,
    ]
    assert p[0] == pytest.approx(1 / (1 + np.exp(-np.array(etas))))
    logit = planted_logit(params, "dna", "direct", np.array([4, 5, 6]) / 6, [2 / 3, 3 / 4, 4 / 5], [1, 1, 1])
    assert logit == pytest.approx(np.array(etas))


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"acuracy": 0.9}, "parameters: unknown key(s) 'acuracy'; allowed: accuracy, "),
        ({"accuracy": 1.2}, "parameters.accuracy: 1.2 is greater than or equal to the maximum of 1"),
        ({"accuracy": {"dna": 0}}, "parameters.accuracy.dna: 0 is less than or equal to the minimum of 0"),
        ({"truncation_rate": -0.1}, "parameters.truncation_rate: -0.1 is less than the minimum of 0"),
        ({"cot": {"accuracy": 1}}, "parameters.cot: unknown key(s) 'accuracy'; allowed: accuracy_shift, "),
        (
            {"seed": 1.5},
            "parameters.seed: 1.5 is not of type 'integer' (a float; a whole number is required)",
        ),
        (
            {"truncation_rate": 0.6, "no_fence_rate": 0.5},
            "parameters: truncation_rate + no_fence_rate exceed 1",
        ),
        ({"reasoning_tokens": 16}, "parameters.reasoning_tokens: 16 is less than the minimum of 17"),
        (
            {"repeat_correct": 0.5},
            "parameters: repeat_correct and repeat_wrong are set together (or neither)",
        ),
        (
            {"second_pass": {"verbalized_step": 0}},
            "parameters.second_pass.verbalized_step: 0 is less than the minimum of 1",
        ),
        (
            {"reasoning_tokens": 17, "reasoning_tokens_sd": 5},
            "parameters: reasoning_tokens_sd > 0 needs reasoning_tokens above 17",
        ),
    ],
)
def test_bad_parameters_are_refused_by_name(raw, message):
    entry = {"source": {"kind": "simulated", "parameters": raw}, "backend": "simulated"}
    with pytest.raises(ValueError, match="models.sim.source." + __import__("re").escape(message)):
        parse_model_registry({"models": {"sim": entry}})


def test_the_registry_reads_a_simulated_entry_and_refuses_a_mismatched_backend(tmp_path):
    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n  sim:\n    source: {kind: simulated, parameters: {seed: 3, accuracy: {dna: 0.7}}}\n"
        "    backend: simulated\n    chat_template: none\n"
    )
    spec = load_model_registry(registry)["sim"]
    assert spec.source.parameters.seed == 3 and spec.source.parameters.base_logit(
        "dna", "direct"
    ) == pytest.approx(np.log(0.7 / 0.3))
    registry.write_text(
        "models:\n  sim:\n    source: {kind: simulated, parameters: {sed: 3}}\n    backend: simulated\n"
    )
    with pytest.raises(ValueError, match=r"models\.sim\.source\.parameters: unknown key\(s\) 'sed'"):
        load_model_registry(registry)
    registry.write_text("models:\n  sim:\n    source: {kind: simulated}\n")
    with pytest.raises(ValueError, match="needs backend: simulated"):
        load_model_registry(registry)


def test_the_planted_atom_auroc_is_the_normal_separation():
    assert SimulationParams(separation=0.0).planted_atom_auroc("direct") == pytest.approx(0.5)
    assert SimulationParams(separation=1.5).planted_atom_auroc("direct") == pytest.approx(0.855578, abs=1e-6)
    assert replace(SimulationParams(), separation=1.5).planted_atom_auroc("cot") == pytest.approx(
        0.760250, abs=1e-6
    )


def test_a_character_of_several_bytes_belongs_to_the_token_that_completes_it():
    from saltbench.inference.simulated.answers import build_tokenizer, token_scores

    scores, texts = token_scores("é a", np.full(4, 0.9), True, build_tokenizer())
    assert texts == ("", "é", " ", "a", "") and len(scores) == 5
    assert scores.token_ids.tolist() == [*"é a".encode(), EOS_ID]


def test_the_simulated_backend_passes_the_backend_conformance_checks(datasets):
    """The backend conformance check (docs/extending.md §9) on the simulated backend, given prompts it can
    answer (its dataset rows'): every check passes."""
    from saltbench.conformance import backend_failures

    spec = ModelSpec(
        name="sim",
        source=SimulatedSource(parameters=SimulationParams(seed=2)),
        backend="simulated",
        chat_template="none",
    )
    prompts, _ = prompts_of(datasets, "dna", "direct")
    assert backend_failures(spec, datasets, instructions=prompts[:2], budget=64) == []


def test_a_line_latent_gives_every_character_of_a_line_one_probability(datasets):
    plain, lined = simulated(datasets, seed=6), simulated(datasets, seed=6, line_separation=2.0)
    prompts, rows = prompts_of(datasets, "matmul", "direct")
    for prompt, row, record, before in zip(
        prompts,
        rows.iter_rows(named=True),
        lined.generate(prompts, [4096] * len(prompts)),
        plain.generate(prompts, [4096] * len(prompts)),
        strict=True,
    ):
        assert record.text == before.text  # the same atoms: only the confidences move
        plan = lined.plan(prompt)
        ev = evaluate(record.text, row["reference"], "matmul", fence_rule="line", granularity="line")
        probs = np.exp(record.chosen_logprobs.astype(np.float64))  # a token per character
        for start, end in ev.response_unit_spans:
            assert np.ptp(probs[start:end]) < 1e-6, (record.text, start, end)  # separators inside too
        assert {round(float(probs[start]), 5) for start, _ in ev.response_unit_spans} <= {
            round(float(p), 5) for p in plan.probs
        }
        between = [i for i, c in enumerate(record.text) if c == "\n" and 0 < i < len(record.text) - 12]
        assert all(probs[i] > 0.99 for i in between)  # line breaks stay certain
