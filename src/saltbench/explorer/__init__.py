"""The explorer: a static, offline web page showing every response of a run, unit by unit.

Each atom and line of a fenced answer is coloured by its status (correct, incorrect, redundant, missing)
and shaded by its confidence; hovering shows the unit's tokens with their chosen log-probabilities and
top-k alternatives; the reference is aligned beside it. Across the run, "confident and wrong" and "unsure
and right" list the units a confidence function ranks worst; samples with interventions show their
corrupted prefixes and what the model wrote next (docs/explorer.md).

:func:`build_explorer` writes the page (``results/explorer/`` in the workflow, rule ``explorer``): the page
itself is package data (``assets/``), the data one script file per (model, style, task), loaded on demand.
"""

from saltbench.explorer._build import (
    ASSETS,
    CALLBACK,
    CellFiles,
    ExplorerOptions,
    ExplorerSummary,
    build_explorer,
    script,
)
from saltbench.explorer._chunks import (
    ChunkKey,
    build_chunk,
    chunk_candidates,
    orientation,
    run_lists,
    token_vocabulary,
)
from saltbench.explorer._interventions import corrupted_spans, intervention_chunk

__all__ = [
    "ASSETS",
    "CALLBACK",
    "CellFiles",
    "ChunkKey",
    "ExplorerOptions",
    "ExplorerSummary",
    "build_chunk",
    "build_explorer",
    "chunk_candidates",
    "corrupted_spans",
    "intervention_chunk",
    "orientation",
    "run_lists",
    "script",
    "token_vocabulary",
]
