"""DNA Translation task (docs/tasks.md §2, §8.2)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.ipc as ipc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from saltbench.tasks.base import DATASET_COLUMNS, FENCE_INSTRUCTION
from saltbench.tasks.dna import DnaParams, DnaTask, complement_dna

TAIL = "Please answer the following as demonstrated before:\nGiven DNA sequence = {}\nAnswer ="

codons = st.text(alphabet="ACGT", min_size=3, max_size=3)
codon_lines = st.lists(codons, min_size=1, max_size=40).map(" ".join)


@pytest.fixture(scope="module")
def task() -> DnaTask:
    return DnaTask()


# -- seed-exact checks against the authors' generator ------------------------------------------------------
def test_seed0_ten_to_twelve_codons_first_row(task: DnaTask) -> None:
    row = task.generate(5, 0, min_codons=10, max_codons=12).row(0, named=True)
    assert row["input"] == "GAT GGT GTC CTC ATC TAA TGA TGT CGG TAA AGA"
    assert row["reference"] == "CTA CCA CAG GAG TAG ATT ACT ACA GCC ATT TCT"


def test_seed42_four_to_six_codons_first_row(task: DnaTask) -> None:
    row = task.generate(3, 42, min_codons=4, max_codons=6).row(0, named=True)
    assert row["input"] == "AAT CCC AAG AAA CCA CGC"
    assert row["reference"] == "TTA GGG TTC TTT GGT GCG"


def test_seed42_upstream_default_range_first_row(task: DnaTask) -> None:
    first = task.generate(1, 42, min_codons=1, max_codons=30)["input"][0]
    assert first.startswith("AAT CCC AAG AAA CCA CGC GTA ")
    assert len(first.split()) == 21


# -- solver ----------------------------------------------------------------------------------------------
def test_few_shots_are_solved(task: DnaTask) -> None:
    assert len(task.few_shots) == 4
    for shot in task.few_shots:
        assert task.solve(shot.input) == shot.output


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [("AGA GCT AAG GCC", "TCT CGA TTC CGG"), ("ATT", "TAA"), ("ACG  TTA ", "TGC AAT")],
)
def test_complement_examples(sequence: str, expected: str) -> None:
    assert complement_dna(sequence) == expected


@pytest.mark.parametrize("bad", ["", "   ", "acg", "ACN", "ACG\nTTA", "ACG-TTA"])
def test_complement_rejects_invalid(bad: str) -> None:
    with pytest.raises(ValueError, match="sequence"):
        complement_dna(bad)


@given(codon_lines)
def test_complement_is_an_involution(sequence: str) -> None:
    once = complement_dna(sequence)
    assert complement_dna(once) == sequence
    assert len(once) == len(sequence)
    assert all(a != b for a, b in zip(once.replace(" ", ""), sequence.replace(" ", "")))


# -- generator -------------------------------------------------------------------------------------------
def test_frame_schema_and_reference(task: DnaTask) -> None:
    frame = task.generate(20, 3)
    assert tuple(frame.columns[:5]) == DATASET_COLUMNS
    assert frame["task"].unique().to_list() == ["dna"]
    assert frame["variant"].null_count() == 20
    assert frame["sample_id"].n_unique() == 20
    assert frame["sample_id"][0] == "dna-s3-00000"
    for row in frame.iter_rows(named=True):
        assert row["reference"] == complement_dna(row["input"])


def test_default_lengths_span_paper_range(task: DnaTask) -> None:
    counts = [len(s.split()) for s in task.generate(300, 0)["input"]]
    assert 1 <= min(counts) <= 3
    assert 190 <= max(counts) <= 199
    assert 80 <= sum(counts) / len(counts) <= 120  # roughly uniform on 1..199 (paper mean 96.6)


def test_generate_is_deterministic(task: DnaTask) -> None:
    a, b = task.generate(10, 7), task.generate(10, 7)
    assert a.equals(b)
    assert not a["input"].equals(task.generate(10, 8)["input"])


def test_generate_zero_rows(task: DnaTask) -> None:
    frame = task.generate(0, 1)
    assert frame.height == 0
    assert tuple(frame.columns) == DATASET_COLUMNS


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"min_codons": 0}, "min_codons"),
        ({"min_codons": 5, "max_codons": 4}, "max_codons"),
        ({"max_codons": 2.5}, "max_codons"),
        ({"codons": 3}, "codons"),
    ],
)
def test_bad_params(task: DnaTask, params: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        task.generate(2, 0, **params)


@pytest.mark.parametrize(("n", "seed"), [(-1, 0), (2, "x"), (True, 0)])
def test_bad_n_or_seed(task: DnaTask, n: object, seed: object) -> None:
    with pytest.raises(ValueError):
        task.generate(n, seed)  # type: ignore[arg-type]


def test_params_defaults() -> None:
    assert DnaParams() == DnaParams(min_codons=1, max_codons=199)


def test_no_variants() -> None:
    with pytest.raises(ValueError, match="variant"):
        DnaTask("x")


# -- prompt ----------------------------------------------------------------------------------------------
def test_prompt_structure(task: DnaTask) -> None:
    text = task.prompt("ACG TTA")
    assert text.startswith(task.instruction() + "\n" + FENCE_INSTRUCTION + "\n")
    first_shot = "Example 1:\nAGA GCT AAG GCC\nAnswer:\n********\nTCT CGA TTC CGG\n********\nExample 2:\n"
    assert "\nHere are 4 examples:\n" + first_shot in text
    assert text.endswith("********\n" + TAIL.format("ACG TTA"))
    assert task.instruction().count("\n") == 0


def test_prompt_without_shots(task: DnaTask) -> None:
    text = task.prompt("ACG", n_shots=0)
    assert "Example" not in text
    assert text.endswith(TAIL.format("ACG"))


def test_metadata(task: DnaTask) -> None:
    assert (task.slug, task.display_name, task.legacy_names) == ("dna", "DNA Translation", ("DNAProblem",))
    assert task.delimiter == " "


# -- the authors' reproduction data ----------------------------------------------------------------------
def test_paper_references_reproduced(task: DnaTask, paper_data: Path) -> None:
    (path,) = (paper_data / "DNA_dataset").glob("data-*.arrow")
    with path.open("rb") as fh:
        frame = pl.from_arrow(ipc.open_stream(fh).read_all())
    assert isinstance(frame, pl.DataFrame) and frame.height == 300
    for row in frame.iter_rows(named=True):
        assert task.solve(row["input"]) == row["reference"]
    counts = frame["input"].str.split(" ").list.len()
    assert (counts.min(), counts.max()) == (1, 199)
