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
    ExplorerOptions,
    build_explorer,
    build_index,
    build_model_part,
    corrupted_spans,
    eligibility,
    opening_cell,
)
from saltbench.interventions import AnswerLayout
from saltbench.io import read_table

pytestmark = pytest.mark.slow  # the session's simulated run: ~10 s once

PAYLOAD = re.compile(rf"^{CALLBACK}\(\"(\w+)\",(\d+),(.*)\);\n$", re.S)


def load(path: Path) -> tuple[str, int, dict]:
    """The kind, id and data a data file hands to the page."""
    match = PAYLOAD.match(path.read_text(encoding="utf-8"))
    assert match, path
    return match.group(1), int(match.group(2)), json.loads(match.group(3))


def assert_same_files(one: Path, other: Path) -> None:
    """The two folders hold the same files with the same bytes."""
    names = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(other) for p in other.rglob("*") if p.is_file())
    for name in names:
        assert (one / name).read_bytes() == (other / name).read_bytes(), name


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


def test_missing_units_and_reference_counts_agree_with_the_units_table(
    sim_run, explorer, imported_explorer
) -> None:
    """Every response's reference_units is the count of its units with a reference unit (the units the
    scoring aligned against); the unfenced response of the imported cell has every one of them missing."""
    for cell_index in (2, 5):
        units = read_table(sim_run.cells[cell_index].units, "units")
        _, _, chunk = load(explorer.path / "data" / f"chunk-{cell_index:04d}.js")
        for granularity, counts in chunk["responses"]["reference_units"].items():
            part = units.filter(pl.col("granularity") == granularity)
            want = part.group_by("sample_id").agg(pl.col("reference_unit").is_not_null().sum())
            got = dict(zip(chunk["responses"]["sample_id"], counts))
            assert {s: got[s] for s in want["sample_id"]} == dict(want.iter_rows()), granularity
    built, dataset = imported_explorer
    _, _, chunk = load(built.path / "data" / "chunk-0000.js")
    assert chunk["responses"]["answer_status"][4] == "no_fence"
    atoms = chunk["units"]["atom"]
    statuses = [s for r, s in zip(atoms["r"], atoms["s"]) if r == 4]
    reference = dataset["reference"][4].split()
    assert (
        statuses
        == ["missing"] * len(reference)
        == ["missing"] * chunk["responses"]["reference_units"]["atom"][4]
    )


def test_a_chunk_summary_holds_the_cells_metrics_rows(sim_run, explorer) -> None:
    cell = sim_run.cells[5]
    _, _, chunk = load(explorer.path / "data" / "chunk-0005.js")
    metrics = read_table(cell.metrics, "metrics")
    precision = metrics.filter((pl.col("metric") == "precision") & (pl.col("granularity") == "line")).row(
        0, named=True
    )
    got = chunk["summary"]["precision"]["line"]
    assert got[:3] == pytest.approx([precision["value"], precision["ci_low"], precision["ci_high"]], abs=1e-4)
    assert got[3:] == [precision["n_units"], precision["n_responses"]]
    auroc = metrics.filter(
        (pl.col("metric") == "auroc_pooled")
        & (pl.col("granularity") == "atom")
        & (pl.col("confidence") == "max_entropy")
    ).row(0, named=True)
    assert chunk["summary"]["auroc"]["atom"]["topk.max_entropy"][0] == pytest.approx(auroc["value"], abs=1e-4)
    assert set(chunk["summary"]["auroc"]["atom"]) == {"topk.mean_probability", "topk.max_entropy"}


