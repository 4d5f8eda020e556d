"""``interventions``: the atom-level intervention grid (docs/interventions.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from saltbench.config.schema import (
    Block,
    ConfigError,
    Count,
    Fraction,
    Keywords,
    PositiveInt,
    TaskSlug,
    setting,
)
from saltbench.core.vocabulary import (
    Boundary,
    Placement,
    PromptStyle,
)


@dataclass(frozen=True, kw_only=True)
class InterventionsConfig(Block):
    """``interventions``: the atom-level intervention experiments (docs/interventions.md §3).

    As written: empty ``models`` / ``tasks`` and a null ``seed`` stand for the top-level keys;
    ``saltbench.interventions.InterventionOptions`` is this block resolved against them.
    """

    enabled: bool = setting(False, "Run the intervention stage (rule all asks for its outputs).")
    models: tuple[str, ...] = setting((), "Models to intervene on; empty = the top-level `models`.")
    tasks: tuple[TaskSlug, ...] = setting((), "Tasks; empty = the top-level `tasks`.")
    samples_per_task: PositiveInt = setting(
        8, "First N dataset rows per task (rows with < 2 atoms are skipped)."
    )
    shard_size: PositiveInt = setting(4, "Samples per intervention job (shard).")
    style: PromptStyle = setting("direct", "Prompt style of the prompt the answer prefix is appended to.")
    positions: tuple[Annotated[int, Keywords(minimum=2)], ...] = setting(
        (), "Absolute positions k (1-based index of the predicted atom)."
    )
    position_fractions: tuple[Fraction, ...] = setting(
        (0.1, 0.25, 0.5, 0.75, 1.0), "Relative positions: k = round(f * n) clamped to [2, n]."
    )
    corruption_counts: tuple[Count, ...] = setting(
        (0, 1, 2, 4), "Numbers c of corrupted prefix atoms (0 = clean prefix); c > k-1 skipped."
    )
    corruption_fractions: tuple[Fraction, ...] = setting(
        (), "Corrupted fractions: c = max(1, round(f * (k-1)))."
    )
    placements: tuple[Placement, ...] = setting(
        ("random", "local", "distant"), "Placements of the corrupted atoms.", minItems=1
    )
    next_atoms: PositiveInt = setting(3, "m: atoms k..k+m-1 scored for next_m_accuracy.")
    max_new_tokens: PositiveInt | None = setting(
        None,
        "Greedy budget per intervention; null = 2 x the reference tokens of the next m atoms + 8 (per "
        "sample). Decoding stops earlier once those atoms are complete.",
    )
    boundary: Boundary = setting(
        "token",
        "token: cut the prefix at a boundary of the canonical tokenisation; atom: right after atom k-1 (plus "
        "a line break).",
    )
    batch_size: PositiveInt = setting(16, "Prefixes per forward batch (all share one encoded prompt).")
    seed: int | None = setting(
        None, "Seed of corruption values and random placements; null = the top-level seed."
    )

    def check_grid(self) -> None:
        """The grid has at least one position and one corruption count.

        Raises:
            ConfigError: naming the two keys that are both empty.
        """
        if not self.positions and not self.position_fractions:
            raise ConfigError("interventions: positions and position_fractions are both empty (no k to test)")
        if not self.corruption_counts and not self.corruption_fractions:
            raise ConfigError("interventions: corruption_counts and corruption_fractions are both empty")
