"""Where a registry entry's model comes from, and how it is made loadable (docs/backends.md §1).

* :mod:`~saltbench.inference.sources.kinds` — the source kinds (``gguf_package``, ``hub``, ``local``,
  ``api``, ``simulated``, ``generations``): the blocks of a registry entry's ``source`` key;
* :mod:`~saltbench.inference.sources.gguf` — a GGUF file shipped in a Python package, converted once to
  safetensors (:func:`convert_gguf_to_safetensors`);
* :mod:`~saltbench.inference.sources.prepare` — :func:`prepare_model` (convert, check or pass on) and
  :func:`verify_model_files` (a directory against its digest manifest).

The kinds are imported with the package (the registry reads them); the conversion and the checks when
one of their names is first read.
"""

from typing import TYPE_CHECKING

from saltbench.core.lazy import lazy_getattr
from saltbench.inference.sources.kinds import (
    OWN_BACKENDS,
    ApiSource,
    GenerationsSource,
    GgufPackageSource,
    HubSource,
    LocalSource,
    ModelSource,
    SimulatedSource,
)

__getattr__ = lazy_getattr(
    __name__,
    {
        "CONVERSION_FORMAT": "gguf",
        "SOURCE_RECORD": "gguf",
        "convert_gguf_to_safetensors": "gguf",
        "file_sha256": "gguf",
        "read_source_record": "gguf",
        "resolve_gguf": "gguf",
        "prepare_model": "prepare",
        "verify_model_files": "prepare",
    },
)

if TYPE_CHECKING:
    from saltbench.inference.sources.gguf import (
        CONVERSION_FORMAT,
        SOURCE_RECORD,
        convert_gguf_to_safetensors,
        file_sha256,
        read_source_record,
        resolve_gguf,
    )
    from saltbench.inference.sources.prepare import prepare_model, verify_model_files

__all__ = [
    "CONVERSION_FORMAT",
    "OWN_BACKENDS",
    "SOURCE_RECORD",
    "ApiSource",
    "GenerationsSource",
    "GgufPackageSource",
    "HubSource",
    "LocalSource",
    "ModelSource",
    "SimulatedSource",
    "convert_gguf_to_safetensors",
    "file_sha256",
    "prepare_model",
    "read_source_record",
    "resolve_gguf",
    "verify_model_files",
]
