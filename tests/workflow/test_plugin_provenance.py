"""Plugins are part of the provenance (docs/extending.md §5): an output records the plugin packages it used,
and a new version or edited code of a plugin makes the outputs that used it stale — a kept copy of a shard
too (docs/reliability.md §2.3) — while the outputs of built-in tasks stay current. A plugin whose generator
fails on its parameters is refused by the configuration check, before any job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.fake_plugins import env_with, fake_plugin

from saltbench.io import read_provenance
from saltbench.workflow.kept import finish_run, kept_path

pytestmark = pytest.mark.workflow

SOURCE = '''from saltbench.tasks import DnaTask


class MiniTask(DnaTask):
    """DNA complement under another slug; its parameters are checked only when it generates."""

    slug = "mini"
    display_name = "Mini DNA"
    label = "Mini"
    params_class = None

    def generate(self, n, seed, **params):
        low, high = params.get("min_codons", 1), params.get("max_codons", 8)
        if low > high:
            raise ValueError(f"empty range for randrange({low}, {high + 1})")
        return super().generate(n, seed, **params)
'''


def _plugin(root: Path, source: str = SOURCE, version: str = "0.1") -> dict[str, str]:
    fake_plugin(
        root, "saltbench-mini", "miniplug", source, {"saltbench.tasks": {"mini": "miniplug:MiniTask"}}
    )
    metadata = next(root.glob("*.dist-info")) / "METADATA"
    metadata.write_text(f"Metadata-Version: 2.1\nName: saltbench-mini\nVersion: {version}\n")
    return env_with(root)


def _snakemake(
    workdir: Path, env: dict[str, str], *args: str, config: str = "config/mini.yaml"
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "snakemake", *args, "--cores", "1", "--configfile", config]
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture()
def workdir(tmp_path, copy_workflow, repo_root) -> Path:
    (tmp_path / "workflow").mkdir()
    root = copy_workflow(tmp_path / "workflow")
    config = yaml.safe_load((repo_root / "config" / "test.yaml").read_text())
    config.update(tasks=["mini", "dna"], models=["sim-planted"])  # a simulated model: no weights to load
    config["inference"].pop("backend")
    config["datasets"]["n_samples"] = 3
    config["datasets"]["params"] = {"mini": {"max_codons": 4}, "dna": {"max_codons": 4}}
    (root / "config" / "mini.yaml").write_text(yaml.safe_dump(config))
    return root


TARGETS = ("data/datasets/mini.parquet", "data/datasets/dna.parquet")
SHARD = "data/generations/sim-planted/direct/mini/shard-0.parquet"


def test_a_plugin_is_recorded_and_a_change_of_it_makes_its_outputs_stale(workdir, tmp_path) -> None:
    plugin = tmp_path / "plugin"
    env = _plugin(plugin)
    first = _snakemake(workdir, env, *TARGETS, SHARD)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    recorded = read_provenance(workdir / TARGETS[0])["plugins"]
    assert list(recorded) == ["saltbench.tasks:mini"]
    assert recorded["saltbench.tasks:mini"].startswith("saltbench-mini 0.1, source ")
    assert "Nothing to be done" in _snakemake(workdir, env, "-n", *TARGETS).stdout

    def planned(env: dict[str, str]) -> list[str]:
        out = _snakemake(workdir, env, "-n", *TARGETS).stdout
        return sorted(
            line.split("output: ", 1)[1] for line in out.splitlines() if "output: data/datasets" in line
        )

    edited = _plugin(
        plugin, SOURCE + "\n\ndef helper():\n    return 1\n"
    )  # an editable install's code edited
    assert planned(edited) == [TARGETS[0]]  # the built-in task's dataset stays current
    assert planned(_plugin(plugin, version="0.2")) == [TARGETS[0]]  # a new version

    # a kept copy of a generations shard (docs/reliability.md §2.3) that Snakemake deleted (a failed group
    # job) is not restored once the plugin changed: the shard is computed again
    _plugin(plugin, SOURCE + "\n\ndef helper():\n    return 2\n")
    (workdir / SHARD).unlink()
    assert finish_run([workdir / "data"]) == [kept_path(workdir / SHARD)]  # the failed run's end (onerror)
    rerun = _snakemake(workdir, edited, SHARD)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    log = (workdir / "logs" / Path(SHARD).relative_to("data")).with_suffix(".log").read_text()
    assert "was made from other inputs" in log and "restored" not in log, log
    assert "wrote 2 generations" in log


def test_a_plugin_generator_that_fails_on_its_parameters_is_refused_before_any_job(workdir, tmp_path) -> None:
    config = yaml.safe_load((workdir / "config" / "mini.yaml").read_text())
    config["datasets"]["params"]["mini"] = {"min_codons": 9, "max_codons": 4}
    (workdir / "config" / "mini.yaml").write_text(yaml.safe_dump(config))
    proc = _snakemake(workdir, _plugin(tmp_path / "plugin"), "-n")
    assert proc.returncode != 0
    assert (
        "datasets.params.mini: the task's generator fails on these parameters: ValueError: empty range for "
        "randrange(9, 5)" in proc.stdout + proc.stderr
    )
    assert not (workdir / "data").exists()


def test_a_plugin_that_fails_to_import_stops_only_the_runs_that_use_it(workdir, tmp_path) -> None:
    plugin = tmp_path / "plugin"
    _plugin(plugin)
    env = env_with(
        fake_plugin(
            plugin,
            "saltbench-typo",
            "typoplug",
            "import no_such_module\n",
            {"saltbench.tasks": {"typo": "typoplug:T"}},
        )
    )
    error = (
        "saltbench.tasks plugin 'typo' of package saltbench-typo (typoplug:T) failed to import: "
        "ModuleNotFoundError: No module named 'no_such_module'"
    )
    unused = _snakemake(workdir, env, "-n", *TARGETS)
    assert unused.returncode == 0, unused.stderr[-3000:]
    assert f"saltbench: warning: {error}" in unused.stderr
    config = yaml.safe_load((workdir / "config" / "mini.yaml").read_text())
    config["tasks"].append("typo")
    (workdir / "config" / "typo.yaml").write_text(yaml.safe_dump(config))
    used = _snakemake(workdir, env, "-n", config="config/typo.yaml")
    assert used.returncode != 0
    assert f"saltbench: tasks: {error}" in used.stderr
    assert "PluginError" not in used.stderr and 'File "' not in used.stderr  # the message alone
