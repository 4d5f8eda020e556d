"""Atomic Parquet writes with provenance; corrupted files are detected."""

from __future__ import annotations

import polars as pl
import pytest

from saltbench.io import CorruptFileError, read_provenance, read_table, write_table


def test_roundtrip_with_provenance_and_byte_identical(tmp_path):
    frame = pl.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    p1, p2 = tmp_path / "one.parquet", tmp_path / "two.parquet"
    write_table(frame, p1, {"seed": 3, "stage": "t"})
    write_table(frame, p2, {"seed": 3, "stage": "t"})
    assert read_table(p1).equals(frame)
    assert read_provenance(p1) == {"seed": 3, "stage": "t"}
    assert p1.read_bytes() == p2.read_bytes()
    assert not list(tmp_path.glob(".*.tmp"))


def test_truncated_file_is_detected(tmp_path):
    path = tmp_path / "t.parquet"
    write_table(pl.DataFrame({"a": list(range(100))}), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError, match="t.parquet"):
        read_table(path)


def test_a_rust_panic_while_reading_is_reported_as_a_corrupt_file(tmp_path, monkeypatch):
    """polars' PanicException derives from BaseException (not Exception): it must still become a
    CorruptFileError naming the file, for the data and for the metadata reader."""
    from polars.exceptions import PanicException

    path = tmp_path / "p.parquet"
    write_table(pl.DataFrame({"a": [1]}), path)

    def panic(*_args, **_kwargs):
        raise PanicException("range end index 9 out of range for slice of length 3")

    monkeypatch.setattr(pl, "read_parquet", panic)
    monkeypatch.setattr(pl, "read_parquet_metadata", panic)
    with pytest.raises(CorruptFileError, match=r"p\.parquet.*out of range"):
        read_table(path)
    with pytest.raises(CorruptFileError, match=r"p\.parquet"):
        read_provenance(path)
