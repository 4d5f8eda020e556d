"""The second pass (docs/confidence.md §8): questions about the units of the greedy answers, exactly the units
table's; replies generated through a backend and read into values and statuses; the join into the units; the
statuses counted in generation health; a rerun asks only what no kept table holds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
import pytest

from saltbench.analysis import generation_health
from saltbench.config import InferenceConfig
from saltbench.core.contracts import SECOND_PASS
from saltbench.core.vocabulary import SECOND_PASS_STATUSES
from saltbench.inference import load_model_registry
from saltbench.inference.backends import load_backend
from saltbench.inference.records import GenerationRecord, TokenScores
from saltbench.inference.registry import ModelSpec
from saltbench.inference.simulated.params import SimulationParams
from saltbench.inference.sources import SimulatedSource
from saltbench.io import provenance, read_table, write_table
from saltbench.stages.generation import generate_rows, load_generator
from saltbench.stages.scoring import score_generations
from saltbench.stages.second_pass import (
    SecondPassFile,
    SecondPassPlan,
    UnitSettings,
    ask_second_pass,
    join_second_pass,
    second_pass_model,
    second_pass_questions,
)
from saltbench.tasks import get_task
from saltbench.workflow.kept import keep_output, restore_output

TASKS = {"matmul": {"output_lengths": [4]}, "logic": {"num_variables": [6]}}
PLAN = SecondPassPlan(("verbalized", "p_true"), ("atom", "line", "generation"), atom_max=4)
UNITS = UnitSettings(fence_rule="line")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The datasets of TASKS and the simulated model's greedy generations of them (direct style)."""
    root = tmp_path_factory.mktemp("second-pass")
    (root / "datasets").mkdir()
    spec = ModelSpec(
        name="sim",
        source=SimulatedSource(parameters=SimulationParams(seed=3)),
        backend="simulated",
        chat_template="none",
    )
    for task, params in TASKS.items():
        dataset = get_task(task).generate(10, 5, **params)
        write_table(dataset, root / "datasets" / f"{task}.parquet", provenance(stage="datasets"), "dataset")
    model = load_backend(root / "datasets", spec)
    for task in TASKS:
        rows = pl.read_parquet(root / "datasets" / f"{task}.parquet")
        frame = generate_rows(
            model, rows, model_name="sim", style="direct", n_shots=None, max_new_tokens=96, progress=False
        )
        write_table(
            frame, root / f"{task}.generations.parquet", provenance(stage="generations"), "generations"
        )
    return root


def _inputs(folder: Path, task: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    return (
        read_table(folder / f"{task}.generations.parquet", "generations"),
        read_table(folder / "datasets" / f"{task}.parquet", "dataset"),
    )


@pytest.mark.parametrize("task", list(TASKS))
def test_the_questions_are_the_units_tables_units_of_answered_responses(folder, task):
    generations, dataset = _inputs(folder, task)
    questions = second_pass_questions(
        generations, dataset, task, style="direct", n_shots=None, plan=PLAN, units=UNITS
    )
    units = score_generations(generations, dataset, task, fence_rule="line", flavours=["topk"])
    keys = ["sample_id", "granularity", "unit_index"]
    matched = questions.join(units, on=keys, how="left", validate="1:1")
    assert matched["status"].null_count() == 0  # every question is a unit of the units table
    assert (matched["unit"] == matched["response_unit"]).all()
    answered = units.filter(pl.col("answer_status") == "answered", pl.col("response_unit").is_not_null())
    atoms = answered.filter(pl.col("granularity") == "atom").group_by("sample_id").len()
    few = set(atoms.filter(pl.col("len") <= PLAN.atom_max)["sample_id"])
    expected = answered.filter((pl.col("granularity") != "atom") | pl.col("sample_id").is_in(few))
    assert questions.height == expected.height > 0
    assert set(questions["sample_id"]) == set(answered["sample_id"])
    assert questions.filter(pl.col("granularity") == "generation")["unit"].to_list() == (
        questions.filter(pl.col("granularity") == "generation")["answer"].to_list()
    )
    if task == "matmul":  # 4 atoms each: asked per atom
        assert (questions["granularity"] == "atom").sum() > 0


class WordTokenizer:
    """A word-level tokenizer whose vocabulary spells True and False as single tokens."""

    VOCABULARY: ClassVar[tuple[str, ...]] = (
        " True",
        "False",
        "true",
        "Maybe",
        "85",
        "about 80",
        "150",
        "<e>",
    )

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.VOCABULARY[i] for i in ids)


