"""The one registry of confidence estimators: the paper's nine, the six token functions beyond the paper,
CCP, the trace, the draws' consistency and the second pass, then the plugins' (docs/confidence.md §4 and
§Families; docs/extending.md §3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from saltbench.confidence._estimators import OTHER_ESTIMATORS
from saltbench.confidence._extended import EXTENDED_FUNCTIONS
from saltbench.confidence._paper import FloatArray
from saltbench.confidence.specs import PAPER_FUNCTIONS, ConfidenceSpec
from saltbench.core.plugins import (
    CONFIDENCE_GROUP,
    Plugin,
    PluginError,
    broken_plugins,
    check_named_spec,
    discover,
)
from saltbench.core.vocabulary import CONFIDENCE_NAME_PATTERN, ESTIMATOR_FAMILIES, SOURCES, Flavour

NAME_PATTERN = CONFIDENCE_NAME_PATTERN
"""A confidence function's name: it becomes the column ``{flavour}.{name}`` of the units table."""

CONFIDENCE_PLUGINS: dict[str, Plugin] = {}
"""Function name -> the entry point of the installed package that contributes it."""


_BUILTINS: tuple[ConfidenceSpec, ...] = (*PAPER_FUNCTIONS, *EXTENDED_FUNCTIONS, *OTHER_ESTIMATORS)


def _check_plugin(plugin: Plugin) -> None:
    """A confidence plugin is a :class:`ConfidenceSpec` named as its entry point, no built-in's name, of a
    known family; a token function (``source`` empty) of the ``single_pass`` family with a ``token_score``,
    or an estimator of any family that names the source of its column and has no ``token_score`` (a
    declaration: the metrics, the analysis and the explorer read ``{source}.{name}`` wherever a units table
    has it; docs/confidence.md §Families).

    Raises:
        PluginError: it is not (the message names the plugin and the rule).
    """
    check_named_spec(
        plugin,
        ConfidenceSpec,
        "saltbench.confidence.ConfidenceSpec",
        [builtin.name for builtin in _BUILTINS],
        ("confidence", "function"),
    )
    spec: ConfidenceSpec = plugin.value
    if spec.family not in ESTIMATOR_FAMILIES:
        raise PluginError(
            f"confidence plugin {plugin.describe()} has family {spec.family!r}; "
            f"known: {', '.join(ESTIMATOR_FAMILIES)}"
        )
    if spec.from_tokens:
        if spec.token_score is None:
            raise PluginError(f"confidence plugin {plugin.describe()} has no token_score (and no source)")
        if spec.family != "single_pass":
            raise PluginError(
                f"confidence plugin {plugin.describe()} has a token_score, so it is single_pass, "
                f"not {spec.family!r}; an estimator of another family names its source instead"
            )
        return
    if spec.source not in SOURCES or spec.token_score is not None:
        raise PluginError(
            f"confidence plugin {plugin.describe()}: source {spec.source!r} must be one of "
            f"{', '.join(SOURCES)} and an estimator with a source has no token_score (its column is "
            "computed elsewhere)"
        )


def _registry() -> dict[str, ConfidenceSpec]:
    """The built-in functions, then the plugins of the ``saltbench.confidence`` group that pass
    :func:`_check_plugin`; one that fails to import or fails it is left out and recorded
    (:func:`saltbench.core.plugins.broken_plugins`): only a configuration that selects it is refused."""
    functions = {spec.name: spec for spec in _BUILTINS}
    for plugin in discover(CONFIDENCE_GROUP, _check_plugin):
        functions[plugin.name] = plugin.value
        CONFIDENCE_PLUGINS[plugin.name] = plugin
    return functions


CONFIDENCE_FUNCTIONS: Mapping[str, ConfidenceSpec] = MappingProxyType(_registry())
"""Every confidence estimator, by name, each declared once: the paper's nine, the six of
:data:`EXTENDED_FUNCTIONS`, the seven of :data:`OTHER_ESTIMATORS` (CCP, the trace, the draws, the second
pass), then the plugins' (docs/confidence.md §4 and §Families; docs/extending.md). Names are unique across
sources, so a name alone gives the direction of any column ``{source}.{name}``."""

TOKEN_FUNCTIONS: Mapping[str, ConfidenceSpec] = MappingProxyType(
    {name: spec for name, spec in CONFIDENCE_FUNCTIONS.items() if spec.from_tokens}
)
"""The estimators the scoring stage computes from the token distributions
(:attr:`ConfidenceSpec.from_tokens`): the names ``scoring.confidence_functions`` accepts."""


def estimator_family(name: str) -> str:
    """The family of estimator ``name`` (:attr:`ConfidenceSpec.family`); ``single_pass`` for a name the
    registry does not know (a column of a plugin that is not installed here)."""
    spec = CONFIDENCE_FUNCTIONS.get(name)
    return spec.family if spec is not None else "single_pass"


def estimator_column(name: str, flavour: str) -> str:
    """The units column of estimator ``name`` in the tables of ``flavour``: ``{source}.{name}`` for an
    estimator with a source of its own (the draws', the second pass's, the trace's, CCP's ``topk``), read
    whatever the flavour, ``{flavour}.{name}`` for a token function (docs/confidence.md §Families).

    >>> estimator_column("agreement", "topk"), estimator_column("mean_probability", "full")
    ('draws.agreement', 'full.mean_probability')
    """
    return f"{confidence_spec(name).source or flavour}.{name}"


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
    """The ``(flavour, function)`` pairs a run scores from the token distributions: each selected token
    function in each selected flavour it supports, flavour by flavour (the column order of the units
    table); estimators with a ``source`` are computed elsewhere and left out."""
    specs = [confidence_spec(n) for n in names]
    return [(f, s.name) for f in flavours for s in specs if s.from_tokens and f in s.flavours]


def ranking_scores(name: str, values: npt.ArrayLike) -> FloatArray:
    """Values of confidence function ``name`` oriented so that higher = more confident (negated if needed)."""
    arr = np.asarray(values, dtype=np.float64)
    return arr if confidence_spec(name).higher_is_confident else -arr


__all__ = [
    "CONFIDENCE_FUNCTIONS",
    "CONFIDENCE_PLUGINS",
    "NAME_PATTERN",
    "TOKEN_FUNCTIONS",
    "confidence_spec",
    "estimator_column",
    "estimator_family",
    "ranking_scores",
    "scored_columns",
]
