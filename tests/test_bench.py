"""Every bench script still runs (docs/performance.md): its help and each subcommand's, and the cheap ones at
a tiny size; the before/after harness of ``bench/compare.py`` and the run comparison of
``bench/compare_runs.py`` on small inputs.

The scripts run in this process (``runpy``, as ``python bench/x.py`` would run them), so an import that no
longer resolves, an option that argparse refuses or a workload that broke with the package fails here in
seconds. What they measure is printed, never asserted.
"""

from __future__ import annotations

import json
import logging
import pickle
import re
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"

SUBCOMMANDS: dict[str, tuple[str, ...]] = {
    "bench_ccp.py": (),
    "bench_confidence.py": (),
    "bench_draws_scoring.py": (),
    "bench_evaluation.py": ("throughput", "memory", "consistency"),
    "bench_explorer.py": (),
    "bench_import.py": (),
    "bench_inference.py": ("hf", "backends", "server", "groups", "interventions", "draws"),
    "bench_io.py": ("tables", "manifest"),
    "bench_paper_size.py": (),
    "bench_plan.py": (),
    "bench_simulated.py": ("speed", "coverage"),
    "bench_tiny_recipe.py": (),
    "compare.py": ("evaluation", "confidence", "metrics", "planning"),
    "compare_runs.py": (),
    "compare_validation.py": (),
    "crosscheck_ccp_lmpolygraph.py": (),
    "crosscheck_second_pass_anchors.py": (),
    "crosscheck_token_functions_lmpolygraph.py": (),
    "measure_fence_rules.py": (),
}
"""Every Python script of bench/ and its subcommands (files starting with ``_`` are shared modules)."""

TINY: dict[str, list[str]] = {
    "ccp": ["bench_ccp.py", "--n", "30", "--repeats", "1"],
    "confidence": ["bench_confidence.py", "--units", "2000"],
    "evaluation throughput": ["bench_evaluation.py", "throughput", "--n", "60", "--chunk", "30"],
    "evaluation memory, one case": [
        "bench_evaluation.py",
        "memory",
        "--case",
        "dna/evaluate",
        "--units",
        "300",
    ],
    "evaluation consistency": ["bench_evaluation.py", "consistency", "--n", "40", "--draws", "3"],
    "io tables": ["bench_io.py", "tables", "--rows", "2", "--tokens", "8", "--repeats", "1"],
    "import": ["bench_import.py", "--rows", "4", "--tokens", "8", "--repeats", "1"],
    "simulated speed": ["bench_simulated.py", "speed", "--codons", "4", "--samples", "3", "--repeats", "1"],
    "fence rules": ["measure_fence_rules.py"],
    "second-pass anchors, none installed": ["crosscheck_second_pass_anchors.py", "--cases", "30"],
    "token-function anchors, none installed": ["crosscheck_token_functions_lmpolygraph.py", "--cases", "30"],
}
"""Scripts whose whole measurement takes well under a second at these sizes."""


