"""The registry of confidence functions: the paper's nine, the six beyond the paper, then the plugins'
(docs/confidence.md §4, docs/extending.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from saltbench.confidence._extended import EXTENDED_FUNCTIONS
from saltbench.confidence._paper import FloatArray
from saltbench.confidence.specs import PAPER_FUNCTIONS, STAGE_FUNCTIONS, ConfidenceSpec
from saltbench.core.plugins import (
    CONFIDENCE_GROUP,
    Plugin,
    PluginError,
    broken_plugins,
    check_named_spec,
    discover,
)
from saltbench.core.vocabulary import CONFIDENCE_NAME_PATTERN, Flavour

NAME_PATTERN = CONFIDENCE_NAME_PATTERN
"""A confidence function's name: it becomes the column ``{flavour}.{name}`` of the units table."""

CONFIDENCE_PLUGINS: dict[str, Plugin] = {}
"""Function name -> the entry point of the installed package that contributes it."""


def _check_plugin(plugin: Plugin) -> None:
    """A confidence plugin is a :class:`ConfidenceSpec` named as its entry point, no built-in's name, with a
    ``token_score``.

    Raises:
        PluginError: it is not (the message names the plugin and the rule).
    """
    builtins = [builtin.name for builtin in (*PAPER_FUNCTIONS, *EXTENDED_FUNCTIONS, *STAGE_FUNCTIONS)]
    check_named_spec(
        plugin, ConfidenceSpec, "saltbench.confidence.ConfidenceSpec", builtins, ("confidence", "function")
    )
    if plugin.value.token_score is None:
        raise PluginError(f"confidence plugin {plugin.describe()} has no token_score")


def _registry() -> dict[str, ConfidenceSpec]:
    """The built-in functions, then the plugins of the ``saltbench.confidence`` group that pass
    :func:`_check_plugin`; one that fails to import or fails it is left out and recorded
    (:func:`saltbench.core.plugins.broken_plugins`): only a configuration that selects it is refused."""
    functions = {spec.name: spec for spec in (*PAPER_FUNCTIONS, *EXTENDED_FUNCTIONS, *STAGE_FUNCTIONS)}
    for plugin in discover(CONFIDENCE_GROUP, _check_plugin):
        functions[plugin.name] = plugin.value
        CONFIDENCE_PLUGINS[plugin.name] = plugin
    return functions


CONFIDENCE_FUNCTIONS: Mapping[str, ConfidenceSpec] = MappingProxyType(_registry())
"""Every confidence function, by name: the paper's nine, the six of :data:`EXTENDED_FUNCTIONS`, the scoring
stage's own two (:data:`~saltbench.confidence.specs.STAGE_FUNCTIONS`), then the plugins' (docs/confidence.md
§4, docs/extending.md)."""


def confidence_spec(name: str) -> ConfidenceSpec:
    """The function called ``name``; ``ValueError`` naming the installed ones otherwise, the plugin's
    :class:`~saltbench.core.plugins.PluginError` where ``name`` is an installed plugin that cannot be used."""
    broken = broken_plugins(CONFIDENCE_GROUP)
    if name not in CONFIDENCE_FUNCTIONS and name in broken:
        raise broken[name]
    try:
        return CONFIDENCE_FUNCTIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown confidence function {name!r}; installed: {', '.join(CONFIDENCE_FUNCTIONS)}"
        ) from None


def scored_columns(names: Sequence[str], flavours: Sequence[Flavour]) -> list[tuple[Flavour, str]]:
    """The ``(flavour, function)`` pairs a run scores: each selected function in each selected flavour it
    supports, flavour by flavour (the column order of the units table)."""
    return [(f, n) for f in flavours for n in names if f in confidence_spec(n).flavours]


def ranking_scores(name: str, values: npt.ArrayLike) -> FloatArray:
    """Values of confidence function ``name`` oriented so that higher = more confident (negated if needed)."""
    arr = np.asarray(values, dtype=np.float64)
    return arr if confidence_spec(name).higher_is_confident else -arr


__all__ = [
    "CONFIDENCE_FUNCTIONS",
    "CONFIDENCE_PLUGINS",
    "NAME_PATTERN",
    "confidence_spec",
    "ranking_scores",
    "scored_columns",
]
