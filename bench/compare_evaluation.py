"""Before/after timing of the per-response and batch evaluation paths (``evaluate``, ``evaluate_many``).

Workload (issue #15, item 1): ``--n`` seeded DNA responses of 1–199 codons (``get_task("dna").generate``:
the reference is the complement of the input), each codon replaced by a different codon with probability
``--wrong``, in the fence format — some reasoning, a ``********`` fence, the answer, a fence. Cases: every
granularity × alignment, once as a loop of ``evaluate`` calls and once as one ``evaluate_many`` call.

Results are compared between the trees in plain form: the loop cases return the ``Evaluation`` objects
(the harness turns them into dictionaries of their fields), the batch cases the polars frame.

Usage::

    OMP_NUM_THREADS=1 python bench/compare_evaluation.py --base 98dd4b4 --rounds 3
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable

import _compare

from saltbench.core.vocabulary import ALIGNMENTS, GRANULARITIES, Alignment, Granularity
from saltbench.evaluation import evaluate, evaluate_many
from saltbench.tasks import get_task

CODONS = [a + b + c for a in "ACGT" for b in "ACGT" for c in "ACGT"]
REASONING = "Let me work through this carefully, pairing each base with its complement.\n"


def parser() -> argparse.ArgumentParser:
    """The workload's options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2000, help="number of responses")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wrong", type=float, default=0.1, help="probability that a codon is wrong")
    return p


def workload(n: int, seed: int, wrong: float) -> tuple[list[str], list[str]]:
    """``n`` fenced DNA responses and their references (a wrong codon is any other codon)."""
    references = get_task("dna").generate(n, seed)["reference"].to_list()
    rng = random.Random(seed + 1)
    responses = []
    for reference in references:
        codons = [
            rng.choice([c for c in CODONS if c != codon]) if rng.random() < wrong else codon
            for codon in reference.split(" ")
        ]
        responses.append(f"{REASONING}********\n{' '.join(codons)}\n********")
    return responses, references


def cases(args: argparse.Namespace) -> dict[str, Callable[[], object]]:
    """``{granularity}/{alignment}/{evaluate|evaluate_many}`` for every granularity and alignment."""
    responses, references = workload(args.n, args.seed, args.wrong)
    task = get_task("dna")
    out: dict[str, Callable[[], object]] = {}
    for granularity in GRANULARITIES:
        for alignment in ALIGNMENTS:

            def loop(g: Granularity = granularity, a: Alignment = alignment) -> object:
                return [
                    evaluate(r, ref, task, granularity=g, alignment=a)
                    for r, ref in zip(responses, references)
                ]

            def many(g: Granularity = granularity, a: Alignment = alignment) -> object:
                return evaluate_many(responses, references, task, granularities=g, alignment=a)

            out[f"{granularity}/{alignment}/evaluate"] = loop
            out[f"{granularity}/{alignment}/evaluate_many"] = many
    return out


if __name__ == "__main__":
    sys.exit(_compare.main("compare_evaluation", parser()))
