"""The run lock: exclusive across processes, released by the kernel when its holder dies; and the removal
of stale temporaries."""

from __future__ import annotations

import os
import signal

import pytest
from helpers.run_lock import lock_holder

from saltbench.workflow.runlock import LOCK_FILE, RunLockError, acquire_run_lock, remove_stale_temporaries


def test_second_process_is_refused_until_the_holder_is_killed(tmp_path):
    holder = lock_holder(tmp_path)
    try:
        with pytest.raises(RunLockError, match=f"process {holder.pid}"):
            acquire_run_lock(tmp_path)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert acquire_run_lock(tmp_path) == (tmp_path / LOCK_FILE).resolve()  # the kernel released it
    assert acquire_run_lock(tmp_path) == (tmp_path / LOCK_FILE).resolve()  # idempotent in one process
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())


def test_stale_temporaries_are_removed_and_nothing_else(tmp_path):
    data = tmp_path / "data" / "units" / "m"
    data.mkdir(parents=True)
    keep = [data / "dna.parquet", data / ".hidden_but_kept.parquet", tmp_path / "data" / "x.tmp"]
    stale = [data / ".dna.parquet.abc123.tmp"]
    folders = [tmp_path / "data" / ".smollm2.tmp-xyz", tmp_path / "data" / ".smollm2.old-abc"]
    for path in (*keep, *stale):
        path.write_text("x")
    for folder in folders:
        (folder / "inner").mkdir(parents=True)
        (folder / "inner" / ".w.tmp").write_text("x")
    removed = remove_stale_temporaries([tmp_path / "data", tmp_path / "absent"])
    assert sorted(removed) == sorted([*stale, *folders])
    assert all(p.exists() for p in keep) and not any(p.exists() for p in (*stale, *folders))
