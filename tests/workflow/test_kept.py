"""Kept copies of finished shards (saltbench.workflow.kept): what Snakemake deletes after a failed group job
comes back from its kept copy, and only when it is intact and made from the same inputs."""

from __future__ import annotations

import logging
import os

import polars as pl
import pytest
from helpers.artifact_samples import generations

from saltbench.io import inputs_key, provenance, read_table, write_table
from saltbench.workflow.kept import keep_output, kept_path, prune_kept, restore_output


@pytest.fixture()
def shard(tmp_path):
    """A finished generations shard with its kept copy, and its inputs key."""
    frame = generations()
    key = inputs_key({"model": "m", "style": "direct"}, frame.select("sample_id", input=pl.col("prompt")))
    output = tmp_path / "data" / "generations" / "m" / "direct" / "dna" / "shard-0.parquet"
    write_table(frame, output, provenance(stage="generations", inputs_key=key), "generations")
    keep_output(output)
    return output, frame, key


def test_a_kept_copy_is_a_hard_link_beside_the_output(shard):
    output, _, _ = shard
    kept = kept_path(output)
    assert kept == output.parent / ".kept" / output.name
    assert os.stat(kept).st_ino == os.stat(output).st_ino  # no extra disk while the output exists


def test_a_deleted_output_comes_back_from_its_kept_copy(shard, caplog):
    output, frame, key = shard
    output.unlink()  # what Snakemake does to every output of a failed group job
    with caplog.at_level(logging.INFO):
        assert restore_output(output, artifact="generations", inputs_key=key)
    assert read_table(output, "generations").equals(frame)
    assert "restored" in caplog.text and str(output) in caplog.text


def test_a_kept_copy_from_other_inputs_is_not_used_and_removed(shard):
    output, _, _ = shard
    output.unlink()
    assert not restore_output(output, artifact="generations", inputs_key="another-key")
    assert not output.exists() and not kept_path(output).exists()


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


def test_a_new_kept_copy_replaces_the_old_one(shard):
    output, frame, key = shard
    write_table(frame.head(1), output, provenance(inputs_key=key), "generations")  # a new file, a new inode
    keep_output(output)
    assert os.stat(kept_path(output)).st_ino == os.stat(output).st_ino
    assert not list(kept_path(output).parent.glob(".*"))  # no temporary left


def test_pruning_removes_the_copies_whose_outputs_exist_and_keeps_the_others(shard, tmp_path):
    output, frame, key = shard
    other = output.with_name("shard-1.parquet")
    write_table(frame, other, provenance(inputs_key=key), "generations")
    keep_output(other)
    other.unlink()  # deleted after a failed group job: its copy must wait for the rerun
    removed = prune_kept([tmp_path / "data"])
    assert removed == [kept_path(output)]
    assert output.exists() and kept_path(other).exists()
    assert prune_kept([tmp_path / "missing"]) == []