@dataclass
class ScriptedModel:
    """A loaded model whose replies are set in advance, token by token (``(text, candidates)`` per reply:
    the first token's top-k ids and probabilities), kept with the budgets it was asked for."""

    replies: list[tuple[str, dict[int, float]]]
    tokenizer: Any = WordTokenizer()
    budgets: list[int] | None = None

    def render(self, instructions: Sequence[str]) -> list[str]:
        return [f"<user>{text}" for text in instructions]

    def generate(self, prompts: Sequence[str], budgets: Sequence[int], *, progress: bool = True):
        self.budgets = list(budgets)
        return [self._record(*self.replies[i % len(self.replies)]) for i in range(len(prompts))]

    def _record(self, text: str, candidates: dict[int, float]) -> GenerationRecord:
        if not text:
            return GenerationRecord.failed("prompt too long", num_prompt_tokens=600)
        first = WordTokenizer.VOCABULARY.index(text)
        ids = np.array(list(candidates) or [first], np.int32)[None, :]
        logprobs = np.log(np.array(list(candidates.values()) or [1.0], np.float32))[None, :]
        chosen = np.log(np.float32(candidates.get(first, 1.0)))
        scores = TokenScores(
            np.array([first], np.int32), np.array([chosen]), ids, logprobs, np.zeros(1, np.float32)
        )
        return GenerationRecord.from_scores(scores, [text], finish_reason="eos", num_prompt_tokens=40)


def test_every_reply_gets_a_value_or_a_status_of_its_own(folder):
    generations, dataset = _inputs(folder, "logic")
    plan = SecondPassPlan(("verbalized", "p_true"), ("generation",))
    questions = second_pass_questions(
        generations, dataset, "logic", style="direct", n_shots=None, plan=plan, units=UNITS
    ).head(5)
    replies = [  # (verbalized, p_true) of each question in turn
        ("85", {}),
        (" True", {0: 0.6, 1: 0.2, 3: 0.2}),
        ("about 80", {}),
        ("Maybe", {3: 0.9, 4: 0.1}),
        ("150", {}),
        ("", {}),
        ("", {}),
        ("true", {2: 0.3, 1: 0.1}),
        ("False", {}),
        ("False", {1: 0.5, 0: 0.5}),
    ]
    model = ScriptedModel(replies)
    table = ask_second_pass(model, questions, plan.kinds)  # type: ignore[arg-type]
    SECOND_PASS.validate(table, "second pass")
    assert model.budgets == [8, 1] * 5
    assert table["kind"].to_list() == ["verbalized", "p_true"] * 5
    assert table["status"].to_list() == [
        "ok", "ok", "unparsable", "no_true_false", "out_of_range", "empty", "empty", "ok", "unparsable", "ok",
    ]  # fmt: skip
    values = table["value"].to_list()
    assert values[0] == 0.85 and values[1] == pytest.approx(0.75) and values[7] == pytest.approx(0.75)
    assert values[9] == pytest.approx(0.5) and all(math.isnan(v) for v in values[2:7] + values[8:9])
    assert table["sample_id"].to_list()[::2] == questions["sample_id"].to_list()

    # the statuses in generation health: every reply counted, the unparsable ones among them
    units = score_generations(generations, dataset, "logic", fence_rule="line", flavours=["topk"])
    cell = {"model": pl.lit("m"), "style": pl.lit("direct"), "task": pl.lit("logic")}
    health = generation_health(units.with_columns(**cell), second_pass=table.with_columns(**cell)).row(
        0, named=True
    )
    assert health["second_pass_replies"] == 10 and health["second_pass_unparsable"] == 2
    assert [health[f"second_pass_{s}"] for s in SECOND_PASS_STATUSES] == [4, 2, 2, 1, 1]
    silent = generation_health(units.with_columns(**cell)).row(0, named=True)
    assert silent["second_pass_replies"] == 0  # no second pass: counts 0, no missing column

    # the join: the value where the reply is ok, NaN where it is not or the unit was not asked
    joined = join_second_pass(units, table, plan.kinds)
    assert joined.height == units.height and joined.columns[: units.width] == units.columns
    asked = joined.join(questions.select("sample_id", "granularity", "unit_index"), on=["sample_id",
                        "granularity", "unit_index"], how="semi")  # fmt: skip
    assert asked.height == 5
    assert asked["second_pass.verbalized"].to_list()[0] == 0.85
    assert int(asked["second_pass.p_true"].is_nan().sum()) == 2
    others = joined.filter(pl.col("granularity") != "generation")
    assert others["second_pass.verbalized"].is_nan().all() and others["second_pass.p_true"].is_nan().all()


