"""The conformance checks (docs/extending.md §4): every built-in task and function passes them; broken
plugins are refused with the failed check named, before any job runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers.fake_plugins import env_with, fake_plugin

from saltbench.confidence import CONFIDENCE_FUNCTIONS, ConfidenceSpec
from saltbench.conformance import (
    CONFIDENCE_CHECKS,
    TASK_CHECKS,
    ConformanceError,
    check_confidence_function,
    check_task,
    confidence_failures,
    task_failures,
)
from saltbench.interventions import corruptor_for
from saltbench.tasks import BUILTIN_TASKS, DnaTask

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cls", BUILTIN_TASKS, ids=lambda c: c.slug)
@pytest.mark.parametrize("seed", [1, 2])
def test_every_built_in_task_passes_every_check(cls, seed) -> None:
    assert task_failures(cls, n=12, seed=seed, corrupt=corruptor_for) == []


@pytest.mark.parametrize("name", list(CONFIDENCE_FUNCTIONS))
def test_every_built_in_function_passes_every_check(name) -> None:
    assert confidence_failures(CONFIDENCE_FUNCTIONS[name]) == []


class _Flaky(DnaTask):
    """A generator that depends on a hidden counter: two calls differ."""

    calls = 0

    def generate(self, n, seed, **params):
        type(self).calls += 1
        return super().generate(n, seed + type(self).calls, **params)


class _WrongSolver(DnaTask):
    def solve(self, input: str) -> str:
        return input  # the input itself, not its complement


class _NoFence(DnaTask):
    def instruction(self) -> str:
        return "Complement it."

    def prompt(self, input, style="direct", n_shots=None):
        return f"{self.instruction()}\n{self.test_block(input)}"


class _Echo(DnaTask):
    """solve returns its input, and generate takes its references from solve: every check but the last
    passes (a model that echoes its prompt would score as correct)."""

    def solve(self, input: str) -> str:
        return input

    def generate(self, n, seed, **params):
        frame = super().generate(n, seed, **params)
        return frame.with_columns(reference=frame["input"])


class _BadCorruption(DnaTask):
    def corrupt_atom(self, atom, rng):
        return atom  # "corrupted" to itself: still correct


@pytest.mark.parametrize(
    ("cls", "check"),
    [
        (_Flaky, TASK_CHECKS[0]),
        (_WrongSolver, TASK_CHECKS[2]),
        (_NoFence, TASK_CHECKS[4]),
        (_BadCorruption, TASK_CHECKS[5]),
        (_Echo, TASK_CHECKS[6]),
    ],
)
def test_a_broken_task_fails_the_named_check(cls, check) -> None:
    assert check in [f.check for f in task_failures(cls)]
    with pytest.raises(ConformanceError, match=rf"task 'dna' \(.*\) fails the conformance check '{check}'"):
        check_task(cls)


def _spec(**changes) -> ConfidenceSpec:
    base = {
        "name": "broken",
        "higher_is_confident": True,
        "needs_calibration": False,
        "formula": "x",
        "token_score": lambda d: d.chosen,
    }
    return ConfidenceSpec(**{**base, **changes})


@pytest.mark.parametrize(
    ("spec", "check", "detail"),
    [
        (_spec(higher_is_confident="yes"), CONFIDENCE_CHECKS[0], "higher_is_confident must be True or False"),
        (_spec(reduce="median"), CONFIDENCE_CHECKS[0], "reduce 'median' is not one of"),
        (_spec(token_score=lambda d: d.chosen * 0 + float("nan")), CONFIDENCE_CHECKS[1], "has value nan"),
        (_spec(token_score=lambda d: d.chosen[:3]), CONFIDENCE_CHECKS[1], "returned shape (3,)"),
        (_spec(token_score=lambda d: d.chosen + np.arange(len(d.chosen))), CONFIDENCE_CHECKS[3], "reordered"),
        (
            _spec(token_score=lambda d: d.chosen + __import__("random").random()),
            CONFIDENCE_CHECKS[2],
            "two calls give different values",
        ),
    ],
)
def test_a_broken_function_fails_the_named_check(spec, check, detail) -> None:
    failures = {f.check: f.detail for f in confidence_failures(spec)}
    assert check in failures and detail in failures[check], failures
    with pytest.raises(
        ConformanceError, match=f"confidence function 'broken' fails the conformance check '{check}'"
    ):
        check_confidence_function(spec)


# -- plugins refused before any job -----------------------------------------------------------------------

BROKEN = textwrap.dedent(
    """
    from saltbench.tasks import DnaTask

    class Flaky(DnaTask):
        slug = "flaky"
        calls = 0

        def generate(self, n, seed, **params):
            type(self).calls += 1
            frame = super().generate(n, seed + type(self).calls, **params)
            return frame.with_columns(task=__import__("polars").lit("flaky"))

    class WrongSolver(DnaTask):
        slug = "wrongsolver"

        def generate(self, n, seed, **params):
            frame = super().generate(n, seed, **params)
            return frame.with_columns(task=__import__("polars").lit("wrongsolver"))

        def solve(self, input):
            return input
    """
)


@pytest.fixture(scope="module")
def broken_plugins(tmp_path_factory) -> Path:
    return fake_plugin(
        tmp_path_factory.mktemp("plugins"),
        "saltbench-broken",
        "saltbench_broken",
        BROKEN,
        {
            "saltbench.tasks": {
                "flaky": "saltbench_broken:Flaky",
                "wrongsolver": "saltbench_broken:WrongSolver",
            }
        },
    )


def _config(tmp_path: Path, tasks: list[str]) -> Path:
    cfg = yaml.safe_load((REPO / "config" / "test.yaml").read_text())
    cfg["tasks"] = tasks
    cfg["datasets"]["params"] = {}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize(("task", "check"), [("flaky", TASK_CHECKS[0]), ("wrongsolver", TASK_CHECKS[2])])
def test_a_broken_plugin_task_is_refused_by_the_config_check_naming_it(broken_plugins, tmp_path, task, check):
    proc = subprocess.run(
        [sys.executable, "-m", "saltbench.config", str(_config(tmp_path, ["dna", task]))],
        cwd=REPO,
        env=env_with(broken_plugins),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"tasks: task {task!r}" in proc.stderr and f"fails the conformance check '{check}'" in proc.stderr
    assert "of package saltbench-broken" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.workflow
def test_snakemake_refuses_a_broken_plugin_before_any_job(broken_plugins, tmp_path, copy_workflow):
    (tmp_path / "workflow").mkdir()
    workdir = copy_workflow(tmp_path / "workflow")
    config = _config(tmp_path, ["dna", "flaky"])
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--configfile", str(config)],
        cwd=workdir,
        env=env_with(broken_plugins),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "fails the conformance check 'generate is deterministic'" in proc.stdout + proc.stderr
    assert not (workdir / "data").exists()  # no job ran


def _check_configs(root: Path, *configs: Path) -> subprocess.CompletedProcess[str]:
    """``python -m saltbench.config CONFIG...`` with the plugins under ``root`` installed."""
    return subprocess.run(
        [sys.executable, "-m", "saltbench.config", *map(str, configs)],
        cwd=REPO,
        env=env_with(root),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_plugin_that_fails_to_import_stops_only_the_configurations_that_select_it(tmp_path) -> None:
    root = fake_plugin(
        tmp_path / "plugins",
        "saltbench-typo",
        "saltbench_typo",
        "import no_such_module\n",
        {"saltbench.confidence": {"typo": "saltbench_typo:SPEC"}},
    )
    selecting = tmp_path / "typo.yaml"
    cfg = yaml.safe_load((REPO / "config" / "test.yaml").read_text())
    cfg["scoring"] = {"confidence_functions": ["mean_margin", "typo"]}
    selecting.write_text(yaml.safe_dump(cfg))
    proc = _check_configs(root, REPO / "config" / "test.yaml", selecting)
    error = (
        "saltbench.confidence plugin 'typo' of package saltbench-typo (saltbench_typo:SPEC) failed to "
        "import: ModuleNotFoundError: No module named 'no_such_module'"
    )
    assert proc.returncode == 1
    assert f"{REPO / 'config' / 'test.yaml'}: valid" in proc.stdout  # it does not use the plugin
    assert f"saltbench: warning: {error}" in proc.stderr
    assert f"{selecting}: scoring.confidence_functions: {error}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_plugin_reusing_a_built_in_name_is_refused_where_the_name_is_selected(tmp_path) -> None:
    source = "from saltbench.tasks import DnaTask\nclass Again(DnaTask):\n    pass\n"
    root = fake_plugin(
        tmp_path / "plugins",
        "saltbench-again",
        "saltbench_again",
        source,
        {"saltbench.tasks": {"dna": "saltbench_again:Again"}},
    )
    (tmp_path / "dna").mkdir()
    (tmp_path / "matmul").mkdir()
    proc = _check_configs(root, _config(tmp_path / "dna", ["dna"]), _config(tmp_path / "matmul", ["matmul"]))
    assert proc.returncode == 1
    assert (
        "tasks: task plugin 'dna' (saltbench_again:Again) of package saltbench-again reuses the slug of a "
        "built-in task" in proc.stderr
    )
    assert f"{tmp_path / 'matmul' / 'config.yaml'}: valid" in proc.stdout