def test_eligibility_and_the_opening_cell_follow_the_answered_share(sim_run, explorer) -> None:
    """Answered share per (model, style) over every task; the page opens on the eligible (model, style)
    with the highest share, on its task with the most answered responses."""
    _, _, manifest = load(explorer.path / "data" / "index.js")
    units = pl.concat([read_table(c.units, "units") for c in sim_run.cells], how="vertical_relaxed")
    shares = (
        units.unique(["model", "style", "task", "sample_id"])
        .group_by("model", "style")
        .agg((pl.col("answer_status") == "answered").mean())
    )
    for entry in manifest["eligibility"]:
        share = shares.filter((pl.col("model") == entry["model"]) & (pl.col("style") == entry["style"]))
        assert entry["share"] == pytest.approx(share["answer_status"][0], abs=1e-4)
        assert entry["eligible"] == (entry["share"] >= 0.9)
    assert {e["model"] for e in manifest["eligibility"] if not e["eligible"]} == {"sim-planted-reason"}
    assert manifest["open"] == {"m": "sim-planted", "s": "direct", "t": "matmul"}
    chunks = [
        {"model": m, "style": "direct", "task": t, "responses": 10, "answered": a}
        for m, t, a in [
            ("mute", "dna", 0),
            ("mute", "logic", 0),
            ("good", "dna", 6),
            ("good", "logic", 8),
            ("same", "dna", 7),
            ("same", "logic", 7),
        ]
    ]
    entries = eligibility(chunks, 0.5)
    assert [(e["model"], e["share"], e["eligible"]) for e in entries] == [
        ("mute", 0.0, False),
        ("good", 0.7, True),
        ("same", 0.7, True),
    ]
    assert opening_cell(chunks, entries) == {
        "m": "good",
        "s": "direct",
        "t": "logic",
    }  # roster order breaks the tie
    assert opening_cell(chunks[:2], eligibility(chunks[:2], 0.5)) == {"m": "mute", "s": "direct", "t": "dna"}


def _page_lists(entries: list[list], sign: int, wrong: set[str], response: str | None, n: int) -> tuple:
    """The page's ranking of list entries (explorer.js ``filtered`` and ``ranked``): (sample, unit) pairs of
    "confident and wrong" and "unsure and right"."""
    kept = [e for e in entries if (e[4] == "correct" or e[4] in wrong) and response in (None, e[5])]

    def order(e: list, most: bool) -> tuple:
        return (-sign * e[6] if most else sign * e[6], e[0], e[1], e[3])

    top_wrong = sorted((e for e in kept if e[4] != "correct"), key=lambda e: order(e, True))[:n]
    top_right = sorted((e for e in kept if e[4] == "correct"), key=lambda e: order(e, False))[:n]
    return [(e[2], e[3]) for e in top_wrong], [(e[2], e[3]) for e in top_right]


@pytest.mark.parametrize(
    ("wrong", "response", "eligible_only"),
    [
        ({"incorrect", "redundant", "selective"}, None, False),
        ({"incorrect"}, "truncated", False),
        ({"redundant"}, None, True),
    ],
)
def test_the_task_lists_hold_the_extremes_of_every_filter(
    sim_run, explorer, wrong, response, eligible_only
) -> None:
    """The lists of every model on a task (data/lists-*.js), ranked as the page ranks them, are the extremes
    of the units tables for the filters, written out here from the tables (a lower-is-confident function)."""
    _, _, manifest = load(explorer.path / "data" / "index.js")
    entry = next(e for e in manifest["task_lists"] if (e["task"], e["style"]) == ("dna", "direct"))
    _, _, data = load(explorer.path / entry["file"])
    column, sign = "topk.max_entropy", -1
    chunks = {c["id"]: c for c in manifest["chunks"]}
    excluded = {e["model"] for e in manifest["eligibility"] if not e["eligible"] and e["style"] == "direct"}
    rows = [
        [e[0], e[1], data["samples"][e[2]], *e[3:]]
        for e in data["lists"][column]["atom"]
        if not (eligible_only and chunks[e[0]]["model"] in excluded)
    ]
    got = _page_lists(rows, sign, wrong, response, 10)
    expected_rows = []
    for index, cell in enumerate(sim_run.cells):
        if (cell.task, cell.style) != ("dna", "direct") or (eligible_only and cell.model in excluded):
            continue
        units = read_table(cell.units, "units").filter(
            (pl.col("granularity") == "atom") & (pl.col("status") != "missing") & pl.col(column).is_finite()
        )
        r_of = {s: r for r, s in enumerate(read_table(cell.generations, "generations")["sample_id"])}
        for row in units.iter_rows(named=True):
            expected_rows.append(
                [
                    index,
                    r_of[row["sample_id"]],
                    row["sample_id"],
                    row["unit_index"],
                    row["status"],
                    row["answer_status"],
                    round(row[column], 4),
                ]
            )
    assert got == _page_lists(expected_rows, sign, wrong, response, 10)
    assert got[0] or got[1]


