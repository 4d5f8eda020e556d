"""The cost plan (saltbench.stages.cost, docs/backends.md §8.3) states the extra tokens of the draws and of
the second pass beside the greedy requests."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from saltbench.config import resolve_config
from saltbench.evaluation import VERBALIZED_BUDGET
from saltbench.stages import cost
from saltbench.tasks import get_task


@pytest.fixture()
def settings(repo_root: Path, monkeypatch):
    """config/test.yaml (SmolLM2 run locally, 3 samples of dna and matmul, budget 24) with 3 draws."""
    monkeypatch.chdir(repo_root)
    config = yaml.safe_load((repo_root / "config" / "test.yaml").read_text(encoding="utf-8"))
    config["inference"]["samples"] = {"n": 3}
    return resolve_config(config)


def test_draws_cost_n_times_the_budget_then_n_times_the_greedy_tokens(settings, tmp_path):
    plan = cost.estimate(settings, tmp_path)
    assert {(e.style, e.task) for e in plan} == {("direct", "dna"), ("direct", "matmul")}
    for e in plan:
        assert e.draw_requests == e.requests == 3 and e.draw_prompt_tokens == e.prompt_tokens > 0
        assert e.draw_completion_tokens == 3 * e.max_completion_tokens and not e.draw_tokens_known
        assert e.cost is None and e.second_pass_requests == 0  # a local model: tokens, no price
    folder = tmp_path / "smollm2-135m" / "direct"
    folder.mkdir(parents=True)
    pl.DataFrame({"num_generated_tokens": [5, 7, 9]}).write_parquet(folder / "dna.parquet")
    dna = next(e for e in cost.estimate(settings, tmp_path) if e.task == "dna")
    assert dna.draw_completion_tokens == 3 * (5 + 7 + 9) and dna.draw_tokens_known
    table = cost.report(plan)
    assert "| **smollm2-135m** |  |  | 6 | ~1," in table and "| 6, ~1," in table


def test_without_draws_nothing_extra_is_planned(settings, tmp_path):
    plain = replace(
        settings, inference=replace(settings.inference, samples=replace(settings.inference.samples, n=0))
    )
    for e in cost.estimate(plain, tmp_path):
        assert e.draw_requests == e.draw_prompt_tokens == e.draw_completion_tokens == 0


def test_the_second_pass_asks_once_per_unit_and_kind():
    rows = get_task("dna").generate(4, 3, min_codons=3, max_codons=6)
    prompts = ["p" * 40] * rows.height

    def count(text: str) -> int:
        return len(text)

    tokens = cost._second_pass_tokens(
        rows, "dna", prompts, count, ("verbalized", "p_true"), ("generation", "line")
    )
    lines = np.asarray([len([x for x in r.strip().splitlines() if x.strip()]) for r in rows["reference"]])
    asked = int((1 + lines).sum())
    assert tokens["second_pass_requests"] == 2 * asked
    assert tokens["second_pass_completion_tokens"] == asked * (VERBALIZED_BUDGET + 1)
    scored = (1 + lines) * np.asarray([40 + len(r) for r in rows["reference"]])
    assert tokens["second_pass_prompt_tokens"] == 2 * int(scored.sum())
