"""The ``simulated`` backend: simulated models with planted effects (docs/simulation.md).

* :mod:`~saltbench.inference.simulated.model` — :class:`SimulatedModel` and its loader :func:`load` (the
  entry point ``saltbench.backends:simulated``), which answers every prompt from the planted process;
* :mod:`~saltbench.inference.simulated.answers` — what it writes: tokenizer, the :class:`Oracle`, the planted
  answer body and token scores (shared with the draws and the second pass);
* :mod:`~saltbench.inference.simulated.params` — :class:`SimulationParams`, the parameters of the planted
  process (a registry source of kind ``simulated``; the backend itself takes no options);
* :mod:`~saltbench.inference.simulated.chain` — the planted process (compiled with numba);
* :mod:`~saltbench.inference.simulated.thinking` — a reasoning model's ``<think>`` traces;
* :mod:`~saltbench.inference.simulated.stand_in` — stand-ins of the paper's roster for planning at scale.

The parameters are imported with the package (the registry reads them); everything else when one of its
names is first read. Imports no torch.
"""

from typing import TYPE_CHECKING

from saltbench.core.lazy import lazy_getattr
from saltbench.inference.simulated.params import (
    P_FLOOR,
    STRUCTURE_PROB,
    TRACE_TAGS,
    CotEffect,
    SecondPassEffect,
    SimulationParams,
)

__getattr__ = lazy_getattr(
    __name__,
    {
        "atom_chain": "chain",
        "atom_confidence": "chain",
        "atom_lines": "chain",
        "line_confidence": "chain",
        "token_probability": "chain",
        "planted_logit": "chain",
        "planted_thinking": "thinking",
        "trace_length_cdf": "thinking",
        "EOS_ID": "answers",
        "SimulatedModel": "model",
        "load": "model",
    },
)

if TYPE_CHECKING:
    from saltbench.inference.simulated.answers import EOS_ID
    from saltbench.inference.simulated.chain import (
        atom_chain,
        atom_confidence,
        atom_lines,
        line_confidence,
        planted_logit,
        token_probability,
    )
    from saltbench.inference.simulated.model import SimulatedModel, load
    from saltbench.inference.simulated.thinking import planted_thinking, trace_length_cdf

__all__ = [
    "EOS_ID",
    "P_FLOOR",
    "STRUCTURE_PROB",
    "TRACE_TAGS",
    "CotEffect",
    "SecondPassEffect",
    "SimulatedModel",
    "SimulationParams",
    "atom_chain",
    "atom_confidence",
    "atom_lines",
    "line_confidence",
    "load",
    "planted_logit",
    "planted_thinking",
    "token_probability",
    "trace_length_cdf",
]