def run_script(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """Run ``bench/argv[0]`` as ``__main__`` with ``argv[1:]``; its exit status (0 when it returns). A script
    may quiet the ``saltbench`` logger as a script does; its level is restored for the tests after it."""
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.setattr(sys, "argv", [str(BENCH / argv[0]), *argv[1:]])
    package_logger = logging.getLogger("saltbench")
    level = package_logger.level
    try:
        runpy.run_path(str(BENCH / argv[0]), run_name="__main__")
    except SystemExit as exc:
        return 0 if exc.code is None else int(exc.code)
    finally:
        package_logger.setLevel(level)  # setLevel, not an attribute: it clears the loggers' cached levels
    return 0


def test_every_script_is_listed() -> None:
    scripts = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(SUBCOMMANDS)


@pytest.mark.parametrize(
    "argv",
    [[script, *sub, "--help"] for script, subs in SUBCOMMANDS.items() for sub in [(), *((s,) for s in subs)]],
    ids=lambda argv: " ".join(argv[:-1]),
)
def test_help(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_script(argv, monkeypatch) == 0
    assert capsys.readouterr().out.startswith("usage:")


def test_subcommands_are_the_scripts_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A subcommand that does not exist is refused (so the list above is the scripts' own)."""
    for script, subs in SUBCOMMANDS.items():
        if subs:
            assert run_script([script, "no-such-command"], monkeypatch) == 2


def test_docs_cite_existing_scripts() -> None:
    """Every bench script the README, the docs and the code's docstrings name is in bench/."""
    pattern = re.compile(r"\b(?:bench/)?((?:bench|compare|measure)_?\w*\.(?:py|sh))\b")
    texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    texts += [
        p for folder in ("src", "tests", "workflow_scripts") for p in sorted((REPO / folder).rglob("*.py"))
    ]
    cited = {
        (m.group(1), path.name) for path in texts for m in pattern.finditer(path.read_text(encoding="utf-8"))
    }
    missing = sorted((name, page) for name, page in cited if not (BENCH / name).is_file())
    assert not missing
    assert ("bench_inference.py", "performance.md") in cited


def test_vllm_install_help() -> None:
    done = subprocess.run(
        ["bash", str(BENCH / "bench_vllm_install.sh"), "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "Usage: bash bench/bench_vllm_install.sh" in done.stdout


@pytest.mark.parametrize("argv", TINY.values(), ids=TINY.keys())
def test_tiny_run(
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    assert run_script(argv, monkeypatch) == 0
    assert capsys.readouterr().out or caplog.text  # printed or logged what it measured


@pytest.fixture
def compare(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201 - the bench module
    monkeypatch.syspath_prepend(str(BENCH))
    import compare

    return compare


WORKLOAD_OPTIONS = {
    "evaluation": {"n": 6, "seed": 0, "wrong": 0.2},
    "confidence": {"units": 300, "single_units": 20, "seed": 0},
    "metrics": {"samples": [3], "atoms": [2, 5], "units": "", "n_bootstrap": 2, "seed": 0},
}


@pytest.mark.parametrize("workload", WORKLOAD_OPTIONS)
def test_compare_worker(workload: str, compare, tmp_path: Path) -> None:  # noqa: ANN001
    """A worker's side of a round (what ``compare.py`` runs in each tree) at a tiny size: every case timed,
    its results plain data that two runs agree on, and a changed result caught."""
    out = tmp_path / "side.pkl"
    options = json.dumps(WORKLOAD_OPTIONS[workload])
    assert compare.main(["--worker", workload, "1", str(out), options]) == 0
    first = pickle.loads(out.read_bytes())
    assert first["times"].keys() == first["results"].keys() and all(t >= 0 for t in first["times"].values())
    second = compare.run_cases(workload, json.loads(options), 1)
    assert compare.same(first["results"], second["results"])
    name = next(iter(first["results"]))
    assert not compare.same(first["results"], {**second["results"], name: None})


def test_same_compares_floats_within_tolerance(compare) -> None:  # noqa: ANN001
    assert compare.same({"a": [1.0, float("nan")]}, {"a": (1.0 + 1e-13, float("nan"))})
    assert not compare.same({"a": 1.0}, {"a": 1.0 + 1e-9})
    assert compare.same(np.array([0.5, np.nan]), np.array([0.5, np.nan]))
    assert not compare.same(np.array([1, 2]), np.array([1, 3]))


def _run_folder(root: Path, values: list[float], units: pl.DataFrame) -> Path:
    """A run folder with one table (plain Parquet) and one units file (written with its contract)."""
    from saltbench.io import provenance, write_table

    (root / "results/tables").mkdir(parents=True)
    pl.DataFrame({"cell": ["a", "b"], "value": values}).write_parquet(root / "results/tables/t.parquet")
    write_table(units, root / "data/units/m/direct.parquet", provenance(stage="units", model="m"), "units")
    return root


def test_compare_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two run folders: equal, a table float apart (within and beyond ``--atol``), a units score halved, a
    file only in one."""
    from helpers.synthetic_tables import synthetic_units

    units = synthetic_units(
        models=("m",), styles=("direct",), tasks=("dna",), n_samples=3, atoms_per_sample=(2, 4), seed=0
    )
    old = _run_folder(tmp_path / "old", [0.5, float("nan")], units)
    new = _run_folder(tmp_path / "new", [0.5 + 1e-9, float("nan")], units)
    same = _run_folder(tmp_path / "same", [0.5, float("nan")], units)
    score = next(c for c in units.columns if units[c].dtype == pl.Float64)  # a confidence column
    changed = _run_folder(tmp_path / "changed", [0.5, float("nan")], units.with_columns(pl.col(score) * 0.5))
    compare_runs = ["compare_runs.py", str(old)]
    assert run_script([*compare_runs, str(same), "--atol", "0"], monkeypatch) == 0
    assert run_script([*compare_runs, str(new), "--atol", "0"], monkeypatch) == 1
    assert run_script([*compare_runs, str(new), "--atol", "1e-6"], monkeypatch) == 0
    assert run_script([*compare_runs, str(changed), "--atol", "1e-6"], monkeypatch) == 1
    pl.DataFrame({"x": [1]}).write_parquet(same / "results/tables/extra.parquet")
    assert run_script([*compare_runs, str(same), "--atol", "0"], monkeypatch) == 1
    assert run_script(["compare_runs.py", str(old)], monkeypatch) == 2  # neither two runs nor --base


def _benchmarks(root: Path, seconds: float) -> None:
    """Snakemake benchmark files of the analysis half (one job per stage and the explorer)."""
    for name in ("units/m.tsv", "metrics/m.tsv", "tables/t.tsv", "figures/f.tsv", "explorer.tsv"):
        path = root / "benchmarks" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"s\th:m:s\tmax_rss\tcpu_time\n{seconds}\t0:00:01\t100.0\t{seconds / 2}\n")


def test_paper_size_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench_paper_size.py's measurements of two sizes read from benchmark files, then its --report table."""
    monkeypatch.syspath_prepend(str(BENCH))
    paper_size = runpy.run_path(str(BENCH / "bench_paper_size.py"))
    runs = []
    for generations, seconds in ((100, 2.0), (200, 4.0)):
        _benchmarks(tmp_path / str(generations), seconds)
        stages = paper_size["stage_costs"](tmp_path / str(generations))
        stages["report"] = {"jobs": 1, "wall_s": 1.0, "cpu_s": 1.0, "longest_s": 1.0, "peak_rss_mib": 50.0}
        run = {"label": f"{generations}", "generations": generations, "models": 2, "stages": stages}
        runs.append({**run, "analysis": {"wall_s": 10.0}, "disk_mib": {"results": 1.0}})
    assert runs[1]["stages"]["score_units"] == {
        "jobs": 1,
        "wall_s": 4.0,
        "cpu_s": 2.0,
        "longest_s": 4.0,
        "longest_job": "units/m",
        "longest_cpu_s": 2.0,
        "longest_cpu_job": "units/m",
        "peak_rss_mib": 100.0,
        "floor_s": 0.0,  # one job: no start-up set apart
        "floor_cpu_s": 0.0,
    }
    (tmp_path / "runs.json").write_text(json.dumps({"runs": runs}))
    assert run_script(["bench_paper_size.py", "--report", str(tmp_path / "runs.json")], monkeypatch) == 0
    table = capsys.readouterr().out
    assert "| score_units | 1 (100) | 2 (100) | 1.00 |" in table
    # one run alone, and a run that lacks a stage another measured (the explorer): a prediction each
    (tmp_path / "one.json").write_text(json.dumps({"runs": runs[1:]}))
    assert run_script(["bench_paper_size.py", "--report", str(tmp_path / "one.json")], monkeypatch) == 0
    assert "| score_units | 2 (100) | nan |" in capsys.readouterr().out
    del runs[0]["stages"]["explorer"]
    (tmp_path / "mixed.json").write_text(json.dumps({"runs": runs}))
    assert run_script(["bench_paper_size.py", "--report", str(tmp_path / "mixed.json")], monkeypatch) == 0
    assert "| explorer | – | 2 (100) | nan |" in capsys.readouterr().out


def test_paper_size_prediction_scales_a_per_model_job_by_its_models_samples(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model-subset run answers every sample of its models: its per-model jobs are already at full size,
    while its aggregate jobs and every stage's CPU time grow with the whole roster's generations."""
    monkeypatch.syspath_prepend(str(BENCH))
    predict = runpy.run_path(str(BENCH / "bench_paper_size.py"))["predict"]
    cost = {"jobs": 4, "wall_s": 8.0, "cpu_s": 8.0, "longest_s": 2.0, "peak_rss_mib": 10.0}
    stages = {"score_units": cost, "tables": cost}
    subset = {"generations": 400, "models": 4, "stages": stages, "disk_mib": {"results": 1.0}}
    out = predict([subset], full=5900, full_models=59)
    assert out["stages"]["score_units"]["longest_s"] == pytest.approx(2.0)  # 100 generations per model
    assert out["stages"]["tables"]["longest_s"] == pytest.approx(2.0 * 5900 / 400)
    assert out["stages"]["score_units"]["cpu_s"] == pytest.approx(8.0 * 5900 / 400)
    fraction = {**subset, "generations": 590, "models": 59}  # a tenth of every model's samples
    assert predict([fraction], full=5900, full_models=59)["stages"]["score_units"]["longest_s"] == 20.0


def test_paper_size_prediction_keeps_each_jobs_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's start-up (its stage's fastest job) does not grow with the samples: only the rest is scaled;
    a model-subset run's per-model stage has the roster's jobs, each with its start-up."""
    monkeypatch.syspath_prepend(str(BENCH))
    predict = runpy.run_path(str(BENCH / "bench_paper_size.py"))["predict"]
    cost = {
        "jobs": 4,
        "cpu_s": 8.0,
        "longest_s": 2.0,
        "peak_rss_mib": 1.0,
        "floor_s": 1.0,
        "floor_cpu_s": 1.0,
    }
    fraction = {
        "generations": 590,
        "models": 59,
        "stages": {"table_parts": cost, "tables": cost},
        "disk_mib": {},
    }
    out = predict([fraction], full=5900, full_models=59)["stages"]
    assert out["table_parts"] == out["tables"]
    assert out["tables"]["longest_s"] == pytest.approx(1 + 1 * 10) and out["tables"][
        "cpu_s"
    ] == pytest.approx(4 + 4 * 10)
    subset = {**fraction, "generations": 400, "models": 4}
    out = predict([subset], full=5900, full_models=59)["stages"]
    assert out["table_parts"]["longest_s"] == 2.0 and out["table_parts"]["cpu_s"] == pytest.approx(
        8 * 5900 / 400
    )


def test_the_paper_size_tables_of_the_docs_are_what_the_script_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/performance.md §5 states the tables that bench_paper_size.py --report prints from the run it
    describes (its --out files, bench/paper_size*.json), character for character."""
    outs = [str(BENCH / "paper_size.json"), str(BENCH / "paper_size_2_models.json")]
    assert run_script(["bench_paper_size.py", "--report", *outs], monkeypatch) == 0
    tables = [t.strip() for t in capsys.readouterr().out.split("\n\n") if t.strip()]
    page = (REPO / "docs/performance.md").read_text(encoding="utf-8")
    assert len(tables) == 2 and all(table in page for table in tables)
