"""The ``interventions:`` block of the workflow config: keys, defaults and validation.

:data:`CONFIG_SCHEMA` is the JSON-schema fragment of the block (the lead pastes it into
``saltbench/schema/config.schema.json``); :class:`InterventionOptions` is its typed form, built with
:meth:`InterventionOptions.from_config` from a whole workflow config (defaults filled, values checked,
``models``/``tasks``/``seed`` resolved against the top-level keys when left empty).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, get_args

from saltbench.contracts import PLACEMENTS, Placement
from saltbench.tasks import TASK_SLUGS

Boundary = Literal["token", "atom"]
BOUNDARIES: tuple[Boundary, ...] = get_args(Boundary)
"""Where a prefix ends between atom ``k-1`` and atom ``k`` (see :mod:`saltbench.interventions._layout`)."""


def _prop(kind: Any, default: Any, description: str, **extra: Any) -> dict[str, Any]:
    typed = {"type": kind} if kind is not None else {}
    return {**typed, **extra, "default": default, "description": description}


_FRACTION = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "default": {},
    "description": "Atom-level intervention experiments (data/interventions/{model}/{task}.parquet).",
    "properties": {
        "enabled": _prop("boolean", False, "Run the intervention stage (rule all asks for its outputs)."),
        "models": _prop(
            "array", [], "Models to intervene on; empty = the top-level `models`.", items={"type": "string"}
        ),
        "tasks": _prop(
            "array", [], "Tasks; empty = the top-level `tasks`.", items={"enum": list(TASK_SLUGS)}
        ),
        "samples_per_task": _prop(
            "integer", 8, "First N dataset rows per task (rows with < 2 atoms are skipped).", minimum=1
        ),
        "shard_size": _prop("integer", 4, "Samples per intervention job (shard).", minimum=1),
        "style": _prop(
            None,
            "direct",
            "Prompt style of the prompt the answer prefix is appended to.",
            enum=["direct", "cot"],
        ),
        "positions": _prop(
            "array",
            [],
            "Absolute positions k (1-based index of the predicted atom).",
            items={"type": "integer", "minimum": 2},
        ),
        "position_fractions": _prop(
            "array",
            [0.1, 0.25, 0.5, 0.75, 1.0],
            "Relative positions: k = round(f * n) clamped to [2, n].",
            items=_FRACTION,
        ),
        "corruption_counts": _prop(
            "array",
            [0, 1, 2, 4],
            "Numbers c of corrupted prefix atoms (0 = clean prefix); c > k-1 skipped.",
            items={"type": "integer", "minimum": 0},
        ),
        "corruption_fractions": _prop(
            "array", [], "Corrupted fractions: c = max(1, round(f * (k-1))).", items=_FRACTION
        ),
        "placements": _prop(
            "array",
            list(PLACEMENTS),
            "Placements of the corrupted atoms.",
            items={"enum": list(PLACEMENTS)},
            minItems=1,
        ),
        "next_atoms": _prop("integer", 3, "m: atoms k..k+m-1 scored for next_m_accuracy.", minimum=1),
        "max_new_tokens": _prop(
            ["integer", "null"],
            None,
            "Greedy budget per intervention; null = 2 x the reference tokens of the next m atoms + 8 (per "
            "sample). Decoding stops earlier once those atoms are complete.",
            minimum=1,
        ),
        "boundary": _prop(
            None,
            "token",
            "token: cut the prefix at a boundary of the canonical tokenisation; atom: right after atom k-1 "
            "(plus a line break).",
            enum=list(BOUNDARIES),
        ),
        "batch_size": _prop(
            "integer", 16, "Prefixes per forward batch (all share one encoded prompt).", minimum=1
        ),
        "seed": _prop(
            ["integer", "null"],
            None,
            "Seed of corruption values and random placements; null = the top-level seed.",
        ),
    },
}
"""JSON-schema fragment for ``properties.interventions`` of the workflow config schema."""


def _defaults() -> dict[str, Any]:
    return {k: v["default"] for k, v in CONFIG_SCHEMA["properties"].items()}


def _ints(name: str, values: object, minimum: int) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValueError(f"interventions.{name} must be a list of integers, got {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise ValueError(f"interventions.{name} entries must be integers >= {minimum}, got {v!r}")
        out.append(v)
    return tuple(out)


def _fractions(name: str, values: object) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValueError(f"interventions.{name} must be a list of numbers in (0, 1], got {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise ValueError(f"interventions.{name} entries must be numbers in (0, 1], got {v!r}")
        out.append(float(v))
    return tuple(out)


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"interventions.{name} must be an integer >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class InterventionOptions:
    """The resolved intervention grid (field meanings: :data:`CONFIG_SCHEMA`)."""

    enabled: bool = False
    models: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    samples_per_task: int = 8
    shard_size: int = 4
    style: Literal["direct", "cot"] = "direct"
    positions: tuple[int, ...] = ()
    position_fractions: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 1.0)
    corruption_counts: tuple[int, ...] = (0, 1, 2, 4)
    corruption_fractions: tuple[float, ...] = ()
    placements: tuple[Placement, ...] = PLACEMENTS
    next_atoms: int = 3
    max_new_tokens: int | None = None
    boundary: Boundary = "token"
    batch_size: int = 16
    seed: int = 0

    def __post_init__(self) -> None:
        _ints("positions", self.positions, 2)
        _fractions("position_fractions", self.position_fractions)
        _ints("corruption_counts", self.corruption_counts, 0)
        _fractions("corruption_fractions", self.corruption_fractions)
        if not self.positions and not self.position_fractions:
            raise ValueError("interventions: positions and position_fractions are both empty (no k to test)")
        if not self.corruption_counts and not self.corruption_fractions:
            raise ValueError("interventions: corruption_counts and corruption_fractions are both empty")
        bad = [p for p in self.placements if p not in PLACEMENTS]
        if bad or not self.placements:
            raise ValueError(
                f"interventions.placements must be a non-empty subset of {PLACEMENTS}, got "
                f"{list(self.placements)!r}"
            )
        if self.style not in ("direct", "cot"):
            raise ValueError(f"interventions.style must be 'direct' or 'cot', got {self.style!r}")
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"interventions.boundary must be one of {BOUNDARIES}, got {self.boundary!r}")
        for name in ("samples_per_task", "shard_size", "next_atoms", "batch_size"):
            _positive(name, getattr(self, name))
        if self.max_new_tokens is not None:
            _positive("max_new_tokens", self.max_new_tokens)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"interventions.seed must be an integer, got {self.seed!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> InterventionOptions:
        """Options from a whole workflow config (its ``interventions`` block, defaults filled in).

        Empty ``models``/``tasks`` take the top-level lists; a null ``seed`` takes the top-level ``seed``.

        Raises:
            ValueError: an unknown key or a bad value (the message names ``interventions.<key>``).
        """
        block = dict(config.get("interventions") or {})
        known = set(CONFIG_SCHEMA["properties"])
        unknown = sorted(set(block) - known)
        if unknown:
            raise ValueError(f"interventions: unknown key(s) {unknown}; known: {sorted(known)}")
        values = {**_defaults(), **block}
        seed = values["seed"] if values["seed"] is not None else config.get("seed", 0)
        return cls(
            enabled=bool(values["enabled"]),
            models=tuple(values["models"] or config.get("models", ())),
            tasks=tuple(values["tasks"] or config.get("tasks", ())),
            samples_per_task=values["samples_per_task"],
            shard_size=values["shard_size"],
            style=values["style"],
            positions=tuple(values["positions"]),
            position_fractions=tuple(values["position_fractions"]),
            corruption_counts=tuple(values["corruption_counts"]),
            corruption_fractions=tuple(values["corruption_fractions"]),
            placements=tuple(values["placements"]),
            next_atoms=values["next_atoms"],
            max_new_tokens=values["max_new_tokens"],
            boundary=values["boundary"],
            batch_size=values["batch_size"],
            seed=seed,
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain-data form (for provenance hashes and Snakemake params); inverse of :meth:`from_dict`."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> InterventionOptions:
        """Rebuild options from :meth:`as_dict` output (lists become tuples)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"interventions: unknown key(s) {unknown}; known: {sorted(known)}")
        converted: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        return cls(**converted)

    def n_shards(self, n_samples: int) -> int:
        """Shards of a task with ``n`` dataset rows: ``ceil(min(samples_per_task, n) / shard_size)``, >= 1."""
        n = min(self.samples_per_task, max(int(n_samples), 0))
        return max(1, -(-n // self.shard_size))


__all__ = ["BOUNDARIES", "CONFIG_SCHEMA", "PLACEMENTS", "Boundary", "InterventionOptions", "Placement"]
