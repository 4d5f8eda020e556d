"""Reading and writing the workflow's files: verified Parquet tables (:mod:`saltbench.io.tables`), atomic
writes whose errors name the file (:mod:`saltbench.io.files`) and digest manifests of model directories
(:mod:`saltbench.io.manifests`)."""

from saltbench.io.files import (
    CorruptFileError,
    OutputWriteError,
    file_sha256,
    free_space,
    naming_write_errors,
    write_atomic,
)
from saltbench.io.manifests import (
    MANIFEST_NAME,
    CorruptDirectoryError,
    quarantine,
    read_manifest,
    verify_manifest,
    write_manifest,
)
from saltbench.io.tables import (
    INTEGRITY_FORMAT,
    INTEGRITY_KEY,
    PROVENANCE_KEY,
    config_hash,
    encode_table,
    git_commit,
    inputs_key,
    provenance,
    read_provenance,
    read_table,
    table_columns,
    write_table,
)

__all__ = [
    "INTEGRITY_FORMAT",
    "INTEGRITY_KEY",
    "MANIFEST_NAME",
    "PROVENANCE_KEY",
    "CorruptDirectoryError",
    "CorruptFileError",
    "OutputWriteError",
    "config_hash",
    "encode_table",
    "file_sha256",
    "free_space",
    "git_commit",
    "inputs_key",
    "naming_write_errors",
    "provenance",
    "quarantine",
    "read_manifest",
    "read_provenance",
    "read_table",
    "table_columns",
    "verify_manifest",
    "write_atomic",
    "write_manifest",
    "write_table",
]
