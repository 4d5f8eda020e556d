"""The metrics of the metrics table, declared once: name, the aspect it measures, its direction, the function
that computes it and its label (docs/metrics.md §9), then the plugins' (entry-point group
``saltbench.metrics``, docs/extending.md §8).

The metrics stage computes every metric of :func:`metric_registry` (:mod:`saltbench.stages.metrics`, by
what each takes: per-response accuracy values, ranking scores, ranking scores with their responses, or
calibrated probabilities); the metrics contract accepts exactly their names; the dominance analysis
compares confidence functions on the one metric of each aspect marked ``dominance``, in its direction; the
figures label them. Standard library only: the functions are named ``module:function`` and imported when a
job computes them, so that the contracts (imported by the Snakefile) stay cheap.

>>> [m.name for m in BUILTIN_METRICS if m.lower_is_better]
['ece', 'mce', 'brier', 'aurc']
>>> dict(ASPECT_METRICS)
{'calibration': 'ece', 'ranking': 'auroc_pooled', 'rejection': 'aurc'}
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

from saltbench.core.lazy import load_reference
from saltbench.core.plugins import (
    METRIC_GROUP,
    Plugin,
    PluginError,
    broken_plugins,
    check_named_spec,
    discover,
    loaded_plugins,
)

log = logging.getLogger(__name__)

MetricAspect = Literal["accuracy", "calibration", "ranking", "rejection"]
"""What a metric measures: how right the answers are, or one aspect of the uncertainty (docs/metrics.md)."""

MetricInput = Literal["responses", "scores", "scores_by_response", "probabilities"]
"""What the metrics stage calls a metric's function with (docs/metrics.md §9):

* ``responses`` — ``fn(values, values)``, one value per response (the per-response precision or recall);
* ``scores`` — ``fn(scores, correct)``, the units' ranking scores (higher = more confident) and labels;
* ``scores_by_response`` — ``fn(scores, correct, groups)``, plus each unit's response;
* ``probabilities`` — ``fn(probabilities, correct)``, calibrated on the calibration split, evaluated on
  the rest, once per calibration method.

Every value gets a bootstrap interval over responses."""

METRIC_INPUTS: tuple[MetricInput, ...] = get_args(MetricInput)


@dataclass(frozen=True)
class MetricSpec:
    """One metric of the metrics table.

    ``function`` is the callable, or its ``module:function`` name; ``options`` pass fields of the
    configuration's ``metrics`` block as keywords (``(("n_bins", "n_bins"),)``: ``n_bins=metrics.n_bins``).
    ``dominance``: the metric of its aspect in the dominance analysis (one per aspect, built-in only).
    """

    name: str
    aspect: MetricAspect
    direction: Literal["higher", "lower"]
    function: Callable[..., float] | str
    label: str
    takes: MetricInput = "scores"
    options: tuple[tuple[str, str], ...] = ()
    dominance: bool = False

    @property
    def lower_is_better(self) -> bool:
        """Whether smaller values are better (ECE, Brier, AURC)."""
        return self.direction == "lower"

    def load(self) -> Callable[..., float]:
        """The metric's function (imported from its ``module:function`` name on first use)."""
        function = load_reference(self.function) if isinstance(self.function, str) else self.function
        if not callable(function):
            raise PluginError(f"metric {self.name!r}: {self.function!r} is not callable")
        return function

    def bind(self, settings: object) -> Callable[..., float]:
        """The function with its ``options`` read from ``settings`` (the ``metrics`` block), as keywords;
        the bare function when it has none."""
        function = self.load()
        if not self.options:
            return function
        return functools.partial(function, **{kw: getattr(settings, key) for kw, key in self.options})


_METRICS = "saltbench.metrics"
_BINS = (("n_bins", "n_bins"), ("binning", "ece_binning"))

BUILTIN_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("precision", "accuracy", "higher", f"{_METRICS}:mean_score", "precision", "responses"),
    MetricSpec("recall", "accuracy", "higher", f"{_METRICS}:mean_score", "recall", "responses"),
    MetricSpec("ece", "calibration", "lower", f"{_METRICS}:ece", "ECE", "probabilities", _BINS, True),
    MetricSpec("mce", "calibration", "lower", f"{_METRICS}:mce", "MCE", "probabilities", _BINS),
    MetricSpec("brier", "calibration", "lower", f"{_METRICS}:brier", "Brier score", "probabilities"),
    MetricSpec("auroc_pooled", "ranking", "higher", f"{_METRICS}:auroc", "AUROC (pooled)", dominance=True),
    MetricSpec(
        "auroc_per_response",
        "ranking",
        "higher",
        f"{_METRICS}:auroc_per_response",
        "AUROC (per response)",
        "scores_by_response",
    ),
    MetricSpec("prr", "rejection", "higher", f"{_METRICS}:prr", "PRR", options=(("ties", "prr_ties"),)),
    MetricSpec("aurc", "rejection", "lower", f"{_METRICS}:aurc", "AURC", dominance=True),
)
"""The built-in metrics (docs/metrics.md §9), in the order of the metrics table's rows: accuracy, then
calibration, ranking and rejection. ``precision``/``recall`` are the means of the per-response values
``C/(R + I)`` and ``C/G`` the stage computes; a plugin cannot take ``responses``."""

