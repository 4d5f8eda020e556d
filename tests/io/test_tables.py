"""Artifacts: atomic writes with provenance, content digests, contract checks, and corruption probes.

The probe suite is the acceptance test of "nothing silently wrong": every corrupted file of every artifact
kind is either read back identical to what was written or raises CorruptFileError naming the file.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from helpers.artifact_samples import SAMPLES

from saltbench.core.contracts import ARTIFACTS, Artifact, ContractError
from saltbench.io import (
    INTEGRITY_KEY,
    PROVENANCE_KEY,
    CorruptFileError,
    read_provenance,
    read_table,
    table_columns,
    write_table,
)


@pytest.fixture(scope="module")
def samples() -> dict[str, pl.DataFrame]:
    return {kind: build() for kind, build in SAMPLES.items()}


def test_roundtrip_with_provenance_and_byte_identical(tmp_path, samples):
    frame = samples["units"]
    p1, p2 = tmp_path / "one.parquet", tmp_path / "two.parquet"
    write_table(frame, p1, {"seed": 3, "stage": "t"}, "units")
    write_table(frame, p2, {"seed": 3, "stage": "t"}, "units")
    assert read_table(p1, "units").equals(frame)
    assert read_table(p1, None).equals(frame)
    assert read_provenance(p1) == {"seed": 3, "stage": "t"}
    assert p1.read_bytes() == p2.read_bytes()
    assert not list(tmp_path.glob(".*.tmp"))
    record = json.loads(pl.read_parquet_metadata(p1)[INTEGRITY_KEY])
    assert (
        record["artifact"] == "units" and record["rows"] == frame.height and len(record["data_sha256"]) == 64
    )


@pytest.mark.parametrize("kind", sorted(ARTIFACTS))
def test_every_artifact_round_trips(tmp_path, samples, kind):
    path = tmp_path / f"{kind}.parquet"
    write_table(samples[kind], path, {"stage": kind}, kind)
    assert read_table(path, kind).equals(samples[kind])


def test_projected_read_checks_the_columns_it_reads(tmp_path, samples):
    path = tmp_path / "u.parquet"
    write_table(samples["units"], path, {}, "units")
    part = read_table(path, "units", columns=["sample_id", "status", "is_correct"])
    assert part.columns == ["sample_id", "status", "is_correct"] and part.height == samples["units"].height
    assert "topk.mean_probability" in table_columns(path)


# --- contract errors on write: the named artifact, file and column -----------------------------------------


@pytest.mark.parametrize("kind", sorted(ARTIFACTS))
def test_a_wrong_column_type_is_refused_on_write(tmp_path, samples, kind):
    """Each stage's output written with one column of the wrong type: the error names file and column."""
    frame = samples[kind]
    column = next(iter(ARTIFACTS[kind].columns))
    wrong = frame.with_columns(
        pl.col(column).cast(pl.Categorical)
        if frame[column].dtype == pl.String
        else pl.col(column).cast(pl.String)
    )
    path = tmp_path / f"{kind}.parquet"
    with pytest.raises(ContractError, match=rf"{kind}\.parquet: .*{kind} column '{column}' has type"):
        write_table(wrong, path, {}, kind)
    assert not path.exists() and not list(tmp_path.glob(".*.tmp"))


def test_missing_and_unexpected_columns_are_refused(tmp_path, samples):
    gens = samples["generations"]
    with pytest.raises(ContractError, match="column 'entropy' is missing"):
        write_table(gens.drop("entropy"), tmp_path / "g.parquet", {}, "generations")
    with pytest.raises(ContractError, match="unexpected column 'extra'"):
        write_table(gens.with_columns(extra=pl.lit(1)), tmp_path / "g.parquet", {}, "generations")
    with pytest.raises(ContractError, match="'topk.mean_probability' has type Float32"):
        write_table(
            samples["units"].with_columns(pl.col("topk.mean_probability").cast(pl.Float32)),
            tmp_path / "u.parquet",
            {},
            "units",
        )
    write_table(
        samples["dataset"].with_columns(extra=pl.lit(1)), tmp_path / "d.parquet", {}, "dataset"
    )  # open


def test_derived_columns_are_cross_checked(tmp_path, samples):
    units = samples["units"]
    flipped = units.with_columns(
        is_correct=pl.when(pl.int_range(pl.len()) == 4)
        .then(~pl.col("is_correct"))
        .otherwise(pl.col("is_correct"))
    )
    with pytest.raises(ContractError, match=r"breaks 'is_correct is status == \"correct\"' at row 4"):
        write_table(flipped, tmp_path / "u.parquet", {}, "units")
    gens = samples["generations"]
    changed = gens.with_columns(
        text=pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("This answer")).otherwise(pl.col("text"))
    )
    with pytest.raises(ContractError, match="text is the concatenation of token_texts' at row 2"):
        write_table(changed, tmp_path / "g.parquet", {}, "generations")
    short = gens.with_columns(pl.col("entropy").list.head(1))
    with pytest.raises(ContractError, match="entropy has one entry per generated token"):
        write_table(short, tmp_path / "g.parquet", {}, "generations")


# --- what read_table refuses --------------------------------------------------------------------------------


