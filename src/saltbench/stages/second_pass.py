"""The second pass (docs/confidence.md §8): each model is asked about the units of its own greedy answers —
verbalized confidence and P(True) — and the confidences read from its replies join the units table.

* **Questions** (:func:`second_pass_questions`): the answered responses of one (model, style, task) are
  decomposed by the evaluator exactly as the scoring stage decomposes them (same functions, same settings),
  so ``granularity`` and ``unit_index`` are the units table's; each unit with response text at a granularity
  of ``inference.second_pass.granularities`` is one question (atoms only in responses with at most
  ``atom_max`` of them). A response that is not ``answered`` (truncated, no fence, error) gets none.
* **Replies** (:func:`ask_second_pass`): the prompts of :func:`saltbench.evaluation.second_pass_instruction`
  (the task's own prompt, the extracted answer, the question), rendered by the model's backend like any
  prompt and generated greedily through the backend's ``generate`` — ``VERBALIZED_BUDGET`` tokens for a
  verbalized reply, one for P(True) — so every backend that generates can answer them.
* **Values** (:func:`read_replies`): a verbalized reply parsed strictly
  (:func:`~saltbench.evaluation.parse_verbalized`; of a reasoning model, its final content), P(True) from
  the first reply token's stored candidates (:func:`~saltbench.evaluation.p_true`), the token ids that
  spell *true* and *false* found by decoding those candidates with the model's tokenizer
  (:func:`~saltbench.evaluation.true_false_ids`). A reply without tokens (an error row: the prompt did not
  fit) is ``empty``.
* **Join** (:func:`join_second_pass`): one Float64 column ``second_pass.{kind}`` per kind in the units
  table, NaN where the unit was not asked or the reply's status is not ``ok``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from saltbench.config.inference import SecondPassConfig
from saltbench.core.contracts import SECOND_PASS_COLUMNS, confidence_column
from saltbench.core.vocabulary import (
    SECOND_PASS_SOURCE,
    FenceRule,
    Granularity,
    ReasoningFormat,
    SecondPassKind,
    SecondPassStatus,
)
from saltbench.evaluation import (
    VERBALIZED_BUDGET,
    final_content,
    p_true,
    parse_verbalized,
    second_pass_instruction,
    spelled_first_ids,
    true_false_ids,
)
from saltbench.inference.base import LoadedModel
from saltbench.inference.records import PAD_ID, GenerationRecord
from saltbench.stages.generation import build_prompts
from saltbench.stages.scoring import _evaluated_units, _join_references, response_columns

log = logging.getLogger(__name__)

QUESTION_COLUMNS = ("sample_id", "granularity", "unit_index", "position", "unit", "answer", "instruction")
"""The columns of :func:`second_pass_questions`: the unit (its text, its 1-based ``position`` among the
response's units of that granularity), the extracted answer and the task's prompt."""


@dataclass(frozen=True)
class SecondPassPlan:
    """What is asked (``inference.second_pass``): ``kinds`` about units of ``granularities``, atoms only in
    responses with at most ``atom_max`` atoms."""

    kinds: tuple[SecondPassKind, ...]
    granularities: tuple[Granularity, ...] = ("line", "generation")
    atom_max: int = 8

    @classmethod
    def from_config(cls, block: SecondPassConfig) -> SecondPassPlan:
        return cls(tuple(block.kinds), tuple(block.granularities), int(block.atom_max))


@dataclass(frozen=True)
class UnitSettings:
    """The scoring settings the units are decomposed with (``scoring.*`` and the model's reasoning format):
    the same as the scoring stage's, so that the questions' units are the units table's."""

    alignment: str = "strict"
    keyword_filter: bool = True
    fence_rule: FenceRule = "line"
    reasoning: ReasoningFormat | None = None


def second_pass_questions(
    generations: pl.DataFrame,
    dataset: pl.DataFrame,
    task: str,
    *,
    style: str,
    n_shots: int | None,
    plan: SecondPassPlan,
    units: UnitSettings,
) -> pl.DataFrame:
    """One row per unit asked about (:data:`QUESTION_COLUMNS`), in the units table's order (response,
    granularity, unit); no row for responses that are not ``answered`` or units without response text."""
    joined = _join_references(generations, dataset, task)
    status = response_columns(
        joined, keyword_filter=units.keyword_filter, reasoning=units.reasoning, fence_rule=units.fence_rule
    )[0]
    answered = joined.filter(status.cast(pl.String) == "answered")
    wanted = tuple(dict.fromkeys(("generation", *plan.granularities)))
    evaluated = (
        _evaluated_units(
            answered, task, wanted, units.alignment, units.keyword_filter, units.reasoning, units.fence_rule
        )
        if answered.height
        else None
    )
    if evaluated is None:
        return pl.DataFrame(schema=_question_schema())
    written = evaluated.filter(pl.col("response_unit").is_not_null()).with_columns(
        position=pl.int_range(1, pl.len() + 1).over("row", "granularity")
    )
    answers = written.filter(pl.col("granularity") == "generation").select("row", answer="response_unit")
    atoms = written.filter(pl.col("granularity") == "atom").group_by("row").agg(atoms=pl.len())
    rows = answered.select("row", "sample_id", "task", "variant").join(
        dataset.select("sample_id", "input"), on="sample_id", how="left", maintain_order="left"
    )
    instructions = pl.DataFrame({"row": rows["row"], "instruction": build_prompts(rows, style, n_shots)})
    asked = (
        written.filter(pl.col("granularity").cast(pl.String).is_in(plan.granularities))
        .join(atoms, on="row", how="left")
        .filter((pl.col("granularity") != "atom") | (pl.col("atoms") <= plan.atom_max))
        .join(answers, on="row", how="inner")
        .join(instructions, on="row", how="left")
        .join(answered.select("row", "sample_id"), on="row", how="left")
        .sort("row", "granularity", "unit_index")
    )
    return asked.select(
        "sample_id", "granularity", "unit_index", "position", pl.col("response_unit").alias("unit"),
        "answer", "instruction",
    )  # fmt: skip


def _question_schema() -> dict[str, pl.DataType]:
    return {
        "sample_id": pl.String(),
        "granularity": SECOND_PASS_COLUMNS["granularity"],
        "unit_index": pl.Int32(),
        "position": pl.Int64(),
        "unit": pl.String(),
        "answer": pl.String(),
        "instruction": pl.String(),
    }


def second_pass_prompts(questions: pl.DataFrame, kinds: Sequence[SecondPassKind]) -> list[str]:
    """The instruction of each (question, kind), questions in order and kinds inside each question."""
    prompts = []
    for granularity, position, unit, answer, instruction in questions.select(
        pl.col("granularity").cast(pl.String), "position", "unit", "answer", "instruction"
    ).iter_rows():
        for kind in kinds:
            scoped = granularity != "generation"
            prompts.append(
                second_pass_instruction(
                    kind,
                    instruction,
                    answer,
                    granularity=granularity,
                    unit=unit if scoped else None,
                    index=position if scoped else None,
                )
            )
    return prompts


def ask_second_pass(
    model: LoadedModel | None,
    questions: pl.DataFrame,
    kinds: Sequence[SecondPassKind],
    *,
    reasoning: ReasoningFormat | None = None,
    progress: bool = False,
) -> pl.DataFrame:
    """The second-pass table of ``questions`` (:func:`second_pass_questions`): one row per (question, kind)
    with the columns of :data:`saltbench.core.contracts.SECOND_PASS_COLUMNS` — one greedy generation each
    through ``model.generate`` (``VERBALIZED_BUDGET`` tokens for verbalized, 1 for P(True)); ``model`` may be
    ``None`` where there is no question."""
    kinds = tuple(kinds)
    if not questions.height or not kinds:
        return pl.DataFrame(schema=dict(SECOND_PASS_COLUMNS))
    if model is None:
        raise ValueError(f"{questions.height} second-pass questions and no model to ask them")
    prompts = model.render(second_pass_prompts(questions, kinds))
    asked = [kinds[i % len(kinds)] for i in range(len(prompts))]
    budgets = [VERBALIZED_BUDGET if kind == "verbalized" else 1 for kind in asked]
    records = model.generate(prompts, budgets, progress=progress)
    values, statuses = read_replies(records, asked, model.tokenizer, reasoning=reasoning)
    repeat = pl.int_range(0, pl.len()).repeat_by(len(kinds)).explode()
    keys = questions.select(pl.col(["sample_id", "granularity", "unit_index"]).gather(repeat))
    return keys.with_columns(
        pl.Series("kind", asked, dtype=pl.String),
        pl.Series("reply", [r.text for r in records], dtype=pl.String),
        pl.Series("value", values, dtype=pl.Float64),
        pl.Series("status", statuses, dtype=pl.String),
        pl.Series("prompt_tokens", [r.num_prompt_tokens for r in records], dtype=pl.Int32),
        pl.Series("n_tokens", [r.num_generated_tokens for r in records], dtype=pl.Int32),
    ).select(list(SECOND_PASS_COLUMNS))


def read_replies(
    records: Sequence[GenerationRecord],
    kinds: Sequence[SecondPassKind],
    tokenizer: Any,
    *,
    reasoning: ReasoningFormat | None = None,
) -> tuple[list[float], list[SecondPassStatus]]:
    """The value and status of each reply (module docstring); ``kinds[i]`` is what ``records[i]`` answers.

    Raises:
        ValueError: a P(True) reply whose token ids are no vocabulary ids (an API's token strings) or a
            model without a tokenizer to decode them.
    """
    truth = _true_false(tokenizer, [r for r, k in zip(records, kinds, strict=True) if k == "p_true"])
    values: list[float] = []
    statuses: list[SecondPassStatus] = []
    for record, kind in zip(records, kinds, strict=True):
        value, status = math.nan, "empty"
        if record.num_generated_tokens and kind == "p_true":
            value, status = p_true(
                int(record.token_ids[0]),
                float(record.chosen_logprobs[0]),
                record.topk_ids[0],
                record.topk_logprobs[0],
                *truth,
            )
        elif record.num_generated_tokens:
            value, status = parse_verbalized(_final_text(record.text, reasoning))
        values.append(value)
        statuses.append(status)  # type: ignore[arg-type]
    return values, statuses


def _final_text(text: str, reasoning: ReasoningFormat | None) -> str:
    """A reply's final content after a reasoning model's trace (the whole reply when the trace never
    ended: then it is no number)."""
    span = final_content(text, reasoning) if reasoning is not None else None
    return text if span is None else text[span[0] : span[1]]


def _true_false(tokenizer: Any, records: Sequence[GenerationRecord]) -> tuple[frozenset[int], frozenset[int]]:
    """The ids among the first tokens and their candidates of ``records`` whose decoded text is *true* /
    *false* (:func:`~saltbench.evaluation.true_false_ids`), and the first token of each of the tokenizer's own
    spellings of the words (:func:`~saltbench.evaluation.spelled_first_ids`: where the tokenizer has no
    token for a whole word, e.g. a character-level one, the reply commits to it with its first token; a
    tokenizer that only decodes gives the whole words alone)."""
    firsts = [r for r in records if r.num_generated_tokens]
    if not firsts:
        return frozenset(), frozenset()
    ids = np.unique(np.concatenate([np.append(r.topk_ids[0], r.token_ids[0]) for r in firsts]))
    ids = ids[ids != PAD_ID]
    if (ids < 0).any() or tokenizer is None:
        raise ValueError(
            "P(True) reads the token texts of the reply's first token's candidates: this model's replies "
            "carry no vocabulary ids or it has no tokenizer (backend openai without "
            "backend_options.token_ids)"
        )
    whole_true, whole_false = true_false_ids((int(i), tokenizer.decode([int(i)])) for i in ids)
    if not callable(getattr(tokenizer, "encode", None)):  # a plugin's decode-only tokenizer: whole words only
        return whole_true, whole_false
    first_true, first_false = spelled_first_ids(lambda text: tokenizer.encode(text, add_special_tokens=False))
    return whole_true | first_true, whole_false | first_false


@dataclass(frozen=True)
class SecondPassFile:
    """One (style, task) of a model's second-pass job: its generations and dataset files, the output, and
    the key of everything the output depends on (a kept copy with another key is not used)."""

    style: str
    task: str
    generations: str
    dataset: str
    output: str
    key: str


def second_pass_model(
    files: Sequence[SecondPassFile],
    load: Callable[[], LoadedModel],
    *,
    plan: SecondPassPlan,
    units: UnitSettings,
    n_shots: int | None,
    meta: Mapping[str, Any],
    restore: Callable[[str, str], bool] = lambda output, key: False,
    keep: Callable[[str], object] = lambda output: None,
) -> dict[tuple[str, str], pl.DataFrame]:
    """Every (style, task) table of one model's second pass (rule ``second_pass``): an output that
    ``restore(output, key)`` puts back (a kept copy of this key) is not asked again; the others' questions
    are asked of the model ``load()`` gives — loaded only when there is one — and each table is written
    (atomically, with ``meta`` and its key as provenance) and ``keep(output)`` as soon as it is done, so a
    rerun after a kill asks only the rest. Returns the tables written."""
    from saltbench.io import provenance, read_table, write_table

    todo = []
    for file in files:
        if restore(file.output, file.key):
            continue
        generations = read_table(file.generations, "generations")
        dataset = read_table(file.dataset, "dataset")
        questions = second_pass_questions(
            generations, dataset, file.task, style=file.style, n_shots=n_shots, plan=plan, units=units
        )
        todo.append((file, questions))
    asked = sum(questions.height for _, questions in todo) * len(plan.kinds)
    log.info("%d of %d (style, task) tables to write, %d questions", len(todo), len(files), asked)
    model = load() if asked else None  # a model that answered nothing is not loaded
    written = {}
    for file, questions in todo:
        table = ask_second_pass(model, questions, plan.kinds, reasoning=units.reasoning)
        record = provenance(**meta, style=file.style, task=file.task, inputs_key=file.key)
        write_table(table, file.output, record, "second_pass")
        keep(file.output)
        counts = table.group_by("kind", "status").len().sort("kind", "status").rows() if table.height else []
        log.info("asked %d questions (%s) -> %s", table.height, counts, file.output)
        written[(file.style, file.task)] = table
    return written


def join_second_pass(
    units: pl.DataFrame, answers: pl.DataFrame | None, kinds: Sequence[SecondPassKind]
) -> pl.DataFrame:
    """``units`` with one Float64 column ``second_pass.{kind}`` per kind: the ``value`` of the second-pass
    row with the unit's ``(sample_id, granularity, unit_index)``, NaN where there is none (not asked) or its
    status is not ``ok``; units in their order.

    Example:
        >>> units = pl.DataFrame({"sample_id": ["a", "a"], "granularity": ["line", "generation"],
        ...                       "unit_index": pl.Series([0, 0], dtype=pl.Int32)})
        >>> answers = pl.DataFrame({"sample_id": ["a"], "granularity": ["generation"],
        ...     "unit_index": pl.Series([0], dtype=pl.Int32), "kind": ["verbalized"], "value": [0.8],
        ...     "status": ["ok"]})
        >>> join_second_pass(units, answers, ["verbalized"])["second_pass.verbalized"].to_list()
        [nan, 0.8]
    """
    out = units.with_row_index("_order")
    for kind in kinds:
        name = confidence_column(SECOND_PASS_SOURCE, kind)
        if answers is None or not answers.height:
            out = out.with_columns(pl.lit(math.nan, dtype=pl.Float64).alias(name))
            continue
        values = answers.filter(pl.col("kind") == kind).select(
            pl.col("sample_id"),
            pl.col("granularity").cast(pl.String),
            pl.col("unit_index").cast(pl.Int32),
            pl.when(pl.col("status") == "ok").then(pl.col("value")).otherwise(math.nan).alias(name),
        )
        joined = out.with_columns(_gran=pl.col("granularity").cast(pl.String)).join(
            values.rename({"granularity": "_gran"}), on=["sample_id", "_gran", "unit_index"], how="left"
        )
        out = joined.drop("_gran").with_columns(pl.col(name).fill_null(math.nan))
    return out.sort("_order").drop("_order")


__all__ = [
    "QUESTION_COLUMNS",
    "SecondPassFile",
    "SecondPassPlan",
    "UnitSettings",
    "ask_second_pass",
    "join_second_pass",
    "read_replies",
    "second_pass_model",
    "second_pass_prompts",
    "second_pass_questions",
]
