"""The helpers of the workflow scripts: thread grants, per-task file lists, the thread line of every log."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from saltbench.workflow.rule_support import job_threads, per_task_files, setup_logging, thread_pools


def job(threads: int, tmp_path=None) -> SimpleNamespace:
    log = [str(tmp_path / "job.log")] if tmp_path is not None else []
    return SimpleNamespace(threads=threads, rule="some_rule", log=log)


@pytest.mark.parametrize(("granted", "configured", "used"), [(2, None, 2), (2, 1, 1), (2, 2, 2), (1, 4, 1)])
def test_job_threads_never_exceed_the_grant(granted, configured, used):
    assert job_threads(job(granted), configured) == used


def test_a_capped_thread_count_is_logged(caplog):
    with caplog.at_level(logging.WARNING):
        assert job_threads(job(2), 8) == 2
    assert "8 threads configured, 2 granted" in caplog.text


def test_per_task_files_refuses_lists_out_of_task_order():
    assert per_task_files(["dna"], ["a/dna.parquet"]) == [("dna", "a/dna.parquet")]
    with pytest.raises(ValueError, match="not the 'dna' file"):
        per_task_files(["dna", "code"], ["a/code.parquet", "a/dna.parquet"])
    with pytest.raises(ValueError, match="1 files for 2 tasks"):
        per_task_files(["dna", "code"], ["a/dna.parquet"])


def test_every_job_log_starts_with_its_thread_pools(tmp_path, monkeypatch):
    import sys

    import polars  # noqa: F401 - imported, so its pool is reported

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))  # setup_logging replaces them: restore after
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    setup_logging(job(1, tmp_path))
    first = (tmp_path / "job.log").read_text().splitlines()[0]
    assert first.endswith(f"threads: 1 granted; {thread_pools()}")
    assert "polars" in first


def test_report_front_page_opens_with_the_run_estimates(tmp_path):
    """Before a run the report's front page is the static text; after one, the findings page's opening
    section follows it (rewritten only when it changes)."""
    from saltbench.workflow.rule_support import report_text

    static = tmp_path / "workflow.rst"
    static.write_text("About the workflow.\n")
    findings, out = tmp_path / "findings.md", tmp_path / "out" / "workflow.rst"
    assert report_text(static, findings, out) == str(static)
    findings.write_text(
        "# Findings\n\nintro\n\n## What this run estimated\n\n- **a** 0.500 [0.1, 0.9].\n\n## 1. X\n\n- y\n"
    )
    assert report_text(static, findings, out) == str(out)
    heading = "What this run estimated\n-----------------------\n"
    assert out.read_text() == f"About the workflow.\n\n{heading}\n- **a** 0.500 [0.1, 0.9].\n"
    mtime = out.stat().st_mtime_ns
    report_text(static, findings, out)
    assert out.stat().st_mtime_ns == mtime


def test_model_names_with_an_at_render_as_names_in_the_report_front_page(tmp_path):
    """docutils (which renders the report's front page) would turn ``salt-tiny@final`` into a mailto link."""
    from docutils.core import publish_parts

    from saltbench.workflow.rule_support import report_text

    static, findings = tmp_path / "workflow.rst", tmp_path / "findings.md"
    static.write_text("About the workflow.\n")
    findings.write_text(
        "# Findings\n\n## What this run estimated\n\n- **salt-tiny@final** (direct, 0.500 answered).\n"
        "- reasoning model vs its sibling, salt-tiny-reason@final vs salt-tiny@final: Δ precision 0.1.\n"
        "- Planted truth: see `results/tables/recovery.csv`.\n"
    )
    page = report_text(static, findings, tmp_path / "out.rst")
    html = publish_parts(Path(page).read_text(encoding="utf-8"), writer_name="html")["body"]
    assert "mailto" not in html
    assert "salt-tiny-reason&#64;final vs salt-tiny&#64;final" in html
    assert "<strong>salt-tiny&#64;final</strong>" in html
