"""Simulated models with planted effects (docs/simulation.md): the parameters
(:mod:`~saltbench.inference.simulation.params`), the planted process
(:mod:`~saltbench.inference.simulation.chain`), a reasoning model's ``<think>`` traces
(:mod:`~saltbench.inference.simulation.thinking`) and the ``simulated`` backend
(:mod:`~saltbench.inference.simulated`, imported on first use)."""

from saltbench.core.lazy import lazy_getattr
from saltbench.inference.simulation.params import (
    P_FLOOR,
    STRUCTURE_PROB,
    TRACE_TAGS,
    CotEffect,
    SimulationParams,
)

# numba (the chain's kernels) and the trace lengths load on first use: the Snakefile reads SimulationParams
# through the registry while planning.
__getattr__ = lazy_getattr(
    __name__,
    {
        "atom_chain": "chain",
        "atom_confidence": "chain",
        "planted_logit": "chain",
        "planted_thinking": "thinking",
        "trace_length_cdf": "thinking",
    },
)

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
