"""EvaluateOptions: the options evaluate and evaluate_many share, declared once; their defaults are the
authors' rules, and from_scoring gives the workflow's (docs/compatibility.md §1.3)."""

from __future__ import annotations

import dataclasses
import typing

import pytest
from polars.testing import assert_frame_equal

from saltbench.config import ScoringConfig
from saltbench.evaluation import EvaluateKeywords, EvaluateOptions, evaluate, evaluate_many

REFERENCE = "TCT CGA TTA"
QUOTED = "I will print '********' on a line of its own.\n********\nTCT CGA TTA\n********"
"""A correct answer after one sentence quoting the fence: the authors' rule pairs the quote with the answer's
opening fence and loses the answer; the line rule keeps it."""


def test_the_keywords_are_the_options_fields():
    hints = typing.get_type_hints(EvaluateOptions)
    fields = {f.name: hints[f.name] for f in dataclasses.fields(EvaluateOptions)}
    assert typing.get_type_hints(EvaluateKeywords) == fields


def test_the_defaults_are_the_authors_rules_and_from_scoring_the_workflows():
    assert evaluate(QUOTED, REFERENCE, "dna").metrics["precision"] == 0  # positional: the answer is lost
    workflow = EvaluateOptions.from_scoring(ScoringConfig())
    assert workflow == EvaluateOptions.from_scoring({}) == EvaluateOptions(fence_rule="line")
    assert evaluate(QUOTED, REFERENCE, "dna", options=workflow).metrics["precision"] == 1
    resolved = ScoringConfig(alignment="dynamic", keyword_filter=False, fence_rule="positional").to_dict()
    assert EvaluateOptions.from_scoring(resolved, reasoning="think") == EvaluateOptions(
        alignment="dynamic", keyword_filter=False, fence_rule="positional", reasoning="think"
    )


@pytest.mark.parametrize(
    "keywords",
    [
        {"alignment": "dynamic", "match_score": 3, "gap_penalty": 0.5},
        {"keyword_filter": False, "require_fence": True},
        {"fence_rule": "line", "reasoning": "think"},
    ],
)
def test_options_and_keywords_evaluate_alike(keywords):
    responses = [QUOTED, "<think>TCT</think>\n********\nTCT CGA TAA AAA\n********", "TCT GGA", None]
    options = EvaluateOptions(**keywords)
    one = [evaluate(r, REFERENCE, "dna", granularity="atom", options=options) for r in responses]
    assert one == [evaluate(r, REFERENCE, "dna", granularity="atom", **keywords) for r in responses]
    many = evaluate_many(responses, [REFERENCE] * 4, "dna", options=options)
    assert_frame_equal(many, evaluate_many(responses, [REFERENCE] * 4, "dna", **keywords))
    # a keyword given with options changes that option only
    other = dataclasses.replace(options, fence_rule="positional")
    assert evaluate(QUOTED, REFERENCE, "dna", options=other, fence_rule=options.fence_rule) == one[0]


def test_a_bad_option_is_named():
    with pytest.raises(TypeError, match="evaluate_many\\(\\) got unexpected keyword argument\\(s\\) 'fence'"):
        evaluate_many([QUOTED], [REFERENCE], "dna", fence="line")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="fence_rule must be one of positional, line, got 'lines'"):
        evaluate(QUOTED, REFERENCE, "dna", fence_rule="lines")  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="alignment must be one of"):
        EvaluateOptions(alignment="loose")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="match_score must be > 0, got 0"):
        evaluate(QUOTED, REFERENCE, "dna", options=EvaluateOptions(alignment="dynamic"), match_score=0)
    with pytest.raises(ValueError, match="reasoning must be None or one of"):
        EvaluateOptions.from_scoring({}, reasoning="cot")  # type: ignore[arg-type]
