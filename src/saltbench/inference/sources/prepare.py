"""Making a registry entry's model loadable: a GGUF package converted once (:mod:`.gguf`), a local directory
checked against its digest manifest (docs/reliability.md §2.1), a hub id passed on."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from saltbench.inference.sources.kinds import (
    ApiSource,
    GenerationsSource,
    GgufPackageSource,
    LocalSource,
    SimulatedSource,
)

if TYPE_CHECKING:
    from saltbench.inference.registry import ModelSpec


def prepare_model(spec: ModelSpec, cache_dir: str | Path) -> str | Path:
    """Make ``spec`` loadable and return what :func:`~saltbench.inference.load_model` takes.

    Converts a ``gguf_package`` source once into ``cache_dir / spec.name`` (reused while the
    recorded sha256 of the GGUF file matches); checks that a ``local`` directory exists
    (``FileNotFoundError`` otherwise); returns a ``hub`` id unchanged (downloads happen in
    ``from_pretrained``).
    """
    from saltbench.inference.sources.gguf import convert_gguf_to_safetensors, resolve_gguf

    src = spec.source
    target = spec.resolve_path(cache_dir)
    if isinstance(src, GgufPackageSource):
        gguf_path = resolve_gguf(src.package, src.file)
        return convert_gguf_to_safetensors(gguf_path, Path(target))  # verified when reused
    if isinstance(src, LocalSource):
        path = Path(target)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"model {spec.name!r}: source.path {str(path)!r} is not a saved model directory "
                f"(no config.json there{'' if path.exists() else '; the path does not exist'}); "
                "train or copy the model first, or fix config/models.yaml"
            )
        verify_model_files(path, spec)
        return path
    return target


def verify_model_files(model_path: str | Path, spec: ModelSpec) -> None:
    """Check a model directory against its digest manifest before it is loaded (docs/reliability.md §2.1).

    A ``gguf_package`` conversion must carry a manifest (the conversion writes one); a ``local`` directory
    is checked when it has one (the workflow's trained checkpoints do; a directory of your own may not);
    hub ids and served models have no local directory to check. A directory that fails is moved aside
    (:func:`saltbench.io.quarantine`) when the workflow built it, so that the next run rebuilds it.

    Raises:
        saltbench.io.CorruptFileError: a listed file is missing, of another size or with other bytes (or the
            conversion's manifest is missing); the message names the file, the rule that rebuilds the
            directory and where the directory was moved.
    """
    from saltbench.io import CorruptDirectoryError, CorruptFileError, quarantine, verify_manifest

    path = Path(model_path)
    if isinstance(spec.source, (ApiSource, SimulatedSource, GenerationsSource)) or not path.is_dir():
        return
    try:
        verify_manifest(path, required=isinstance(spec.source, GgufPackageSource))
    except CorruptDirectoryError as exc:
        rule = exc.rule or ("convert_gguf_model" if isinstance(spec.source, GgufPackageSource) else "")
        if not rule:  # not built by the workflow: left where it is
            raise
        moved = quarantine(path)
        raise CorruptFileError(
            f"model {spec.name!r}: {exc}; the directory was moved to {moved}, so the next run of the "
            "workflow rebuilds it"
        ) from None


__all__ = ["prepare_model", "verify_model_files"]