ASPECT_METRICS: Mapping[str, str] = MappingProxyType(
    {spec.aspect: spec.name for spec in BUILTIN_METRICS if spec.dominance}
)
"""The metric that measures each uncertainty aspect in the dominance analysis: calibration = ECE, ranking =
pooled AUROC, rejection = AURC (PRR would repeat the ranking aspect: docs/metrics.md §5.3)."""


def _check_plugin(plugin: Plugin) -> None:
    """A metric plugin is a :class:`MetricSpec` named as its entry point (a lower-case identifier), no
    built-in's name, taking scores or probabilities, not a dominance metric.

    Raises:
        PluginError: it is not (the message names the plugin and the rule).
    """
    builtins = [builtin.name for builtin in BUILTIN_METRICS]
    check_named_spec(plugin, MetricSpec, "saltbench.metrics.MetricSpec", builtins, ("metric", "metric"))
    spec = plugin.value
    if spec.takes not in METRIC_INPUTS[1:] or spec.dominance or spec.direction not in ("higher", "lower"):
        raise PluginError(
            f"metric plugin {plugin.describe()}: takes must be one of {METRIC_INPUTS[1:]} "
            f"(got {spec.takes!r}), direction 'higher' or 'lower' (got {spec.direction!r}), "
            "and dominance False"
        )


@functools.cache
def metric_registry() -> Mapping[str, MetricSpec]:
    """Every metric, by name: the built-ins, then the plugins of ``saltbench.metrics`` that pass their check
    (discovered on the first call). One that fails to import or fails the check is left out with a warning
    and recorded (:func:`saltbench.core.plugins.broken_plugins`)."""
    metrics = {spec.name: spec for spec in BUILTIN_METRICS}
    for plugin in discover(METRIC_GROUP, _check_plugin):
        metrics[plugin.name] = plugin.value
    for name, error in broken_plugins(METRIC_GROUP).items():
        log.warning("saltbench: warning: metric %r left out: %s", name, error)
    return MappingProxyType(metrics)


def metric_spec(name: str) -> MetricSpec:
    """The metric called ``name``; ``ValueError`` naming the known ones otherwise, the plugin's
    :class:`~saltbench.core.plugins.PluginError` where ``name`` is an installed plugin that cannot be used."""
    registry = metric_registry()
    if name in registry:
        return registry[name]
    broken = broken_plugins(METRIC_GROUP)
    if name in broken:
        raise broken[name]
    raise ValueError(f"unknown metric {name!r}; known: {', '.join(registry)}")


def metric_names() -> tuple[str, ...]:
    """The names of every metric (:func:`metric_registry`), in its order."""
    return tuple(metric_registry())


def metric_plugins() -> dict[str, str]:
    """``{name: fingerprint}`` of the metric plugins in use
    (:attr:`saltbench.core.plugins.Plugin.fingerprint`)."""
    metric_registry()
    prefix = f"{METRIC_GROUP}:"
    return {
        key.removeprefix(prefix): value for key, value in loaded_plugins().items() if key.startswith(prefix)
    }


def metric_labels() -> dict[str, str]:
    """``{name: label}`` of every metric, for the figures."""
    return {name: spec.label for name, spec in metric_registry().items()}


def _check_builtins(specs: tuple[MetricSpec, ...]) -> None:
    """One dominance metric per uncertainty aspect, unique names."""
    aspects = [spec.aspect for spec in specs if spec.dominance]
    if sorted(aspects) != ["calibration", "ranking", "rejection"] or len({s.name for s in specs}) != len(
        specs
    ):
        raise RuntimeError(f"built-in metrics: one dominance metric per aspect and unique names ({aspects})")


_check_builtins(BUILTIN_METRICS)

__all__ = [
    "ASPECT_METRICS",
    "BUILTIN_METRICS",
    "METRIC_GROUP",
    "METRIC_INPUTS",
    "MetricAspect",
    "MetricInput",
    "MetricSpec",
    "metric_labels",
    "metric_names",
    "metric_plugins",
    "metric_registry",
    "metric_spec",
]
