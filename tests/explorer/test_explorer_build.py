"""The explorer's data against the tables it is built from (a tiny simulated run; docs/explorer.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from saltbench.core.contracts import is_confidence_column
from saltbench.explorer import CALLBACK, ExplorerOptions, corrupted_spans, orientation
from saltbench.interventions import AnswerLayout
from saltbench.io import read_table

pytestmark = pytest.mark.slow  # the session's simulated run: ~10 s once

PAYLOAD = re.compile(rf"^{CALLBACK}\(\"(\w+)\",(\d+),(.*)\);\n$", re.S)


def load(path: Path) -> tuple[str, int, dict]:
    """The kind, id and data a data file hands to the page."""
    match = PAYLOAD.match(path.read_text(encoding="utf-8"))
    assert match, path
    return match.group(1), int(match.group(2)), json.loads(match.group(3))


def test_every_cell_has_a_chunk_listed_in_the_manifest(sim_run, explorer) -> None:
    kind, _, manifest = load(explorer.path / "data" / "index.js")
    assert kind == "index"
    assert [(c["model"], c["style"], c["task"]) for c in manifest["chunks"]] == [
        (c.model, c.style, c.task) for c in sim_run.cells
    ]
    for entry in manifest["chunks"]:
        kind, ident, chunk = load(explorer.path / entry["file"])
        assert (kind, ident) == ("chunk", entry["id"])
        assert (chunk["model"], chunk["style"], chunk["task"]) == (
            entry["model"],
            entry["style"],
            entry["task"],
        )
    for name in ("index.html", "explorer.js", "explorer.css"):
        assert (explorer.path / name).stat().st_size > 500
    assert explorer.n_bytes == sum(p.stat().st_size for p in explorer.path.rglob("*") if p.is_file())


@pytest.mark.parametrize("cell_index", [0, 5])
def test_a_chunk_holds_every_unit_of_its_table_with_its_status_span_and_confidences(
    sim_run, explorer, cell_index
) -> None:
    cell = sim_run.cells[cell_index]
    _, _, chunk = load(explorer.path / "data" / f"chunk-{cell_index:04d}.js")
    units = read_table(cell.units, "units")
    generations = read_table(cell.generations, "generations")
    assert chunk["responses"]["sample_id"] == generations["sample_id"].to_list()
    r_of = {s: r for r, s in enumerate(chunk["responses"]["sample_id"])}
    columns = [c for c in units.columns if is_confidence_column(c)]
    for granularity, part in units.group_by("granularity"):
        got = chunk["units"][str(granularity[0])]
        expected = part.sort(pl.col("sample_id").replace_strict(r_of), "unit_index")
        assert got["r"] == [r_of[s] for s in expected["sample_id"]]
        assert got["s"] == expected["status"].cast(pl.String).to_list()
        assert got["a"] == expected["span_start"].to_list() and got["b"] == expected["span_end"].to_list()
        for column in columns:
            want = expected[column].fill_nan(None).to_list()
            assert [v is None for v in got["c"][column]] == [v is None for v in want]
            assert all(abs(a - b) <= 1e-4 for a, b in zip(got["c"][column], want) if b is not None)


def test_the_tokens_of_every_unit_spell_its_text(sim_run, explorer) -> None:
    """Each unit's span [a, b) is covered by the answer tokens kept for hovering."""
    cell = sim_run.cells[3]
    _, _, chunk = load(explorer.path / "data" / "chunk-0003.js")
    texts = chunk["responses"]["text"]
    atoms = chunk["units"]["atom"]
    checked = 0
    for r, a, b in zip(atoms["r"], atoms["a"], atoms["b"]):
        if a is None:
            continue
        tokens = chunk["tokens"][r]
        ends = tokens["o"][1:] + [len(texts[r])]
        covering = [k for k, (o, e) in enumerate(zip(tokens["o"], ends)) if o < b and e > a]
        joined = "".join(tokens["t"][k] for k in covering)
        start = tokens["o"][covering[0]]
        assert joined[a - start : b - start] == texts[r][a:b]
        assert all(len(tokens["k"][k]) == len(tokens["kl"][k]) <= 5 for k in covering)
        checked += 1
    assert checked > 20, cell


def test_precision_per_response_is_correct_over_response_units_plus_internal_missing(
    sim_run, explorer
) -> None:
    """Written out here: precision = C / (R + I), I = missing units before a later response unit."""
    cell = sim_run.cells[1]
    _, _, chunk = load(explorer.path / "data" / "chunk-0001.js")
    units = read_table(cell.units, "units").filter(pl.col("granularity") == "atom")
    for r, sample in enumerate(chunk["responses"]["sample_id"]):
        statuses = units.filter(pl.col("sample_id") == sample).sort("unit_index")["status"].to_list()
        written = [i for i, s in enumerate(statuses) if s != "missing"]
        internal = sum(1 for i, s in enumerate(statuses) if s == "missing" and written and i < written[-1])
        denominator = len(written) + internal
        expected = statuses.count("correct") / denominator if denominator else 0.0
        assert chunk["responses"]["precision"]["atom"][r] == pytest.approx(expected, abs=1e-4)


def test_the_run_lists_hold_the_most_confident_wrong_and_least_confident_right_units(
    sim_run, explorer
) -> None:
    _, _, manifest = load(explorer.path / "data" / "index.js")
    column = "topk.max_entropy"  # lower is more confident: the orientation matters
    assert orientation(column) == -1
    units = pl.concat([read_table(c.units, "units") for c in sim_run.cells], how="vertical_relaxed")
    atoms = units.filter(
        (pl.col("granularity") == "atom") & (pl.col("status") != "missing") & pl.col(column).is_finite()
    )
    lists = manifest["lists"][column]["atom"]
    wrong = atoms.filter(pl.col("status") != "correct")[column].sort().head(10).round(4).to_list()
    right = atoms.filter(pl.col("status") == "correct")[column].sort(descending=True).head(10).round(4)
    assert [e[4] for e in lists["wrong"]] == wrong
    assert [e[4] for e in lists["right"]] == right.to_list()
    assert {e[3] for e in lists["wrong"]} <= {"incorrect", "redundant", "selective"}


def test_corrupted_atoms_are_marked_where_the_prefix_holds_them(sim_run, explorer) -> None:
    _, _, manifest = load(explorer.path / "data" / "index.js")
    (entry,) = manifest["interventions"]
    _, _, chunk = load(explorer.path / entry["file"])
    rows = read_table(sim_run.interventions[0], "interventions")
    assert sum(len(v) for v in chunk["samples"].values()) == rows.height
    marked = 0
    for shown in (row for sample in chunk["samples"].values() for row in sample):
        assert len(shown["spans"]) == shown["n_corrupted"]
        for (a, b), atom in zip(shown["spans"], shown["corrupted_atoms"]):
            assert shown["prefix"][a:b] == atom
            marked += 1
    assert marked > 0


def test_a_prefix_that_is_not_the_layouts_beginning_is_not_marked() -> None:
    layout = AnswerLayout.from_reference("1 2\n3 4", "matmul")
    assert corrupted_spans(layout, layout.text[:-8] + "9", [1], ["7"]) is None
    changed = layout.substitute({2: "17"})
    prefix = changed.text[: changed.starts[2]]
    assert corrupted_spans(layout, prefix, [2], ["17"]) == [[changed.starts[1], changed.ends[1]]]
    assert prefix[changed.starts[1] : changed.ends[1]] == "17"


def test_options_name_the_bad_value() -> None:
    with pytest.raises(ValueError, match="top_k must be >= 1, got 0"):
        ExplorerOptions(top_k=0)
