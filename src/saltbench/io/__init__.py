"""Reading and writing the workflow's files: verified Parquet tables (:mod:`saltbench.io.tables`), atomic
writes whose errors name the file (:mod:`saltbench.io.files`) and digest manifests of model directories
(:mod:`saltbench.io.manifests`)."""

from saltbench.io.files import (
    CorruptFileError,
    OutputWriteError,
    file_sha256,
    free_space,
    human_size,
    naming_write_errors,
    write_atomic,
)
from saltbench.io.manifests import (
    MANIFEST_NAME,
    CorruptDirectoryError,
    model_files_key,
    quarantine,
    read_manifest,
    verify_manifest,
    write_manifest,
)
from saltbench.io.tables import (
    INTEGRITY_FORMAT,
    INTEGRITY_KEY,
    KEY_LIBRARIES,
    PROVENANCE_KEY,
    config_hash,
    encode_table,
    git_commit,
    inputs_key,
    job_environment,
    provenance,
    read_provenance,
    read_table,
    table_columns,
    write_table,
)

__all__ = [
    "INTEGRITY_FORMAT",
    "INTEGRITY_KEY",
    "KEY_LIBRARIES",
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
    "human_size",
    "inputs_key",
    "job_environment",
    "model_files_key",
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
