"""Kept copies of finished shards (saltbench.workflow.kept, docs/reliability.md §2.3): what Snakemake deletes
after a failed job comes back from its kept copy, and only when it is intact and made from the same inputs
and software; an output deleted by hand is computed again; the copies can be listed and purged."""

from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys

import polars as pl
import pytest
from helpers.artifact_samples import generations
from helpers.fake_plugins import fake_plugin
from helpers.run_lock import lock_holder

from saltbench.io import (
    inputs_key,
    job_environment,
    model_files_key,
    provenance,
    read_table,
    write_manifest,
    write_table,
)
from saltbench.workflow.kept import (
    copy_state,
    finish_run,
    keep_output,
    kept_copies,
    kept_path,
    main,
    restore_output,
    start_run,
)

ROWS = generations().select("sample_id", input=pl.col("prompt"))


@pytest.fixture()
def shard(tmp_path):
    """A finished generations shard with its kept copy, and its inputs key."""
    frame = generations()
    key = inputs_key({"model": "m", "style": "direct"}, ROWS)
    output = tmp_path / "data" / "generations" / "m" / "direct" / "dna" / "shard-0.parquet"
    write_table(frame, output, provenance(stage="generations", inputs_key=key), "generations")
    keep_output(output)
    return output, frame, key


def _deleted_by_snakemake(output, root) -> None:
    """What a failed group job does to a finished output, then the end of that run and the next run's
    start (the Snakefile's onerror and onstart)."""
    output.unlink()
    assert finish_run([root]) == [kept_path(output)]
    assert start_run([root]) == []


def test_a_kept_copy_is_a_hard_link_beside_the_output(shard):
    output, _, _ = shard
    kept = kept_path(output)
    assert kept == output.parent / ".kept" / output.name
    assert os.stat(kept).st_ino == os.stat(output).st_ino  # no extra disk while the output exists


def test_an_output_snakemake_deleted_comes_back_from_its_kept_copy(shard, tmp_path, caplog):
    output, frame, key = shard
    _deleted_by_snakemake(output, tmp_path / "data")
    assert copy_state(kept_path(output)) == "restorable"
    with caplog.at_level(logging.INFO):
        assert restore_output(output, artifact="generations", inputs_key=key)
    assert read_table(output, "generations").equals(frame)
    assert "restored" in caplog.text and str(output) in caplog.text
    assert "To compute it again instead, delete it and rerun" in caplog.text
    assert copy_state(kept_path(output)) == "current"  # the mark is gone with the restore


def test_an_output_deleted_by_hand_is_computed_again(shard, tmp_path):
    output, _, key = shard
    output.unlink()  # between runs: no failed run marked it
    assert copy_state(kept_path(output)) == "dropped"
    assert start_run([tmp_path / "data"]) == [kept_path(output)]
    assert not restore_output(output, artifact="generations", inputs_key=key)


def test_a_copy_written_by_the_run_in_progress_is_restored(shard):
    """A job retried in the same run (a SLURM group job resubmitted after Snakemake deleted its outputs)."""
    output, _, key = shard
    output.unlink()
    assert restore_output(output, artifact="generations", inputs_key=key)


def test_a_kept_copy_from_other_inputs_is_not_used_and_removed(shard, tmp_path):
    output, _, _ = shard
    _deleted_by_snakemake(output, tmp_path / "data")
    assert not restore_output(output, artifact="generations", inputs_key="another-key")
    assert not output.exists() and not list(kept_path(output).parent.iterdir())  # copy and mark removed


ENVIRONMENT = {
    "saltbench": "0.1.0 abc",
    "libraries": {"torch": "torch 2.13.0", "vllm": "vllm 0.32.0"},
    "plugins": {"saltbench.tasks:hex": "saltbench-hex 0.1.0, source 3f2a"},
}


@pytest.mark.parametrize(
    "changed",
    [
        {**ENVIRONMENT, "saltbench": "0.2.0 abc"},
        {**ENVIRONMENT, "libraries": {"torch": "torch 2.14.0", "vllm": "vllm 0.32.0"}},
        {**ENVIRONMENT, "libraries": {"torch": "torch 2.13.0"}},  # vLLM uninstalled
        {**ENVIRONMENT, "plugins": {"saltbench.tasks:hex": "saltbench-hex 0.1.0, source 77aa"}},
        {**ENVIRONMENT, "plugins": {}},
    ],
)
def test_another_version_or_plugin_gives_another_key(changed):
    settings = {"model": "m"}
    assert inputs_key(settings, ROWS, ENVIRONMENT) == inputs_key(settings, ROWS, dict(ENVIRONMENT))
    assert inputs_key(settings, ROWS, changed) != inputs_key(settings, ROWS, ENVIRONMENT)


