"""Shared inputs of the second-pass cross-check against lm-polygraph, uqlm and TruthTorchLM
(docs/confidence.md §8.4): a small vocabulary for P(True) and a corpus of verbalized replies, with what the
anchors were measured to agree on. ``bench/crosscheck_second_pass_anchors.py`` feeds them to the anchors and
to ours; ``tests/evaluation/test_second_pass_anchors.py`` pins ours on them without the anchors installed."""

from __future__ import annotations

import math

import numpy as np

VOCABULARY = ["True", " True", "true", "False", " False", "false", "The", " the", "1", " Yes", "No", "**"]
"""Token texts by id: three spellings of each word first, then other replies a model may start with."""

TRUE_ID, FALSE_ID = 0, 3
"""The one spelling lm-polygraph's P(True) reads (the token of ``"True"``) and its counterpart."""


def two_token_logprobs(p_true: float) -> np.ndarray:
    """Full-vocabulary log-probabilities with all mass on ``True`` (``p_true``) and ``False`` (the rest):
    the inputs where every anchor's P(True) and ours must coincide."""
    logprobs = np.full(len(VOCABULARY), -np.inf)
    logprobs[TRUE_ID], logprobs[FALSE_ID] = math.log(p_true), math.log1p(-p_true)
    return logprobs


def top_candidates(logprobs: np.ndarray, top_k: int) -> tuple[int, float, np.ndarray, np.ndarray]:
    """(chosen id, its log-probability, top-k ids, their log-probabilities) of a greedy step, as a backend
    stores them: the chosen token is the argmax and is listed again first among the top-k."""
    order = np.argsort(-logprobs, kind="stable")[:top_k]
    return int(order[0]), float(logprobs[order[0]]), order, logprobs[order]


VERBALIZED_AGREED = {
    "85": 0.85,
    " 85 ": 0.85,
    "85%": 0.85,
    "85.": 0.85,
    "0": 0.0,
    "100": 1.0,
    "7": 0.07,
    "85\n": 0.85,
    "85 %": 0.85,
    "85%.": 0.85,
}
"""Replies that ours and every anchor's numeric parser (0–100 scale) read as the same confidence."""

VERBALIZED_DIFFERENT = {
    "85.5": 0.855,
    "0.85": 0.0085,
    "100.0": 1.0,
    "99.99": 0.9999,
    "about 80": "unparsable",
    "80-90": "unparsable",
    "80 to 90": "unparsable",
    "Confidence: 85": "unparsable",
    "85/100": "unparsable",
    "I am 90% sure.": "unparsable",
    "**85**": "unparsable",
    "85\nThe answer is correct.": "unparsable",
    "Probability: 0.85": "unparsable",
    ".5": "unparsable",
    "-5": "unparsable",
    "1,000": "unparsable",
    "eighty": "unparsable",
    "150": "out_of_range",
    "101": "out_of_range",
    "1000": "unparsable",
    "": "empty",
    "   ": "empty",
}
"""Replies where at least one anchor reads another value (or a value where ours has a status): ours, a
value or the status of :func:`saltbench.evaluation.parse_verbalized`."""
