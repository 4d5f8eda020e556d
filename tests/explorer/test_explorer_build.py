"""The explorer's data against the tables it is built from (a tiny simulated run; docs/explorer.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from saltbench.core.contracts import is_confidence_column
from saltbench.explorer import (
    CALLBACK,
    CellFiles,
    ExplorerOptions,
    build_explorer,
    corrupted_spans,
    orientation,
)
from saltbench.interventions import AnswerLayout
from saltbench.io import provenance, read_table, write_table
from saltbench.stages.imports import import_generations
from saltbench.stages.scoring import score_generations
from saltbench.tasks import get_task

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


def test_two_builds_of_the_same_run_are_the_same_bytes(sim_run, explorer, explorer_options, tmp_path) -> None:
    again = build_explorer(
        tmp_path / "again",
        sim_run.cells,
        sim_run.datasets,
        sim_run.interventions,
        options=explorer_options,
        meta={"version": "test"},
    )
    first = sorted(p.relative_to(explorer.path) for p in explorer.path.rglob("*") if p.is_file())
    assert first == sorted(p.relative_to(again.path) for p in again.path.rglob("*") if p.is_file())
    for name in first:
        assert (explorer.path / name).read_bytes() == (again.path / name).read_bytes(), name
    _, _, manifest = load(explorer.path / "data" / "index.js")
    assert list(manifest["lists"]) == sorted(manifest["lists"])


def strict_json(text: str) -> object:
    """JSON as a browser's ``JSON.parse`` reads it: ``NaN`` and ``Infinity`` are not JSON."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} in a data file")

    return json.loads(text, parse_constant=refuse)


def test_absent_and_infinite_log_probabilities_are_written_as_json(tmp_path) -> None:
    """An imported model whose responses lack log-probabilities, have fewer alternatives than shown, or
    −∞ among them: every data file is strict JSON — absent as null, −∞ as "-inf", no padding alternative."""
    dataset = get_task("dna").generate(4, 3, min_codons=2, max_codons=4)
    lines = []
    for k, (sample_id, reference) in enumerate(dataset.select("sample_id", "reference").iter_rows()):
        tokens = ["********\n", reference, "\n********"]
        line = {"sample_id": sample_id, "text": "".join(tokens), "tokens": tokens}
        if k == 1:  # two alternatives per token, fewer than the five shown
            line |= {
                "logprobs": [-0.1] * 3,
                "top_logprobs": [[-0.1, -2.5]] * 3,
                "top_tokens": [[t, "x"] for t in tokens],
            }
        elif k == 2:  # one alternative the model gave no probability
            line |= {
                "logprobs": [-0.1] * 3,
                "top_logprobs": [[-0.1, float("-inf")]] * 3,
                "top_tokens": [[t, "y"] for t in tokens],
            }
        lines.append(json.dumps(line) + "\n")  # rows 0 and 3: no log-probabilities
    (tmp_path / "g.jsonl").write_text("".join(lines), encoding="utf-8")
    frame = import_generations(
        tmp_path / "g.jsonl", "jsonl", {"dna": dataset}, model_name="imp", styles=["direct"], n_shots=None
    ).frames[("direct", "dna")]
    units = score_generations(frame, dataset, "dna").select(
        pl.lit("imp").alias("model"), pl.lit("direct").alias("style"), pl.lit("dna").alias("task"), pl.all()
    )
    paths = {
        kind: tmp_path / "data" / kind / "imp" / "direct" / "dna.parquet" for kind in ("units", "generations")
    }
    write_table(units, paths["units"], provenance(stage="units"), "units")
    write_table(frame, paths["generations"], provenance(stage="generations"), "generations")
    write_table(dataset, tmp_path / "dna.parquet", provenance(stage="datasets"), "dataset")
    cells = [CellFiles("imp", "direct", "dna", paths["units"], paths["generations"])]
    built = build_explorer(tmp_path / "explorer", cells, {"dna": tmp_path / "dna.parquet"})
    for path in (built.path / "data").iterdir():
        strict_json(PAYLOAD.match(path.read_text(encoding="utf-8")).group(3))  # type: ignore[union-attr]
    _, _, chunk = load(built.path / "data" / "chunk-0000.js")
    tokens = chunk["tokens"]  # the answer's one token: the fence lines are tokens of their own
    assert tokens[0]["lp"] == [None] and tokens[0]["kl"] == [[]]  # absent: null, and no alternatives
    assert tokens[1]["kl"] == [[-0.1, -2.5]] and [len(k) for k in tokens[1]["k"]] == [2]
    assert tokens[2]["kl"] == [[-0.1, "-inf"]] and tokens[2]["lp"] == [-0.1]
    confidences = chunk["units"]["atom"]["c"]["topk.mean_probability"]
    rows = chunk["units"]["atom"]["r"]
    assert all((value is None) == (r in (0, 3)) for value, r in zip(confidences, rows))
