"""The authors' reproduction data loads into our frames, self-scores perfectly, and our solvers
reproduce every reference (docs/tasks.md §8)."""

from __future__ import annotations

import polars as pl
import pytest

from saltbench.config import DatasetsConfig, resolve_block
from saltbench.data import PAPER_ROWS, build_dataset, load_paper_datasets
from saltbench.evaluation import evaluate
from saltbench.tasks import get_task
from saltbench.tasks.base import DATASET_COLUMNS
from saltbench.tasks.words import find_needles


@pytest.fixture(scope="module")
def paper(paper_data):
    return load_paper_datasets(paper_data)


def test_rows_columns_and_variants(paper):
    assert {t: f.height for t, f in paper.items()} == PAPER_ROWS
    for frame in paper.values():
        assert frame.columns[: len(DATASET_COLUMNS)] == list(DATASET_COLUMNS)
        assert frame["sample_id"].n_unique() == frame.height
    code = paper["code"]
    counts = dict(code.group_by("variant").len().iter_rows())
    assert counts == {
        "two_sum": 18,
        "edit_distance": 20,
        "next_permutation": 20,
        "rotate_matrix": 22,
        "insert_interval": 22,
        "rotate_array": 23,
        "reverse_words": 23,
    }
    words = paper["words"]
    assert words["variant"].value_counts().sort("variant").to_dicts()[0] == {
        "variant": "capital_letters",
        "count": 8,
    }
    assert words.schema["vocabulary"] == pl.List(pl.String)


def test_every_reference_scores_one_against_itself(paper):
    for slug, frame in paper.items():
        for row in frame.iter_rows(named=True):
            task = get_task(slug, row["variant"])
            fenced = task.render_answer(row["reference"])
            for granularity in ("atom", "line", "generation"):
                m = evaluate(fenced, row["reference"], task, granularity=granularity).metrics
                assert m["precision"] == 1 and m["recall"] == 1, (slug, row["sample_id"], granularity)


@pytest.mark.parametrize("slug", ["dna", "code", "matmul", "kronecker"])
def test_solvers_reproduce_paper_references(paper, slug):
    for row in paper[slug].iter_rows(named=True):
        assert get_task(slug, row["variant"]).solve(row["input"]) == row["reference"], row["sample_id"]


@pytest.mark.slow
def test_logic_solver_reproduces_paper_references(paper):
    task = get_task("logic")
    for row in paper["logic"].iter_rows(named=True):
        assert task.solve(row["input"]) == row["reference"], row["sample_id"]


def test_words_rule_reproduces_paper_references(paper):
    for row in paper["words"].iter_rows(named=True):
        assert find_needles(row["input"], row["variant"], row["vocabulary"]) == row["reference"]


def test_build_dataset_paper_source_caps_rows(paper_data):
    datasets = DatasetsConfig(source="paper", paper_path=str(paper_data), n_samples=5)
    assert build_dataset(datasets, 1, "dna").height == 5


def test_build_dataset_generated_is_deterministic():
    datasets = resolve_block(
        "datasets",
        {"source": "generated", "n_samples": 4, "params": {"dna": {"max_codons": 9}}},
        DatasetsConfig,
    )
    one, two = build_dataset(datasets, 7, "dna"), build_dataset(datasets, 7, "dna")
    assert one.equals(two) and one.height == 4
    other = build_dataset(datasets, 8, "dna")
    assert not one.equals(other)


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_paper_datasets(tmp_path / "nowhere")


def test_the_shipped_paper_data_matches_its_manifest(repo_root):
    """reference/paper_data/SHA256SUMS names every file of the shipped reproduction data with its digest."""
    import hashlib

    root = repo_root / "reference" / "paper_data"
    listed = {}
    for line in (root / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name.removeprefix("./")] = digest
    files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} - {
        "README.md",
        "SHA256SUMS",
    }
    assert set(listed) == files and len(files) == 18
    for name, digest in listed.items():
        assert hashlib.sha256((root / name).read_bytes()).hexdigest() == digest, name
