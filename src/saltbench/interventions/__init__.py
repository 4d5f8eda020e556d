"""Atom-level interventions: what drives future errors — corrupted prefixes or answer-context length?

For a sample whose reference answer has atoms ``a_1..a_n`` an intervention fixes a position
``2 <= k <= n`` and an answer prefix ``a'_1..a'_{k-1}`` written in the reference layout after the fence
line, appends it to the rendered prompt as the start of the assistant's answer, and lets the model
continue greedily. ``c`` of the prefix atoms are replaced by wrong but well-formed atoms (the
evaluator's rules, :mod:`~saltbench.evaluation._corruption`), placed ``random``-ly, ``local``-ly (just before
``k``) or ``distant``-ly (farthest from ``k``); ``c = 0`` (``clean``) isolates the effect of the
answer-context length. Measured per intervention: correctness of atom ``k`` and of atoms ``k..k+m-1``,
the model's confidence for atom ``k`` (every confidence function), and the teacher-forced log-probability
of the correct ``a_k``.

Layers (each usable from a notebook):

* :class:`InterventionOptions` — the config block resolved (keys and defaults:
  :class:`saltbench.config.InterventionsConfig`; its schema :data:`CONFIG_SCHEMA`);
* :func:`corruptor_for`, :func:`choose_positions` — corruption rules and placements;
* :class:`AnswerLayout`, :func:`render_prefix` — the fenced answer, its atom spans, prefix rendering;
* :func:`plan_sample` — the grid of one sample;
* running a model on the grid is the stage :mod:`saltbench.stages.interventions` (``run_sample``,
  ``run_interventions``, ``intervention_shard``), through a backend's batched pass: teacher-forced target +
  greedy continuation of many prefixes after one encoded prompt
  (:meth:`saltbench.inference.backends.LoadedModel.force_and_continue`).
"""

from saltbench.core.vocabulary import BOUNDARIES, PLACEMENTS, Boundary, Placement
from saltbench.evaluation import (
    CODONS,
    CORRUPTION_KINDS,
    AtomCorruptor,
    CorruptionKind,
    corruptor_for,
    near_integer,
)
from saltbench.interventions._layout import FENCE_LINE, AnswerLayout, RenderedPrefix, render_prefix
from saltbench.interventions._options import CONFIG_SCHEMA, InterventionOptions
from saltbench.interventions._placement import choose_positions
from saltbench.interventions._plan import (
    InterventionSpec,
    PlacementLabel,
    grid_counts,
    grid_positions,
    plan_sample,
)

__all__ = [
    "BOUNDARIES",
    "CODONS",
    "CONFIG_SCHEMA",
    "CORRUPTION_KINDS",
    "FENCE_LINE",
    "PLACEMENTS",
    "AnswerLayout",
    "AtomCorruptor",
    "Boundary",
    "CorruptionKind",
    "InterventionOptions",
    "InterventionSpec",
    "Placement",
    "PlacementLabel",
    "RenderedPrefix",
    "choose_positions",
    "corruptor_for",
    "grid_counts",
    "grid_positions",
    "near_integer",
    "plan_sample",
    "render_prefix",
]
