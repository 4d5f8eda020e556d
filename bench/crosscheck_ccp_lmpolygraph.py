"""Cross-check of ``topk.ccp`` against lm-polygraph's claim-level CCP on shared inputs (docs/confidence.md
§4.6).

lm-polygraph is not a dependency (its install pulls spacy, flask, fastchat, hydra-core, bitsandbytes,
sentence-transformers …). Install it *without* dependencies in a throwaway venv and point ``--site`` at that
venv's site-packages::

    python -m venv /tmp/lmp && /tmp/lmp/bin/pip install lm-polygraph==0.7.0 --no-deps
    .venv/bin/python bench/crosscheck_ccp_lmpolygraph.py --site /tmp/lmp/lib/python3.11/site-packages

Their package ``__init__`` imports torch models, and the claim estimator's module imports nltk and the claim
extractor (an OpenAI client); neither is needed for the formula, so the two files compared — their
``Estimator`` base and ``ClaimConditionedProbabilityClaim`` — are loaded by path, with the three modules they
import for other purposes (logging helper, ``Claim`` record, nltk stopwords) replaced by minimal stand-ins.
Their estimator gets, per claim (our unit) and token, the raw stored log-probabilities of the chosen token
and the alternatives, and an "NLI" matrix from the judge of our test reference (each alternative substituted
into the unit's whole window, ``normalize_unit`` keys compared): ``entail`` when equivalent, ``contra`` when
different, ``neutral`` when the alternative's text is unknown (they leave neutral alternatives out of both
sums, as we leave unknown ones out). ``nli_context="fact_pref"`` (the claim-specific matrices); no stopwords.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np
from _anchors import load, stub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.ccp_cases import EVERY_PIECE, PIECES, ccp_inputs, first_response_ccp  # noqa: E402

from saltbench.evaluation import UnitRule, normalize_unit  # noqa: E402
from saltbench.stages.scoring import token_unit_pairs  # noqa: E402

log = logging.getLogger("crosscheck_ccp")


@dataclasses.dataclass
class Claim:
    """lm-polygraph's claim record (stat_calculators.extract_claims.Claim), fields as theirs."""

    claim_text: str
    sentence: str
    aligned_token_ids: list[int]


def load_their_estimator(site: Path) -> type:
    """``ClaimConditionedProbabilityClaim`` from lm-polygraph's files in ``site``, loaded by path."""
    root = site / "lm_polygraph"
    stub("lm_polygraph.utils.common", polygraph_module_init=lambda init: init)
    stub("lm_polygraph.stat_calculators.extract_claims", Claim=Claim)
    stub("nltk.corpus", stopwords=None)
    load("lm_polygraph.estimators.estimator", root / "estimators" / "estimator.py")
    path = root / "estimators" / "claim" / "claim_conditioned_probability.py"
    return load(
        "lm_polygraph.estimators.claim.claim_conditioned_probability", path
    ).ClaimConditionedProbabilityClaim


Token = tuple[int, float, list[tuple[int, float]]]
"""A generated token: its piece id, chosen log-probability and stored (id, log-probability) alternatives."""


def random_case(rng: np.random.Generator, top_k: int) -> tuple[list[Token], list[tuple[int, int]], bool]:
    """One response of random pieces with random alternatives (some unknown), its units and space rule."""
    n = int(rng.integers(1, 12))
    tokens = []
    for _ in range(n):
        alternatives = [
            (int(rng.integers(0, len(PIECES) + 2)), float(rng.uniform(-6, -0.01)))
            for _ in range(rng.integers(1, 6))
        ]
        tokens.append((int(rng.integers(0, len(PIECES))), float(rng.uniform(-6, -0.01)), alternatives))
    text = "".join(PIECES[i] for i, _, _ in tokens)
    spans = []
    for _ in range(int(rng.integers(1, 4)) if text else 0):
        start = int(rng.integers(0, len(text)))
        spans.append((start, int(rng.integers(start + 1, len(text) + 1))))
    return tokens, spans, bool(rng.integers(0, 2))


def their_inputs(
    text: str,
    tokens: list[Token],
    spans: list[tuple[int, int]],
    rule: UnitRule,
    known: dict[int, str],
    top_k: int,
    offsets: np.ndarray,
) -> tuple[list, list[Claim], list]:
    """(alternatives per token, claims, claim-specific NLI matrices) in lm-polygraph's layout."""
    alternatives, claims, matrices = [], [], []
    for token_id, chosen, stored in tokens:
        kept = [(i, lp) for i, lp in stored if i != token_id][: top_k - 1]
        alternatives.append([(PIECES[token_id], chosen)] + [(known.get(i, f"<{i}>"), lp) for i, lp in kept])
    for start, end in spans:
        members, _ = token_unit_pairs(offsets[:-1], len(text), np.array([start]), np.array([end]))
        claims.append(Claim(text[start:end], text, members.tolist()))
        per_token = []
        for t in members.tolist():
            ws, we = min(start, offsets[t]), max(end, offsets[t + 1])
            key = normalize_unit(text[ws:we], rule)
            labels = ["entail"]
            for i, _ in [(i, lp) for i, lp in tokens[t][2] if i != tokens[t][0]][: top_k - 1]:
                if i not in known:
                    labels.append("neutral")
                    continue
                same = (
                    normalize_unit(text[ws : offsets[t]] + known[i] + text[offsets[t + 1] : we], rule) == key
                )
                labels.append("entail" if same else "contra")
            matrix = [
                [labels[j] if a == 0 else (labels[a] if j == 0 else "neutral") for j in range(len(labels))]
                for a in range(len(labels))
            ]
            per_token.append(matrix)
        matrices.append(per_token)
    return alternatives, claims, matrices


def compare(estimator: Any, rng: np.random.Generator, top_k: int) -> float:
    """|ours − theirs| over the units of one random case (NaN units skipped: no alternative stored)."""
    tokens, spans, strip = random_case(rng, top_k)
    if not spans:
        return 0.0
    inputs = ccp_inputs([tokens, EVERY_PIECE], [strip, strip], top_k)
    known = {i: PIECES[i] for i in inputs.ids.tolist()}
    text = inputs.texts[0]
    offsets = np.append(inputs.offsets[: len(tokens)], len(text))
    ours = first_response_ccp(inputs, len(tokens), spans, top_k)
    pairs = [token_unit_pairs(offsets[:-1], len(text), np.array([s]), np.array([e]))[0] for s, e in spans]
    rule = UnitRule(None if strip else " ", None)
    alternatives, claims, matrices = their_inputs(text, tokens, spans, rule, known, top_k, offsets)
    stats = {"claims": [claims], "greedy_tokens_alternatives": [alternatives]}
    stats["greedy_tokens_alternatives_fact_pref_nli"] = [matrices]
    theirs = -np.array(estimator(stats)[0])  # they return −CCP (an uncertainty)
    defined = ~np.isnan(ours) & np.array([len(p) > 0 for p in pairs])
    return float(np.max(np.abs(ours[defined] - theirs[defined]), initial=0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site", type=Path, required=True, help="site-packages holding lm_polygraph")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("saltbench").setLevel(logging.WARNING)
    estimator = load_their_estimator(args.site)(nli_context="fact_pref", is_stopword=lambda token: False)
    rng = np.random.default_rng(args.seed)
    worst = max(compare(estimator, rng, int(rng.integers(2, 6))) for _ in range(args.cases))
    log.info("%d random cases: max |ours - lm-polygraph 0.7.0| = %.3g", args.cases, worst)


if __name__ == "__main__":
    main()