def test_truncated_file_is_detected(tmp_path, samples):
    path = tmp_path / "t.parquet"
    write_table(samples["train_log"], path, {}, "train_log")
    data = path.read_bytes()
    for cut in (0, 3, 8, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(CorruptFileError, match="t.parquet"):
            read_table(path, "train_log")


def test_a_file_of_another_stage_is_named(tmp_path, samples):
    """A dataset file copied over a generations file: refused before any column is looked up."""
    path = tmp_path / "dna.parquet"
    write_table(samples["dataset"], path, {}, "dataset")
    with pytest.raises(
        CorruptFileError, match=r"dna\.parquet: holds a 'dataset' table, expected 'generations'"
    ):
        read_table(path, "generations")


def test_a_table_of_the_generic_kind_is_refused_until_its_rule_reruns(tmp_path, samples):
    """Analysis tables written before each had its own artifact are recorded as the generic kind "table": read
    as their table's artifact, they are refused with the instruction to rerun the rule that rewrites them."""
    path = tmp_path / "leaderboard.parquet"
    write_table(samples["table.leaderboard"], path, {}, Artifact("table", {}, open=True))
    with pytest.raises(
        CorruptFileError,
        match=r"leaderboard\.parquet: holds a 'table' table, expected "
        r"'table\.leaderboard'.*rerun the rule that writes it",
    ):
        read_table(path, "table.leaderboard")


def test_a_file_without_integrity_record_is_not_trusted(tmp_path, samples):
    path = tmp_path / "foreign.parquet"
    samples["units"].write_parquet(path, metadata={PROVENANCE_KEY: "{}"})
    with pytest.raises(CorruptFileError, match=r"foreign\.parquet: no integrity record"):
        read_table(path, "units")


def test_a_decodable_change_of_the_data_is_caught_by_the_digest(tmp_path, samples):
    """Rewrite a file with different data but the old footer metadata: decodes fine, digest mismatch."""
    path = tmp_path / "m.parquet"
    write_table(samples["metrics"], path, {"seed": 1}, "metrics")
    meta = {k: v for k, v in pl.read_parquet_metadata(path).items() if k.startswith("saltbench")}
    samples["metrics"].with_columns(pl.col("value") + 0.01).write_parquet(
        path, metadata=meta, statistics=False
    )
    with pytest.raises(CorruptFileError, match="data digest mismatch"):
        read_table(path, "metrics")


def test_a_rust_panic_while_reading_is_reported_as_a_corrupt_file(tmp_path, monkeypatch, samples):
    """polars' PanicException derives from BaseException (not Exception): it must still become a
    CorruptFileError naming the file."""
    from polars.exceptions import PanicException

    path = tmp_path / "p.parquet"
    write_table(samples["train_log"], path, {}, "train_log")

    def panic(*_args, **_kwargs):
        raise PanicException("range end index 9 out of range for slice of length 3")

    monkeypatch.setattr(pl, "read_parquet", panic)
    with pytest.raises(CorruptFileError, match=r"p\.parquet.*out of range"):
        read_table(path, "train_log")


# --- the probe suite ----------------------------------------------------------------------------------------

FLIPS_PER_ARTIFACT = 300


@pytest.mark.parametrize("kind", sorted(ARTIFACTS))
def test_corruption_probes_never_read_silently(tmp_path, samples, kind):
    """Seeded single-byte flips anywhere in the file (data pages, page headers, footer, magic) and
    truncations: each read returns the original frame or raises CorruptFileError naming the file."""
    original = samples[kind]
    path = tmp_path / f"{kind}.parquet"
    write_table(original, path, {"stage": kind, "seed": 7}, kind)
    blob = path.read_bytes()
    rng = np.random.default_rng(sum(map(ord, kind)))
    positions = rng.integers(0, len(blob), size=FLIPS_PER_ARTIFACT)
    masks = rng.integers(1, 256, size=FLIPS_PER_ARTIFACT)
    outcomes = {"identical": 0, "refused": 0}
    for position, mask in zip(positions.tolist(), masks.tolist()):
        damaged = bytearray(blob)
        damaged[position] ^= mask
        path.write_bytes(bytes(damaged))
        try:
            frame = read_table(path, kind)
        except CorruptFileError as exc:
            assert str(path) in str(exc)
            outcomes["refused"] += 1
            continue
        assert frame.equals(original), f"byte {position} ^ {mask:#x} was read back as different data"
        outcomes["identical"] += 1
    for cut in rng.integers(0, len(blob), size=20).tolist():
        path.write_bytes(blob[:cut])
        with pytest.raises(CorruptFileError, match=kind):
            read_table(path, kind)
    assert (
        outcomes["refused"] > FLIPS_PER_ARTIFACT // 2
    )  # most bytes matter; the rest are e.g. the writer name


def test_the_commit_is_read_from_the_repository_files_as_git_names_it(tmp_path):
    """``git_commit`` reads HEAD without a git process (which a loaded machine could time out): a branch's
    ref file, packed refs, a worktree and a detached HEAD all give what ``git rev-parse HEAD`` gives."""
    import subprocess

    from saltbench.io.tables import _head_commit

    def git(*args: str, cwd=tmp_path / "repo") -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
        ).stdout.strip()

    (tmp_path / "repo").mkdir()
    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one")
    repo = tmp_path / "repo"
    assert _head_commit(repo / ".git") == git("rev-parse", "HEAD")
    git("pack-refs", "--all")
    assert _head_commit(repo / ".git") == git("rev-parse", "HEAD")
    git("worktree", "add", "-q", "-b", "side", str(tmp_path / "tree"))
    git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "two",
        cwd=tmp_path / "tree",
    )
    assert _head_commit(tmp_path / "tree" / ".git") == git("rev-parse", "HEAD", cwd=tmp_path / "tree")
    git("checkout", "-q", "--detach", "HEAD")
    assert _head_commit(repo / ".git") == git("rev-parse", "HEAD")
    assert _head_commit(tmp_path / "nowhere" / ".git") is None