def test_the_environment_names_the_libraries_and_every_installed_plugin(tmp_path, monkeypatch):
    """An edited plugin template (in a package the job never imports) changes the job's key."""
    root = fake_plugin(
        tmp_path / "plugin",
        "saltbench-tpl",
        "tplplug/__init__",
        "",
        {"saltbench.tasks": {"tpl": "tplplug:T"}, "saltbench.backends": {"tb": "tplplug:load"}},
        files={"tplplug/prompt.txt": "Complement {input}\n"},
    )
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    job_environment.cache_clear()
    before = job_environment()
    assert {"torch", "transformers", "tokenizers"} <= set(before["libraries"])
    assert set(before["plugins"]) >= {"saltbench.tasks:tpl", "saltbench.backends:tb"}
    (root / "tplplug" / "prompt.txt").write_text("Complement {input}, please\n")
    job_environment.cache_clear()
    assert job_environment()["plugins"] != before["plugins"]
    assert inputs_key({}, ROWS, job_environment()) != inputs_key({}, ROWS, before)
    job_environment.cache_clear()


def test_the_model_files_key_changes_with_the_model(tmp_path):
    assert model_files_key("HuggingFaceTB/SmolLM2-135M-Instruct") == ""  # a hub id, a served model's name
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"\0" * 8)
    plain = model_files_key(model)
    os.utime(model / "model.safetensors", ns=(1, 1))  # rewritten: another modification time
    assert model_files_key(model) != plain
    write_manifest(model, rule="train_tiny_models")
    recorded = model_files_key(model)
    os.utime(model / "model.safetensors")  # a manifest records digests: the time does not count
    assert model_files_key(model) == recorded
    (model / "model.safetensors").write_bytes(b"\1" * 8)  # retrained, same size
    write_manifest(model, rule="train_tiny_models")
    assert model_files_key(model) != recorded


def test_a_damaged_kept_copy_is_not_used_and_removed(shard, caplog):
    output, _, key = shard
    output.unlink()
    kept = kept_path(output)
    blob = bytearray(kept.read_bytes())
    blob[20] ^= 0xFF
    kept.write_bytes(bytes(blob))
    with caplog.at_level(logging.WARNING):
        assert not restore_output(output, artifact="generations", inputs_key=key)
    assert "kept copy not used" in caplog.text and "digest mismatch" in caplog.text
    assert not output.exists() and not kept.exists()


def test_no_kept_copy_restores_nothing(tmp_path):
    assert not restore_output(tmp_path / "shard-0.parquet", artifact="generations", inputs_key="k")


def test_a_new_kept_copy_replaces_the_old_one_and_its_mark(shard, tmp_path):
    output, frame, key = shard
    output.unlink()
    finish_run([tmp_path / "data"])
    write_table(frame.head(1), output, provenance(inputs_key=key), "generations")  # a new file, a new inode
    keep_output(output)
    assert os.stat(kept_path(output)).st_ino == os.stat(output).st_ino
    assert list(kept_path(output).parent.iterdir()) == [kept_path(output)]  # no temporary, no mark left


def test_a_run_start_keeps_only_the_restorable_copies(shard, tmp_path):
    output, frame, key = shard
    others = [output.with_name(f"shard-{i}.parquet") for i in (1, 2)]
    for other in others:
        write_table(frame, other, provenance(inputs_key=key), "generations")
        keep_output(other)
        other.unlink()
    finish_run([tmp_path / "data"])  # both deleted during a failed run
    keep_output(output)  # (re)written since: its output exists
    orphan = kept_path(others[1]).with_name(kept_path(others[1]).name + ".restorable")
    kept_path(others[1]).unlink()  # a mark without its copy
    assert start_run([tmp_path / "data"]) == [kept_path(output)]
    assert output.exists() and kept_copies([tmp_path / "data"]) == [kept_path(others[0])]
    assert not orphan.exists()
    assert start_run([tmp_path / "missing"]) == []


def test_the_command_lists_and_purges_kept_copies(shard, tmp_path, monkeypatch, capsys):
    output, frame, key = shard
    other = output.with_name("shard-1.parquet")
    write_table(frame, other, provenance(inputs_key=key), "generations")
    keep_output(other)
    other.unlink()
    finish_run([tmp_path / "data"])
    monkeypatch.chdir(tmp_path)
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[0] == "current" and lines[0].endswith(str(output.relative_to(tmp_path)))
    assert lines[1].split()[0] == "restorable" and lines[1].endswith(str(other.relative_to(tmp_path)))
    assert lines[2] == "2 kept copies, 1 restorable"
    assert main(["purge", str(other.relative_to(tmp_path))]) == 0  # an output names its copy
    assert capsys.readouterr().out.startswith("removed 1 kept copy (")
    assert kept_copies(["data"]) == [kept_path(output).relative_to(tmp_path)]
    assert main(["purge"]) == 0 and kept_copies(["data"]) == [] and output.exists()
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0 and "list,purge" in capsys.readouterr().out


def test_purge_waits_for_the_running_workflow(shard, tmp_path):
    holder = lock_holder(tmp_path)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "saltbench.workflow.kept", "purge"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 1
    assert f"saltbench: another workflow run (process {holder.pid}) is running" in proc.stderr
    assert kept_copies([tmp_path / "data"]) == [kept_path(shard[0])]
