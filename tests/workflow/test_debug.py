"""Running one rule's script by hand (saltbench.workflow.debug) on a hand-made job: where the outputs go, what
the script sees, what stops it. The jobs Snakemake resolves from the workflow itself, and their outputs
byte for byte against a run's, are tested where a run already happens: tests/workflow/test_workflow.py
(build_dataset) and tests/workflow/test_simulated_workflow.py (table_recovery)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from snakemake.iocontainers import InputFiles, Log, OutputFiles, Params, ResourceList, Snakemake, Wildcards

from saltbench.workflow.debug import THREAD_VARIABLES, DebugError, RuleJob, main, relocated, run_rule_script

SCRIPT = """
from pathlib import Path

def main(snakemake):
    text = Path(snakemake.input.source).read_text() + snakemake.params.suffix + snakemake.wildcards.task
    Path(snakemake.output.table).write_text(text)
    Path(snakemake.log[0]).write_text(f"{__name__} {snakemake.rule} {snakemake.threads}")

main(snakemake)  # noqa: F821
"""


def job(root: Path, source: str = "data/in.txt") -> RuleJob:
    """A job of a rule ``copy`` as Snakemake would pass it to ``script.py``."""
    (root / "script.py").write_text(SCRIPT, encoding="utf-8")
    obj = Snakemake(
        InputFiles(fromdict={"source": source}),
        OutputFiles(fromdict={"table": "results/out.txt"}),
        Params(fromdict={"suffix": "-"}),
        Wildcards(fromdict={"task": "dna"}),
        3,
        ResourceList(fromdict={"mem_mb": 10}),
        Log(["logs/copy.log"]),
        {},
        "copy",
        None,
    )
    return RuleJob(obj, root / "script.py", root, ("config/x.yaml",), "results/out.txt")


@pytest.fixture()
def isolated(monkeypatch):
    """The script's changes to this process (thread variables, ``sys.path``) undone after the test."""
    for name in THREAD_VARIABLES:
        monkeypatch.setenv(name, "1")
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_a_relocated_job_writes_its_outputs_and_log_under_the_folder(tmp_path, isolated):
    (tmp_path / "data").mkdir()
    (tmp_path / "data/in.txt").write_text("x", encoding="utf-8")
    moved = relocated(job(tmp_path), "debug")
    assert moved.snakemake.output.table == "debug/results/out.txt"  # names kept
    assert list(moved.snakemake.input) == ["data/in.txt"]
    assert moved.target == "results/out.txt"  # the rule's own output, a Snakemake target
    run_rule_script(moved)
    assert (tmp_path / "debug/results/out.txt").read_text(encoding="utf-8") == "x-dna"
    assert (tmp_path / "debug/logs/copy.log").read_text(encoding="utf-8") == "__main__ copy 3"
    assert not (tmp_path / "results").exists()
    assert all(os.environ[name] == "3" for name in THREAD_VARIABLES)  # the job's threads


def test_missing_inputs_are_named_with_the_command_that_builds_them(tmp_path):
    with pytest.raises(DebugError) as caught:
        run_rule_script(job(tmp_path, source="data/absent.txt"))
    message = str(caught.value)
    assert "rule copy: 1 input file(s) missing (data/absent.txt)" in message
    assert "snakemake --cores N results/out.txt --configfile config/x.yaml --omit-from copy" in message
    assert not (tmp_path / "results").exists() and not (tmp_path / "logs").exists()


def test_a_wildcard_without_a_value_is_refused_before_the_workflow_loads(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["build_dataset", "task"])
    assert stopped.value.code == 2
    assert "wildcards are WILDCARD=VALUE: task" in capsys.readouterr().err
