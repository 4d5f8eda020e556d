"""Second-pass replies of the simulated model (docs/simulation.md §10): asked about its own answer by a
prompt of :func:`saltbench.evaluation.second_pass_instruction`, it finds the dataset row the quoted task
instruction asks about (the :class:`~saltbench.inference.simulated.answers.Oracle`), judges the asked unit as
the evaluator does under strict alignment (its comparison form equals that of the reference's unit at the
same position, and it is no DK marker; the whole answer at generation level), and replies from the planted
map of :class:`~saltbench.inference.simulated.params.SecondPassEffect`:

* **verbalized** — ``min(step·⌊100 σ(shift_v + z)/step + ½⌋, 100)`` with ``z ~ N(d_v·y, 1)``, written as
  the number alone; with probability ``unparsable_rate`` the reply is ``unsure`` instead (status
  ``unparsable``, whatever the unit);
* **p_true** — one token, ``True`` or ``False``, whichever is likelier, from a first-token distribution
  that puts ``TRUE_FALSE_MASS·π`` on ``True``, ``TRUE_FALSE_MASS·(1 − π)`` on ``False`` and the rest evenly
  on 18 byte tokens, ``π = σ(shift_t + z')``, ``z' ~ N(d_t·y, 1)``: the stored top-k gives ``P(True) = π``.

Each reply is a function of the model's seed and the prompt only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from saltbench.evaluation import (
    SECOND_PASS_KINDS,
    SecondPassKind,
    is_dk,
    normalize_unit,
    resolve_task,
    second_pass_instruction,
)
from saltbench.inference.records import TOP_K, GenerationRecord, TokenScores
from saltbench.inference.simulated.answers import (
    EOS_ID,
    FALSE_ID,
    SECOND_PASS_MARK,
    THINK_CLOSED,
    TRUE_ID,
    Answer,
    _rng,
    token_scores,
)
from saltbench.inference.simulated.params import STRUCTURE_PROB, SimulationParams
from saltbench.tasks import get_task

if TYPE_CHECKING:
    from saltbench.core.vocabulary import Granularity
    from saltbench.inference.simulated.model import SimulatedModel

UNPARSABLE_REPLY = "unsure"
"""The verbalized reply that states no number (a share ``unparsable_rate`` of them)."""
TRUE_FALSE_MASS = 0.98
"""The probability a P(True) reply's first token puts on ``True`` and ``False`` together."""
_ASKED = re.compile(
    r"(?:How likely is it that |Is )(?:the proposed answer|(?P<granularity>line|item) (?P<index>\d+) of the "
    r"proposed answer, `(?P<unit>.*)`,)(?: is)? (?:entirely )?correct\? .*",
    re.DOTALL,
)


@dataclass(frozen=True)
class Question:
    """A second-pass prompt read back: its kind, the quoted task instruction and answer, and the unit asked
    about (granularity, text, 1-based index; the whole answer at generation level)."""

    kind: SecondPassKind
    instruction: str
    answer: str
    granularity: Granularity
    unit: str
    index: int


def read_question(prompt: str) -> Question | None:
    """The :class:`Question` of a second-pass prompt, or ``None`` when ``prompt`` is none: it must be exactly
    what :func:`~saltbench.evaluation.second_pass_instruction` renders from what is read back (after any
    closed, empty reasoning block a ``think`` model's prompt ends with)."""
    prompt = prompt.removesuffix(THINK_CLOSED)
    head, mark, rest = prompt.rpartition(SECOND_PASS_MARK)
    answer, _, asked = rest.rpartition("\n\n")
    match = _ASKED.fullmatch(asked)
    if not mark or match is None:
        return None
    scope = match["granularity"]
    granularity: Granularity = "generation" if scope is None else "line" if scope == "line" else "atom"
    index = 1 if scope is None else int(match["index"])
    unit = answer if scope is None else match["unit"]
    for kind in SECOND_PASS_KINDS:
        asked_unit, asked_index = (None, None) if scope is None else (unit, index)
        rendered = second_pass_instruction(
            kind, head, answer, granularity=granularity, unit=asked_unit, index=asked_index
        )
        if rendered == prompt:
            return Question(kind, head, answer, granularity, unit, index)
    return None