def test_the_per_model_jobs_and_the_index_write_the_one_process_build(
    sim_run, explorer, explorer_options, tmp_path
) -> None:
    """The workflow's split (one build_model_part per model, chunk ids numbered as rules/explorer.smk
    numbers them, then build_index) writes the same files, byte for byte, as build_explorer."""
    models = list(dict.fromkeys(c.model for c in sim_run.cells))
    per_model = len(sim_run.cells) // len(models)
    parts = []
    for index, model in enumerate(models):
        parts.append(tmp_path / "parts" / model)
        cells = [c for c in sim_run.cells if c.model == model]
        build_model_part(
            parts[-1], cells, sim_run.datasets, first_id=index * per_model, options=explorer_options
        )
    split = build_index(
        tmp_path / "split",
        parts,
        sim_run.datasets,
        sim_run.interventions,
        options=explorer_options,
        meta={"version": "test"},
    )
    assert_same_files(explorer.path, split.path)
    with pytest.raises(ValueError, match="its chunks start at 4, expected 0"):
        build_index(tmp_path / "bad", parts[1:], sim_run.datasets)


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
    with pytest.raises(ValueError, match=r"eligible_answered_share must be in \[0, 1\], got 1.5"):
        ExplorerOptions(eligible_answered_share=1.5)
    with pytest.raises(ValueError, match="alignment must be one of"):
        ExplorerOptions(alignment="fuzzy")


def test_two_builds_of_the_same_run_are_the_same_bytes(sim_run, explorer, explorer_options, tmp_path) -> None:
    again = build_explorer(
        tmp_path / "again",
        sim_run.cells,
        sim_run.datasets,
        sim_run.interventions,
        options=explorer_options,
        meta={"version": "test"},
    )
    assert_same_files(explorer.path, again.path)


def strict_json(text: str) -> object:
    """JSON as a browser's ``JSON.parse`` reads it: ``NaN`` and ``Infinity`` are not JSON."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} in a data file")

    return json.loads(text, parse_constant=refuse)


def test_absent_and_infinite_log_probabilities_are_written_as_json(imported_explorer) -> None:
    """An imported model whose responses lack log-probabilities, have fewer alternatives than shown, or
    −∞ among them: every data file is strict JSON — absent as null, −∞ as "-inf", no padding alternative."""
    built, _ = imported_explorer
    for path in (built.path / "data").iterdir():
        strict_json(PAYLOAD.match(path.read_text(encoding="utf-8")).group(3))  # type: ignore[union-attr]
    _, _, chunk = load(built.path / "data" / "chunk-0000.js")
    tokens = chunk["tokens"]  # the answer's one token: the fence lines are tokens of their own
    assert tokens[0]["lp"] == [None] and tokens[0]["kl"] == [[]]  # absent: null, and no alternatives
    assert tokens[1]["kl"] == [[-0.1, -2.5]] and [len(k) for k in tokens[1]["k"]] == [2]
    assert tokens[2]["kl"] == [[-0.1, "-inf"]] and tokens[2]["lp"] == [-0.1]
    confidences = chunk["units"]["atom"]["c"]["topk.mean_probability"]
    rows = chunk["units"]["atom"]["r"]
    statuses = chunk["units"]["atom"]["s"]
    assert all(
        (value is None) == (r in (0, 3) or s == "missing") for value, r, s in zip(confidences, rows, statuses)
    )
