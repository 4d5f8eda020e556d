"""Reasoning outputs scored as the model meant them (docs/reasoning.md): the answer is looked for only after
the reasoning, a trace cut inside its reasoning has no answer, and the thinking text is never scored — through
``evaluate``, ``evaluate_many`` and ``response_status``, on outputs shaped like each family's."""

from __future__ import annotations

import pytest
from helpers.reasoning_corpus import ANSWER, CASES, REFERENCE, Case, cut_traces

from saltbench.config import ScoringConfig
from saltbench.evaluation import evaluate, evaluate_many, final_content, response_status
from saltbench.tasks import FENCE

GRANULARITIES = ("atom", "line", "generation")
RULE = ScoringConfig().fence_rule  # the workflow's default; evaluate's own default is the authors' rule


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.family)
def test_every_family_is_scored_as_the_model_meant_it(case: Case) -> None:
    ev = evaluate(case.text, REFERENCE, "dna", reasoning=case.reasoning, fence_rule=RULE)
    assert ev.metrics["precision"] == pytest.approx(case.precision)
    assert (
        response_status(case.text, case.finish_reason, reasoning=case.reasoning, fence_rule=RULE)
        == case.status
    )
    start = final_content(case.text, case.reasoning)
    for begin, _ in ev.response_unit_spans:  # every unit lies in the final content, never in the thinking
        assert start is not None and begin >= start[0]


@pytest.mark.parametrize("case", [c for c in CASES if c.reasoning is not None], ids=lambda c: c.family)
def test_evaluate_many_agrees_with_evaluate(case: Case) -> None:
    many = evaluate_many(
        [case.text], [REFERENCE], "dna", granularities=GRANULARITIES, reasoning=case.reasoning
    )
    for granularity in GRANULARITIES:
        one = evaluate(case.text, REFERENCE, "dna", granularity=granularity, reasoning=case.reasoning)
        rows = many.filter(many["granularity"] == granularity)
        assert rows["response_unit"].drop_nulls().to_list() == [
            c.response_unit for c in one.comparisons if c.response_unit is not None
        ]
        assert rows["status"].to_list() == [c.status for c in one.comparisons]


def test_without_a_reasoning_format_the_quoted_fences_break_the_answer_as_before() -> None:
    """Today's behaviour, unchanged when no format is given: the fence quoted in the thinking pairs with
    the real one (the issue's first row)."""
    qwen3 = next(c for c in CASES if c.family == "qwen3 thinking")
    assert evaluate(qwen3.text, REFERENCE, "dna", fence_rule="positional").metrics["precision"] == 0


@pytest.mark.parametrize("case_and_end", list(cut_traces()), ids=lambda c: f"{c[0].family}@{len(c[0].text)}")
def test_a_trace_cut_anywhere_is_truncated_and_its_thinking_never_scored(case_and_end) -> None:
    case, answer_end = case_and_end
    assert response_status(case.text, "length", reasoning=case.reasoning, fence_rule=RULE) == case.status
    ev = evaluate(case.text, REFERENCE, "dna", reasoning=case.reasoning, fence_rule=RULE)
    content = final_content(case.text, case.reasoning)
    if content is None:  # cut inside the reasoning: no answer at all
        assert ev.response_unit_spans == () and ev.metrics["precision"] == 0
    else:
        assert all(begin >= content[0] for begin, _ in ev.response_unit_spans)
        assert set(ev.clean_response.split()) <= {"TCT", "CGA", "TC", "T", "C", "CG"} | {""}


def test_a_fence_quoted_in_prose_is_not_a_fence_under_the_line_rule() -> None:
    """A plain chain-of-thought model restating the instruction: the quoted fences stand inside a line of
    prose, so under the line rule only the answer's own fence lines pair (docs/compatibility.md §1.3)."""
    text = f"I must print '{FENCE}' on a line of its own. AGA -> TCT.\n{ANSWER}"
    assert evaluate(text, REFERENCE, "dna", fence_rule="line").metrics["precision"] == 1
    assert evaluate(text, REFERENCE, "dna", fence_rule="positional").metrics["precision"] < 1


@pytest.mark.parametrize(
    "text",
    [
        f"I will write the complement between {FENCE}\n{ANSWER}",  # a prose line ending in a fence
        f"I will write it between {FENCE}\nAGA -> TCT, GCT -> CGA.\n{ANSWER}",  # then more prose
        f"Here it is: {FENCE}\nTCT CGA\n{FENCE}",  # a fence ending a line may still open an answer
        f"{FENCE}TCT CGA{FENCE}",  # an inline answer on a line of its own
        f"{FENCE}\nTCT CGA{FENCE}",  # the closing fence ends the answer's last line
    ],
)
def test_the_line_rule_keeps_the_answers_fences_around_a_fence_ending_a_prose_line(text: str) -> None:
    """A fence that ends a prose line opens nothing when the answer's own fences follow; it still opens an
    answer where nothing else would (docs/compatibility.md §1.3)."""
    assert evaluate(text, REFERENCE, "dna", fence_rule="line").metrics["precision"] == 1
    assert response_status(text, "eos", fence_rule="line") == "answered"


@pytest.mark.vllm
def test_the_think_rules_are_vllms_reasoning_parsers(smollm2_dir) -> None:
    """``final_content`` for ``think`` against vLLM's own ``<think>`` parser (DeepSeek-R1's; Qwen3's and
    Phi-4's follow the same rules), on every whole and cut output of the corpus: the same final content, or
    none where vLLM finds none."""
    pytest.importorskip("vllm", reason="vLLM is not installed")
    from transformers import AutoTokenizer
    from vllm.reasoning.deepseek_r1_reasoning_parser import DeepSeekR1ReasoningParser

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    tokenizer.add_tokens(["<think>", "</think>"])
    parser = DeepSeekR1ReasoningParser(tokenizer)
    cases = [c for c in CASES if c.reasoning == "think"] + [
        c for c, _ in cut_traces() if c.reasoning == "think"
    ]
    for case in cases:
        _, content = parser.extract_reasoning(case.text, None)
        ours = final_content(case.text, "think")
        assert (None if ours is None else case.text[ours[0] :] or None) == content, case.text
