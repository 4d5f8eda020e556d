"""Self-check of docs/tasks.md §8.1 on the authors' reproduction data with the batch path: every reference fed
back fenced scores precision = recall = 1 at every granularity, in both alignment modes, also rendered with
CRLF line breaks, and no reference trips the bad-keyword filter."""

from __future__ import annotations

import polars as pl
import pytest

from saltbench.evaluation import evaluate_many, extract_answer, passes_keyword_filter, summarize_units


@pytest.fixture(scope="module")
def paper(paper_data):
    from saltbench.data import load_paper_datasets

    return load_paper_datasets(paper_data)


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("alignment", ["strict", "dynamic"])
def test_every_fenced_reference_scores_one(paper, alignment, newline):
    from saltbench.tasks import get_task

    n_rows = 0
    for slug, frame in paper.items():
        for (variant,), group in frame.group_by(["variant"], maintain_order=True):
            references = group["reference"].to_list()
            responses = [
                f"********{newline}{r.replace(chr(10), newline)}{newline}********" for r in references
            ]
            assert all(passes_keyword_filter(r) for r in references)
            assert all(extract_answer(r)[0] == r for r in responses)
            units = evaluate_many(responses, references, get_task(slug, variant), alignment=alignment)
            summary = summarize_units(units, dynamic_alignment=alignment == "dynamic")
            assert summary.height == 3 * len(references)
            assert summary.filter((pl.col("precision") != 1) | (pl.col("recall") != 1)).height == 0, slug
            n_rows += len(references)
    assert n_rows == 1748
