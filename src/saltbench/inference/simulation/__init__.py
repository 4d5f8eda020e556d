"""Simulated models with planted effects (docs/simulation.md): the parameters
(:mod:`~saltbench.inference.simulation.params`), the planted process
(:mod:`~saltbench.inference.simulation.chain`), a reasoning model's ``<think>`` traces
(:mod:`~saltbench.inference.simulation.thinking`) and the ``simulated`` backend
(:mod:`~saltbench.inference.simulated`, imported on first use)."""

from saltbench.inference.simulation.chain import atom_chain, atom_confidence, planted_logit
from saltbench.inference.simulation.params import (
    P_FLOOR,
    STRUCTURE_PROB,
    TRACE_TAGS,
    CotEffect,
    SimulationParams,
)
from saltbench.inference.simulation.thinking import planted_thinking, trace_length_cdf

__all__ = [
    "P_FLOOR",
    "STRUCTURE_PROB",
    "TRACE_TAGS",
    "CotEffect",
    "SimulationParams",
    "atom_chain",
    "atom_confidence",
    "planted_logit",
    "planted_thinking",
    "trace_length_cdf",
]