def test_a_real_backend_answers_through_generate(folder, tmp_path):
    """A randomly initialised character-level Llama on transformers: whatever it replies is a value or a
    status, P(True) from one generated token, a verbalized reply from at most VERBALIZED_BUDGET."""
    from saltbench.training.model import build_model
    from saltbench.training.pairs import task_alphabet_corpus
    from saltbench.training.recipe import ArchitectureSpec
    from saltbench.training.tokenizer import build_char_tokenizer

    tokenizer = build_char_tokenizer(task_alphabet_corpus())
    spec = ArchitectureSpec(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_positions=512)
    build_model(spec, tokenizer, 5).save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    registry = tmp_path / "models.yaml"
    registry.write_text(
        f"models:\n  tiny@x:\n    source: {{kind: local, path: {tmp_path / 'tiny'}}}\n"
        "    dtype: float32\n    chat_template: auto\n    max_context: 512\n"
        "    resources: {gpus: 0, gpu_model: null, mem_mb: 1000, runtime_min: 5, cpus: 1}\n"
    )
    model_spec = load_model_registry(registry)["tiny@x"]
    model = load_generator(tmp_path / "tiny", model_spec, InferenceConfig(batch_size=8), backend="hf")
    generations, dataset = _inputs(folder, "matmul")
    questions = second_pass_questions(
        generations, dataset, "matmul", style="direct", n_shots=None, plan=PLAN, units=UNITS
    ).head(6)
    table = ask_second_pass(model, questions, PLAN.kinds)
    SECOND_PASS.validate(table, "second pass")
    assert table.height == 12 and set(table["status"]) <= set(SECOND_PASS_STATUSES)
    p_true = table.filter(pl.col("kind") == "p_true")
    assert (p_true["n_tokens"] == 1).all() and (p_true["prompt_tokens"] > 50).all()
    assert (table.filter(pl.col("kind") == "verbalized")["n_tokens"] <= 8).all()


def test_a_rerun_asks_only_what_no_kept_table_holds(folder, tmp_path):
    files = [
        SecondPassFile(
            "direct",
            task,
            str(folder / f"{task}.generations.parquet"),
            str(folder / "datasets" / f"{task}.parquet"),
            str(tmp_path / f"{task}.parquet"),
            f"key-{task}",
        )
        for task in TASKS
    ]
    loads = []

    def load():
        loads.append(ScriptedModel([("85", {}), (" True", {0: 0.9})]))
        return loads[-1]

    def run(suffix: str = "") -> dict:
        return second_pass_model(
            [
                SecondPassFile(f.style, f.task, f.generations, f.dataset, f.output, f.key + suffix)
                for f in files
            ],
            load,
            plan=PLAN,
            units=UNITS,
            n_shots=None,
            meta={"stage": "second_pass"},
            restore=lambda output, key: restore_output(output, artifact="second_pass", inputs_key=key),
            keep=keep_output,
        )

    first = run()
    assert set(first) == {("direct", task) for task in TASKS} and len(loads) == 1
    kept = {task: read_table(tmp_path / f"{task}.parquet", "second_pass") for task in TASKS}
    for task in TASKS:  # a failed job: Snakemake deletes every output, the kept copies stay
        (tmp_path / f"{task}.parquet").unlink()
    assert run() == {} and len(loads) == 1  # all restored, nothing asked, no model loaded
    for task in TASKS:
        assert read_table(tmp_path / f"{task}.parquet", "second_pass").equals(kept[task])
    changed = run("-other-settings")  # kept copies of other settings are not used
    assert set(changed) == set(first) and len(loads) == 2


def test_a_served_api_answers_verbalized_and_refuses_p_true_without_token_ids(folder, monkeypatch):
    """Backend openai (a local fake server): the verbalized replies come through ``generate`` like any other
    (its fixed reply is no number: unparsable); P(True) cannot read string-id candidates, and says so (the
    configuration refuses it before any job: tests/config)."""
    from helpers.fake_openai import FakeOpenAI

    from saltbench.inference.backends import LoadSettings
    from saltbench.inference.registry import parse_model_registry

    monkeypatch.setenv("SALTBENCH_TEST_API_KEY", "sk-test")
    generations, dataset = _inputs(folder, "logic")
    questions = second_pass_questions(
        generations, dataset, "logic", style="direct", n_shots=None, plan=PLAN, units=UNITS
    ).head(3)
    with FakeOpenAI() as server:
        entry = {
            "source": {"kind": "api", "base_url": server.base_url, "model": "served"},
            "backend": "openai",
            "backend_options": {"api_key_env": "SALTBENCH_TEST_API_KEY", "max_retries": 0},
        }
        spec = parse_model_registry({"models": {"served": entry}})["served"]
        model = load_backend(server.base_url, spec, settings=LoadSettings(top_k=20))
        table = ask_second_pass(model, questions, ["verbalized"])
        assert server.requests == 3 and all(b["max_tokens"] == 8 for b in server.bodies)
        with pytest.raises(ValueError, match="P\\(True\\) reads the token texts"):
            ask_second_pass(model, questions, ["p_true"])
    SECOND_PASS.validate(table, "second pass")
    assert table["status"].to_list() == ["unparsable"] * 3 and (table["n_tokens"] == 8).all()
