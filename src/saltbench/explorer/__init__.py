"""The explorer: a static, offline web page showing every response of a run, unit by unit.

Each atom and line of a fenced answer is coloured by its status (correct, incorrect, redundant, missing)
and shaded by its confidence; hovering shows the unit's tokens with their chosen log-probabilities and
top-k alternatives; the reference is aligned beside it; each cell has a summary (precision and AUROC with
their intervals, answered share, alignment). "Confident and wrong" and "unsure and right" list the units a
confidence function ranks worst in the picked cell or across the models of a task; samples with
interventions show their corrupted prefixes and what the model wrote next (docs/explorer.md).

:func:`build_explorer` writes the page (``results/explorer/`` in the workflow): the page itself is package
data (``assets/``), the data one script file per (model, style, task), loaded on demand. The workflow
splits it into one job per model (:func:`build_model_part`, rule ``explorer_model``) and an index job
(:func:`build_index`, rule ``explorer``).
"""

from saltbench.explorer._build import (
    ASSETS,
    CALLBACK,
    CellFiles,
    ExplorerOptions,
    ExplorerSummary,
    build_explorer,
    build_index,
    build_model_part,
    eligibility,
    model_groups,
    opening_cell,
    script,
)
from saltbench.explorer._chunks import (
    ChunkKey,
    build_chunk,
    cell_summary,
    orientation,
    reference_counts,
    token_vocabulary,
)
from saltbench.explorer._interventions import corrupted_spans, intervention_chunk
from saltbench.explorer._lists import list_candidates, task_lists

__all__ = [
    "ASSETS",
    "CALLBACK",
    "CellFiles",
    "ChunkKey",
    "ExplorerOptions",
    "ExplorerSummary",
    "build_chunk",
    "build_explorer",
    "build_index",
    "build_model_part",
    "cell_summary",
    "corrupted_spans",
    "eligibility",
    "intervention_chunk",
    "list_candidates",
    "model_groups",
    "opening_cell",
    "orientation",
    "reference_counts",
    "script",
    "task_lists",
    "token_vocabulary",
]
