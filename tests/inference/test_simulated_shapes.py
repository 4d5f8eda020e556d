"""Answer shapes of the simulated model (saltbench.inference.simulated.shapes; docs/simulation.md §6.1): an
inserted, a deleted and a reordered atom or line read back by the evaluation as planted, at their rates."""

from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saltbench.analysis import wilson_interval
from saltbench.evaluation import decompose_clean, evaluate, resolve_task, response_status
from saltbench.inference.backends import load_backend
from saltbench.inference.registry import ModelSpec
from saltbench.inference.simulated import SimulationParams
from saltbench.inference.simulated.answers import _rng
from saltbench.inference.simulated.shapes import SHAPES, draw_shapes, reshape
from saltbench.inference.sources import SimulatedSource
from saltbench.stages.generation import build_prompts
from saltbench.tasks import get_task

DNA = resolve_task(get_task("dna"))
codon = st.text("ACGT", min_size=3, max_size=3)
lines = st.lists(st.lists(codon, min_size=1, max_size=4), min_size=1, max_size=4)


def atoms(text: str) -> list[str]:
    return decompose_clean(text, DNA, "atom")[0]


@settings(max_examples=150, deadline=None)
@given(lines, st.sampled_from(SHAPES), st.integers(0, 2**32 - 1))
def test_an_edit_moves_the_atoms_as_planned_and_carries_each_characters_probability(rows, shape, seed):
    text = "\n".join(" ".join(row) for row in rows)
    probs = np.random.default_rng(seed).random(len(text))
    out, out_probs = reshape(text, probs, DNA, (shape,), np.random.default_rng(seed))
    before, after = atoms(text), atoms(out)
    assert len(out_probs) == len(out)
    if len(before) == 1:
        assert (out, out_probs.tolist()) == (text, probs.tolist())
    elif shape == "reorder":
        assert sorted(after) == sorted(before) and Counter(zip(out, out_probs)) == Counter(zip(text, probs))
    else:
        grown = Counter(after) - Counter(before) if shape == "insertion" else Counter(before) - Counter(after)
        assert len(after) == len(before) + (1 if shape == "insertion" else -1)
        assert sum(grown.values()) == 1
    pairs = Counter(zip(text, probs))
    assert all(pairs[pair] > 0 for pair in zip(out, out_probs))  # each character keeps its probability


def test_two_lines_swap_before_two_atoms_do():
    text = "TCT CGA\nAAA"
    out, _ = reshape(text, np.ones(len(text)), DNA, ("reorder",), np.random.default_rng(0))
    assert out == "AAA\nTCT CGA"


@settings(max_examples=50, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.integers(0, 2**32 - 1))
def test_a_shape_is_drawn_below_its_rate_and_a_rate_moves_no_other_shapes_draw(a, b, c, seed):
    rates = dict(zip(SHAPES, (a, b, c), strict=True))
    draws = np.random.default_rng(seed).random(3)
    assert draw_shapes(rates, np.random.default_rng(seed)) == tuple(
        s for s, u in zip(SHAPES, draws, strict=True) if u < rates[s]
    )


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("datasets")
    get_task("kronecker").generate(60, 3).write_parquet(folder / "kronecker.parquet")
    get_task("dna").generate(60, 4, min_codons=4, max_codons=8).write_parquet(folder / "dna.parquet")
    return folder


def test_the_simulated_model_answers_with_its_planted_shapes_at_their_rates(datasets):
    """Every response is still answered; its atoms move by exactly its drawn insertion and deletion, and a
    reordered one differs from the reference's order; over 120 responses each shape's share lies in the
    99.9 % Wilson interval around its rate."""
    rates = {"insertion": 0.3, "deletion": 0.2, "reorder": 0.4}
    params = SimulationParams(seed=7, accuracy=0.999, **{f"{s}_rate": r for s, r in rates.items()})
    spec = ModelSpec(
        name="sim", source=SimulatedSource(parameters=params), backend="simulated", chat_template="none"
    )
    model = load_backend(datasets, spec)
    drawn: Counter[str] = Counter()
    for task in ("kronecker", "dna"):
        rows = pl.read_parquet(datasets / f"{task}.parquet")
        prompts = build_prompts(rows, "direct", None)
        records = model.generate(prompts, [4096] * len(prompts))
        for prompt, record, row in zip(prompts, records, rows.iter_rows(named=True), strict=True):
            shapes = draw_shapes(params.shape_rates, _rng(params.seed, "shapes", prompt))
            drawn.update(shapes)
            ev = evaluate(record.text, row["reference"], task, fence_rule="line")
            assert response_status(record.text, record.finish_reason, fence_rule="line") == "answered"
            delta = ("insertion" in shapes) - ("deletion" in shapes)
            assert len(ev.response_units) == len(ev.reference_units) + delta, (shapes, record.text)
            if shapes == ("reorder",) and len(set(ev.reference_units)) == len(ev.reference_units):
                assert ev.response_units != ev.reference_units
    low, high = wilson_interval(np.array([drawn[s] for s in SHAPES]), np.full(3, 120), z=3.29)
    assert np.all((low <= list(rates.values())) & (np.array(list(rates.values())) <= high)), drawn
