"""The ``interventions:`` block of the workflow config, resolved: :class:`InterventionOptions`.

The block's keys, defaults, bounds and checks are the configuration model's
(:class:`saltbench.config.InterventionsConfig`; docs/architecture.md §5, docs/interventions.md §3).
:class:`InterventionOptions` is that block with empty ``models`` / ``tasks`` and a null ``seed`` resolved
against the top-level keys (:meth:`InterventionOptions.from_config`); it adds what the intervention stage
needs (shard counts, a plain form for Snakemake params and provenance) and no key, default or check of its
own. :data:`CONFIG_SCHEMA` is the block's part of the generated config schema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from saltbench.config import InterventionsConfig, WorkflowConfig
from saltbench.core.shards import n_shards
from saltbench.core.vocabulary import BOUNDARIES, PLACEMENTS, Boundary, Placement


def _block_schema() -> dict[str, Any]:
    from saltbench.config import load_schema

    schema = load_schema()
    return {**schema["properties"]["interventions"], "$defs": schema["$defs"]}


CONFIG_SCHEMA: dict[str, Any] = _block_schema()
"""JSON schema of the ``interventions`` block: ``properties.interventions`` of the config schema (generated
from :class:`~saltbench.config.InterventionsConfig`), with its ``$defs``."""


@dataclass(frozen=True, kw_only=True)
class InterventionOptions(InterventionsConfig):
    """The resolved intervention grid: :class:`~saltbench.config.InterventionsConfig` (field meanings
    and defaults) with ``models``, ``tasks`` and ``seed`` resolved against the top-level keys."""

    seed: int = 0
    """The resolved seed (0 for options made in code without one)."""

    @classmethod
    def from_config(cls, config: WorkflowConfig | Mapping[str, Any]) -> InterventionOptions:
        """The grid of a workflow config: a :class:`~saltbench.config.WorkflowConfig`, or a mapping,
        which is validated whole first (:func:`saltbench.config.resolve_config`, without the registry check).

        Empty ``models``/``tasks`` take the top-level lists; a null ``seed`` takes the top-level ``seed``.

        Raises:
            ConfigError: a wrong key or value of the mapping (a ``ValueError`` naming its key path).
        """
        if not isinstance(config, WorkflowConfig):
            from saltbench.config import resolve_config

            config = resolve_config(config, check_models=False)
        block = config.interventions
        values = {f.name: getattr(block, f.name) for f in dataclasses.fields(block)}
        values.update(
            models=block.models or config.models,
            tasks=block.tasks or config.tasks,
            seed=config.seed if block.seed is None else block.seed,
        )
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        """Plain-data form (for provenance hashes and Snakemake params); inverse of :meth:`from_dict`."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> InterventionOptions:
        """Options from :meth:`as_dict` output (or a hand-written grid), validated against the block's schema
        (:func:`saltbench.config.resolve_block`); keys left out take the block's defaults.

        Raises:
            ConfigError: an unknown key or a bad value (a ``ValueError`` naming ``interventions.<key>``).
        """
        from saltbench.config import resolve_block

        plain = {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}
        options = resolve_block("interventions", plain, cls)
        options.check_grid()
        return options

    def n_shards(self, n_samples: int) -> int:
        """Shards of a task with ``n`` dataset rows: ``ceil(min(samples_per_task, n) / shard_size)``, >= 1."""
        return n_shards(min(self.samples_per_task, max(int(n_samples), 0)), self.shard_size)


__all__ = ["BOUNDARIES", "CONFIG_SCHEMA", "PLACEMENTS", "Boundary", "InterventionOptions", "Placement"]