def unit_correct(answer: Answer, question: Question) -> bool:
    """Whether the asked unit is correct: equal comparison forms with the reference's unit at its position,
    and no DK marker (module docstring)."""
    from saltbench.evaluation import decompose_clean

    rule = resolve_task(get_task(answer.task, answer.variant))
    units = decompose_clean(answer.reference, rule, question.granularity, with_spans=False)[0]
    if question.index > len(units) or is_dk(question.unit):
        return False
    return normalize_unit(question.unit, rule) == normalize_unit(units[question.index - 1], rule)


def verbalized_text(params: SimulationParams, correct: bool, rng: np.random.Generator) -> str:
    """The verbalized reply (module docstring): two draws, whether it is unparsable and its latent."""
    effect = params.second_pass
    unparsable, normal = rng.random(), rng.standard_normal()
    if unparsable < effect.unparsable_rate:
        return UNPARSABLE_REPLY
    latent = effect.verbalized_shift + normal + effect.verbalized_separation * correct
    step = effect.verbalized_step
    stated = 100.0 / (1.0 + math.exp(-latent))
    return str(min(step * math.floor(stated / step + 0.5), 100))


def p_true_value(params: SimulationParams, correct: bool, rng: np.random.Generator) -> float:
    """``π = σ(shift_t + z')`` (module docstring)."""
    effect = params.second_pass
    latent = effect.p_true_shift + rng.standard_normal() + effect.p_true_separation * correct
    return 1.0 / (1.0 + math.exp(-latent))


def p_true_scores(pi: float, eos: bool) -> tuple[TokenScores, tuple[str, ...]]:
    """The one-token reply (then EOS when ``eos``): ``True`` or ``False``, whichever is likelier, its top-k
    the two then 18 byte tokens sharing the rest (module docstring)."""
    p_true, p_false = TRUE_FALSE_MASS * pi, TRUE_FALSE_MASS * (1 - pi)
    chosen, other = (TRUE_ID, FALSE_ID) if p_true >= p_false else (FALSE_ID, TRUE_ID)
    probs = np.array(
        [max(p_true, p_false), min(p_true, p_false)] + [(1 - TRUE_FALSE_MASS) / (TOP_K - 2)] * 18
    )
    with np.errstate(divide="ignore"):
        logs = np.log(probs)
    entropy = -float(np.sum(probs[probs > 0] * logs[probs > 0]))
    rows = [[chosen, other, *range(TOP_K - 2)]], [logs]
    ids, lp, ent = [chosen], [logs[0]], [entropy]
    if eos:
        end = np.log(np.array([STRUCTURE_PROB] + [(1 - STRUCTURE_PROB) / (TOP_K - 1)] * (TOP_K - 1)))
        rows[0].append([EOS_ID, *range(TOP_K - 1)])
        rows[1].append(end)
        ids.append(EOS_ID)
        lp.append(end[0])
        ent.append(-float(np.sum(np.exp(end) * end)))
    scores = TokenScores(
        np.asarray(ids, np.int32),
        np.asarray(lp, np.float32),
        np.asarray(rows[0], np.int32),
        np.asarray(rows[1], np.float32),
        np.asarray(ent, np.float32),
    )
    return scores, ("True" if chosen == TRUE_ID else "False", *([""] if eos else []))


def reply(model: SimulatedModel, question: Question, budget: int, prompt: str) -> GenerationRecord:
    """The record of the model's reply to a second-pass prompt, cut at ``budget`` tokens."""
    answer = model.oracle.lookup_stripped(question.instruction)
    if answer is None:
        raise ValueError(
            f"model {model.spec.name!r}: no dataset row ends the task instruction of this second-pass "
            f"prompt: …{question.instruction[-80:]!r}"
        )
    correct = unit_correct(answer, question)
    rng = _rng(model.params.seed, "second_pass", prompt)
    if question.kind == "p_true":
        scores, texts = p_true_scores(p_true_value(model.params, correct, rng), budget > 1)
    else:
        text = verbalized_text(model.params, correct, rng)[:budget]
        eos = len(text) < budget
        scores, texts = token_scores(text, np.full(len(text), STRUCTURE_PROB), eos, model.tokenizer)
    return GenerationRecord.from_scores(
        scores,
        texts,
        finish_reason="eos" if texts[-1:] == ("",) else "length",
        num_prompt_tokens=len(prompt.encode("utf-8")),
    )


__all__ = [
    "TRUE_FALSE_MASS",
    "UNPARSABLE_REPLY",
    "Question",
    "p_true_scores",
    "p_true_value",
    "read_question",
    "reply",
    "unit_correct",
    "verbalized_text",
]
