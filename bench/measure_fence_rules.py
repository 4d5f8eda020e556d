"""What the fence rule changes (docs/compatibility.md §1.3): the authors' positional pairing (every run of
four or more ``*`` is a fence) against the ``line`` rule (a run that starts a line, or ends one and closes a
fence), on

1. the paper's reproduction references: each rendered as a model should answer (fence lines around it),
   alone, after a chain of thought that quotes the fence instruction once, and after a prose line that ends
   in a fence (``… between ********``);
2. the corpus of realistic outputs (``tests/helpers/reasoning_corpus.py``: the reasoning families and a plain
   chain-of-thought model, whole and cut), scored without a reasoning format, as a plain model's would be;
3. optionally, real generations (``--generations 'data/generations/*/*/*.parquet'``: a run's files) scored
   against their datasets (``data/datasets/{task}.parquet``).

For each set: responses, responses whose atom-level units or statuses differ between the rules, and the mean
atom precision under each rule. Usage::

    python bench/measure_fence_rules.py [--generations GLOB] [--out results.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def compare(rows: Iterable[tuple[str, str, str, str | None]]) -> dict[str, float | int]:
    """``rows``: (response, reference, task, variant) → how the two rules differ on them."""
    from saltbench.evaluation import evaluate

    n = changed = 0
    precision = {"positional": 0.0, "line": 0.0}
    for response, reference, task, variant in rows:
        results = {
            rule: evaluate(response, reference, task, variant=variant, fence_rule=rule)  # type: ignore[arg-type]
            for rule in precision
        }
        n += 1
        a, b = results["positional"], results["line"]
        changed += (a.response_units, [c.status for c in a.comparisons]) != (
            b.response_units,
            [c.status for c in b.comparisons],
        )
        for rule, ev in results.items():
            precision[rule] += float(ev.metrics["precision"])
    return {
        "responses": n,
        "changed": changed,
        **{f"precision_{rule}": total / max(n, 1) for rule, total in precision.items()},
    }


LEADS = {
    "rendered": "",
    "after a quoted fence": "I will print '{fence}' on a line of its own before the answer and after it.\n",
    "after a prose line ending in a fence": "I will write the answer between {fence}\n",
}
"""What precedes each rendered reference, per set (``{fence}``: the task's fence)."""


def paper_rows(lead_kind: str) -> Iterable[tuple[str, str, str, str | None]]:
    from saltbench.data import load_paper_datasets
    from saltbench.tasks import FENCE, get_task

    lead = LEADS[lead_kind].format(fence=FENCE)
    for slug, frame in load_paper_datasets(REPO / "reference" / "paper_data").items():
        for variant, reference in frame.select("variant", "reference").iter_rows():
            yield lead + get_task(slug, variant).render_answer(reference), reference, slug, variant


def corpus_rows() -> Iterable[tuple[str, str, str, str | None]]:
    sys.path.insert(0, str(REPO / "tests"))
    from helpers.reasoning_corpus import CASES, REFERENCE, cut_traces

    for case in [*CASES, *(case for case, _ in cut_traces())]:
        yield case.text, REFERENCE, "dna", None


def generation_rows(pattern: str) -> Iterable[tuple[str, str, str, str | None]]:
    import polars as pl

    for path in sorted(glob.glob(pattern)):
        gens = pl.read_parquet(path, columns=["sample_id", "task", "text"])
        if not gens.height:
            continue
        task = gens["task"][0]
        dataset = pl.read_parquet(REPO / "data" / "datasets" / f"{task}.parquet")
        joined = gens.join(dataset.select("sample_id", "variant", "reference"), on="sample_id", how="inner")
        for text, reference, variant in joined.select("text", "reference", "variant").iter_rows():
            yield text, reference, task, variant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generations", default=None, help="glob of generations files to score both ways")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results = {
        **{f"paper references, {kind}": compare(paper_rows(kind)) for kind in LEADS},
        "corpus of realistic outputs (no reasoning format)": compare(corpus_rows()),
    }
    if args.generations:
        results[f"generations {args.generations}"] = compare(generation_rows(args.generations))
    for name, row in results.items():
        print(f"{name}: {json.dumps(row)}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
