"""Pairing reasoning and non-reasoning variants of one base model, and the comparisons to make.

Two kinds of paired comparison feed the reasoning trade-off table:

* ``"style"`` — one model, prompted ``direct`` (a) vs ``cot`` (b);
* ``"reasoning"`` — one prompt style, the non-reasoning variant (a) vs the reasoning variant (b) of the
  same base model.

Base model (documented rule): a model name is split on ``-``, and the components ``thinking``,
``reasoning`` and ``instruct`` (case-insensitive) are dropped: ``qwen3-8b-thinking`` → ``qwen3-8b``,
``qwen3-4b-thinking-2507`` and ``qwen3-4b-instruct-2507`` → ``qwen3-4b-2507``, ``phi-4-reasoning`` →
``phi-4``. A base with exactly one reasoning and one non-reasoning model (registry key ``reasoning``) in
the roster forms a pair. An explicit optional registry key ``pair_with: <other model>`` overrides the rule
(both models must be in the roster and differ in ``reasoning``); bases with several candidates and no
``pair_with`` are skipped with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

logger = logging.getLogger(__name__)

_DROPPED_COMPONENTS = frozenset({"thinking", "reasoning", "instruct"})

ComparisonKind = Literal["style", "reasoning"]


@dataclass(frozen=True)
class ModelPair:
    """A non-reasoning model and its reasoning variant.

    Attributes:
        base_model: the shared base name.
        non_reasoning: the model without built-in reasoning (condition a).
        reasoning: the reasoning model (condition b).
        source: ``"pair_with"`` (explicit registry key) or ``"base_model"`` (derived from the names).
    """

    base_model: str
    non_reasoning: str
    reasoning: str
    source: Literal["pair_with", "base_model"]


@dataclass(frozen=True)
class Comparison:
    """One paired comparison: condition a (baseline) vs condition b (treatment)."""

    kind: ComparisonKind
    model_a: str
    style_a: str
    model_b: str
    style_b: str
    base_model: str

    @property
    def label(self) -> str:
        """Short label: the model for style comparisons; the pair, reasoning model first, and the style for
        reasoning ones (``r1-distill vs qwen (direct)``: two models of one base would share a base-model
        label)."""
        return self.model_a if self.kind == "style" else f"{self.model_b} vs {self.model_a} ({self.style_a})"


def base_model(name: str) -> str:
    """The base model of ``name``: dash components ``thinking``/``reasoning``/``instruct`` removed.

    Example:
        >>> [base_model(m) for m in ("qwen3-8b-thinking", "qwen3-4b-instruct-2507", "phi-4-reasoning")]
        ['qwen3-8b', 'qwen3-4b-2507', 'phi-4']
    """
    if not name:
        raise ValueError(f"name must be a non-empty model name, got {name!r}")
    kept = [part for part in name.split("-") if part.lower() not in _DROPPED_COMPONENTS]
    return "-".join(kept) or name


def _field(spec: Any, key: str, default: Any) -> Any:
    if spec is None:
        return default
    if isinstance(spec, Mapping):
        return spec.get(key, default)
    return getattr(spec, key, default)


def model_pairs(registry: Mapping[str, Any], models: Sequence[str]) -> list[ModelPair]:
    """Reasoning / non-reasoning pairs among ``models``.

    Args:
        registry: model name → spec (a mapping such as the raw YAML entry, or an object with attributes);
            read keys: ``reasoning`` (bool, default False) and optional ``pair_with`` (model name).
            Models absent from the registry count as non-reasoning.
        models: the roster (order kept in the output).

    Raises:
        ValueError: a ``pair_with`` target outside the roster, or a pair whose ``reasoning`` flags agree.

    Example:
        >>> reg = {"q-8b": {"reasoning": False}, "q-8b-thinking": {"reasoning": True}, "llama": {}}
        >>> model_pairs(reg, ["q-8b", "q-8b-thinking", "llama"])
        [ModelPair(base_model='q-8b', non_reasoning='q-8b', reasoning='q-8b-thinking', source='base_model')]
    """
    roster = list(dict.fromkeys(models))
    is_reasoning = {m: bool(_field(registry.get(m), "reasoning", False)) for m in roster}
    pairs: list[ModelPair] = []
    used: set[str] = set()
    for m in roster:
        other = _field(registry.get(m), "pair_with", None)
        if other is None or m in used:
            continue
        if other not in is_reasoning:
            raise ValueError(f"pair_with of model {m!r} names {other!r}, which is not in the roster {roster}")
        if is_reasoning[m] == is_reasoning[other]:
            raise ValueError(
                f"pair_with pairs {m!r} with {other!r} but both have reasoning={is_reasoning[m]}; "
                "one must differ"
            )
        a, b = (m, other) if not is_reasoning[m] else (other, m)
        pairs.append(ModelPair(base_model(a), a, b, "pair_with"))
        used.update((m, other))
    groups: dict[str, list[str]] = {}
    for m in roster:
        if m not in used:
            groups.setdefault(base_model(m), []).append(m)
    for base, members in groups.items():
        plain = [m for m in members if not is_reasoning[m]]
        thinking = [m for m in members if is_reasoning[m]]
        if len(plain) == 1 and len(thinking) == 1:
            pairs.append(ModelPair(base, plain[0], thinking[0], "base_model"))
        elif plain and thinking:
            logger.warning("base model %s has candidates %s; set pair_with in the registry", base, members)
    order = {m: i for i, m in enumerate(roster)}
    return sorted(pairs, key=lambda p: order[p.non_reasoning])


def comparisons(
    available: Sequence[tuple[str, str]],
    pairs: Sequence[ModelPair],
    *,
    style_a: str = "direct",
    style_b: str = "cot",
) -> list[Comparison]:
    """All paired comparisons that the available (model, style) runs allow.

    * ``"style"``: every model with both ``style_a`` and ``style_b`` runs;
    * ``"reasoning"``: every pair and every style that both models of the pair were run with.
    """
    have = set(available)
    models = list(dict.fromkeys(m for m, _ in available))
    styles = list(dict.fromkeys(s for _, s in available))
    out = [
        Comparison("style", m, style_a, m, style_b, base_model(m))
        for m in models
        if (m, style_a) in have and (m, style_b) in have
    ]
    for pair in pairs:
        for s in styles:
            if (pair.non_reasoning, s) in have and (pair.reasoning, s) in have:
                out.append(Comparison("reasoning", pair.non_reasoning, s, pair.reasoning, s, pair.base_model))
    return out
