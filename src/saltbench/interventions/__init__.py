"""Atom-level interventions: what drives future errors — corrupted prefixes or answer-context length?

For a sample whose reference answer has atoms ``a_1..a_n`` an intervention fixes a position
``2 <= k <= n`` and an answer prefix ``a'_1..a'_{k-1}`` written in the reference layout after the fence
line, appends it to the rendered prompt as the start of the assistant's answer, and lets the model
continue greedily. ``c`` of the prefix atoms are replaced by wrong but well-formed atoms
(:mod:`~saltbench.interventions._corruption`), placed ``random``-ly, ``local``-ly (just before ``k``) or
``distant``-ly (farthest from ``k``); ``c = 0`` (``clean``) isolates the effect of the answer-context
length. Measured per intervention: correctness of atom ``k`` and of atoms ``k..k+m-1``, the model's
confidence for atom ``k`` (every confidence function), and the teacher-forced log-probability of the
correct ``a_k``.

Layers (each usable from a notebook):

* :class:`InterventionOptions` — the config block resolved (keys and defaults:
  :class:`saltbench.config_model.InterventionsConfig`; its schema :data:`CONFIG_SCHEMA`);
* :func:`corruptor_for`, :func:`choose_positions` — corruption rules and placements;
* :class:`AnswerLayout`, :func:`render_prefix` — the fenced answer, its atom spans, prefix rendering;
* :func:`plan_sample` — the grid of one sample;
* :func:`force_and_continue` — one batched pass: teacher-forced target + greedy continuation of many
  prefixes after one encoded prompt (loaded on first access: it imports torch);
* :func:`run_sample`, :func:`run_interventions` — running a model (imports torch lazily);
* :func:`select_shard`, :func:`intervention_shard`, :func:`merge_intervention_shards` — the workflow stage.
"""

from typing import TYPE_CHECKING

from saltbench._lazy import lazy_getattr
from saltbench.interventions._corruption import (
    CODONS,
    CORRUPTION_KINDS,
    AtomCorruptor,
    CorruptionKind,
    choose_positions,
    corruptor_for,
    near_integer,
)
from saltbench.interventions._layout import FENCE_LINE, AnswerLayout, RenderedPrefix, render_prefix
from saltbench.interventions._options import (
    BOUNDARIES,
    CONFIG_SCHEMA,
    PLACEMENTS,
    Boundary,
    InterventionOptions,
    Placement,
)
from saltbench.interventions._plan import (
    InterventionSpec,
    PlacementLabel,
    grid_counts,
    grid_positions,
    plan_sample,
)
from saltbench.interventions._runner import (
    INTERVENTION_SCHEMA,
    SampleRun,
    auto_budget,
    empty_interventions,
    intervention_shard,
    merge_intervention_shards,
    run_interventions,
    run_sample,
    select_shard,
)

_LAZY = {"ForcedContinuation": "_decode", "StopRule": "_decode", "force_and_continue": "_decode"}

__getattr__ = lazy_getattr(__name__, _LAZY)


if TYPE_CHECKING:
    from saltbench.interventions._decode import ForcedContinuation, StopRule, force_and_continue

__all__ = [
    "BOUNDARIES",
    "CODONS",
    "CONFIG_SCHEMA",
    "CORRUPTION_KINDS",
    "FENCE_LINE",
    "INTERVENTION_SCHEMA",
    "PLACEMENTS",
    "AnswerLayout",
    "AtomCorruptor",
    "Boundary",
    "CorruptionKind",
    "ForcedContinuation",
    "InterventionOptions",
    "InterventionSpec",
    "Placement",
    "PlacementLabel",
    "RenderedPrefix",
    "SampleRun",
    "StopRule",
    "auto_budget",
    "choose_positions",
    "corruptor_for",
    "empty_interventions",
    "force_and_continue",
    "grid_counts",
    "grid_positions",
    "intervention_shard",
    "merge_intervention_shards",
    "near_integer",
    "plan_sample",
    "render_prefix",
    "run_interventions",
    "run_sample",
    "select_shard",
]
