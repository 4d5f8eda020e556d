"""Write errors name the file and the free space, and leave nothing half-written (docs/reliability.md §3).

A full disk and a read-only file system are real ones: a 64 KiB tmpfs mounted for the test (root only;
skipped elsewhere), remounted read-only for the second case.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from saltbench.io import OutputWriteError, free_space, naming_write_errors, write_atomic, write_table


@pytest.fixture()
def small_disk(tmp_path: Path):
    """A 64 KiB tmpfs at ``tmp_path / "disk"``, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _big_train_log() -> pl.DataFrame:
    """A training log of 20,000 steps with noisy losses: far more than 64 KiB however it is compressed."""
    n = 20_000
    rng = np.random.default_rng(0)
    steps = np.arange(1, n + 1)
    return pl.DataFrame(
        {
            "step": steps,
            "loss": rng.random(n) + 1.0,
            "lr": rng.random(n) * 1e-3,
            "tokens": np.full(n, 512),
            "answer_tokens": np.full(n, 200),
            "tokens_per_s": rng.random(n) * 1000.0,
            "elapsed_s": steps * 0.5,
        }
    )


def test_a_full_disk_names_the_file_and_the_free_space_and_keeps_the_old_file(small_disk: Path) -> None:
    target = small_disk / "results" / "table.csv"
    write_atomic(target, "old\n")
    with pytest.raises(OutputWriteError) as caught:
        write_atomic(target, b"x" * 200_000)
    message = str(caught.value)
    assert f"cannot write {target}: No space left on device" in message
    assert "free of 64.0 KiB on its file system" in message
    assert caught.value.errno == errno.ENOSPC and isinstance(caught.value, OSError)
    assert target.read_text() == "old\n"  # the previous version is intact
    assert _leftovers(target.parent) == []  # no temporary file left behind


def test_a_table_that_does_not_fit_is_not_half_written(small_disk: Path) -> None:
    target = small_disk / "units.parquet"
    with pytest.raises(OutputWriteError, match=rf"cannot write {target}: No space left on device"):
        write_table(_big_train_log(), target, {"stage": "test"}, "train_log")
    assert not target.exists() and _leftovers(small_disk) == []


def test_a_figure_that_does_not_fit_names_its_file(small_disk: Path) -> None:
    import matplotlib.pyplot as plt

    from saltbench.plotting import save_figure

    fig, ax = plt.subplots()
    ax.imshow(np.random.default_rng(0).random((400, 400)))
    target = small_disk / "figures" / "noise.png"
    try:
        with pytest.raises(OutputWriteError, match=rf"cannot write {target}: No space left on device"):
            save_figure(fig, [target])
    finally:
        plt.close(fig)
    assert not target.exists() and _leftovers(target.parent) == []


def test_a_read_only_file_system_is_named(small_disk: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    target = small_disk / "out.json"
    with pytest.raises(OutputWriteError, match=rf"cannot write {target}: Read-only file system \(.* free of"):
        write_atomic(target, "{}")


def test_other_os_errors_pass_through_unchanged(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), naming_write_errors(tmp_path / "x"):
        raise FileNotFoundError(errno.ENOENT, "gone")


def test_free_space_of_a_path_that_does_not_exist_yet_is_its_parents(tmp_path: Path) -> None:
    assert free_space(tmp_path / "a" / "b" / "c.txt").endswith(("GiB", "MiB", "KiB", "B"))
    assert " free of " in free_space(tmp_path / "a")
