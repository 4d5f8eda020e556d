"""``training``: the tiny model families trained by the workflow (docs/tiny-models.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from saltbench.config.schema import (
    Block,
    CheckpointName,
    ConfigError,
    Count,
    FamilyName,
    Keywords,
    PositiveInt,
    TaskSlug,
    optional,
    setting,
)
from saltbench.core.vocabulary import (
    Device,
    Granularity,
    Precision,
    PromptStyle,
    Scratchpad,
    SecondPassKind,
)

Share = Annotated[float, Keywords(minimum=0, maximum=1)]


@dataclass(frozen=True, kw_only=True)
class TrainTaskConfig(Block):
    """One task of ``training.tasks`` (keys of ``saltbench.training.TaskMix``; its defaults apply)."""

    weight: Annotated[float, Keywords(minimum=0)] | None = optional(
        "Share of the mixture: round(weight * n_per_task) rows."
    )
    params: Mapping[str, Any] | None = optional("Keyword arguments of the task's generate().")
    variant: str | None = optional(
        "Code variant / Words subject to restrict to (null: the mix).", nullable=True
    )


@dataclass(frozen=True, kw_only=True)
class TrainModelConfig(Block):
    """``training.model`` (keys of ``saltbench.training.ArchitectureSpec``; its defaults apply)."""

    d_model: PositiveInt | None = optional("Hidden size; divisible by n_heads.")
    n_layers: PositiveInt | None = optional("Decoder layers.")
    n_heads: PositiveInt | None = optional("Attention heads.")
    d_ff: PositiveInt | None = optional("SwiGLU intermediate size.")
    n_kv_heads: PositiveInt | None = optional(
        "Key/value heads, a divisor of n_heads (null: n_heads).", nullable=True
    )
    tie_embeddings: bool | None = optional("Share the input embedding and the output projection.")
    max_positions: PositiveInt | None = optional("Longest prompt + answer (max_position_embeddings).")
    rope_theta: Annotated[float, Keywords(exclusiveMinimum=0)] | None = optional("Rotary base.")


@dataclass(frozen=True, kw_only=True)
class TrainOptimConfig(Block):
    """``training.optim`` (keys of ``saltbench.training.OptimSpec``; its defaults apply)."""

    lr: Annotated[float, Keywords(exclusiveMinimum=0)] | None = optional("Peak learning rate.")
    weight_decay: Annotated[float, Keywords(minimum=0)] | None = optional("AdamW weight decay.")
    betas: (
        tuple[
            Annotated[float, Keywords(minimum=0, exclusiveMaximum=1)],
            Annotated[float, Keywords(minimum=0, exclusiveMaximum=1)],
        ]
        | None
    ) = optional("AdamW betas, each in [0, 1).")
    eps: Annotated[float, Keywords(exclusiveMinimum=0)] | None = optional("AdamW epsilon.")
    warmup_steps: Count | None = optional("Linear warm-up steps.")
    min_lr_ratio: Annotated[float, Keywords(minimum=0, maximum=1)] | None = optional(
        "Final learning rate / peak learning rate (cosine decay)."
    )
    grad_clip: Annotated[float, Keywords(exclusiveMinimum=0)] | None = optional(
        "Gradient-norm clip (null: no clipping).", nullable=True
    )


@dataclass(frozen=True, kw_only=True)
class TrainSecondPassConfig(Block):
    """``training.second_pass`` (keys of ``saltbench.training.SecondPassMix``; its defaults apply)."""

    share: Share | None = optional(
        "Second-pass question rows per training row of each task (0: none), docs/tiny-models.md §2.4."
    )
    kinds: tuple[SecondPassKind, ...] | None = optional(
        "The questions taught: verbalized (reply 100 or 0) and/or p_true (reply True or False).",
        minItems=1,
        uniqueItems=True,
    )
    granularities: tuple[Granularity, ...] | None = optional(
        "The units asked about, each drawn uniformly per question row.", minItems=1, uniqueItems=True
    )
    atom_max: PositiveInt | None = optional("Atoms are asked about only in answers with at most this many.")
    wrong_share: Share | None = optional("The probability that the unit asked about is wrong.")


@dataclass(frozen=True, kw_only=True)
class TrainingConfig(Block):
    """``training``: the tiny model family trained by the workflow (rules/train.smk).

    ``enabled`` and ``name`` are the workflow's; the other keys are those of
    ``saltbench.training.TrainConfig``, whose defaults apply to a key not given (they are stated there, not
    here: a key not given stays absent from the resolved mapping and from :meth:`train_config`).
    """

    enabled: bool = setting(False, "Train the family (rule all then asks for its outputs).")
    name: FamilyName = setting(
        "salt-tiny", "Family name: data/models/{name}/{checkpoint}; registry entries {name}@{checkpoint}."
    )
    tasks: Mapping[TaskSlug, Annotated[float, Keywords(minimum=0)] | TrainTaskConfig] | None = optional(
        "The training mixture: task -> weight, or task -> {weight, params, variant}.", minProperties=1
    )
    steps: PositiveInt | None = optional("Optimizer steps (fixed, not a time budget).")
    n_per_task: PositiveInt | None = optional("Rows generated per unit of task weight.")
    token_budget: PositiveInt | None = optional("Most batch_size x padded length per batch.")
    checkpoints: Mapping[CheckpointName, PositiveInt] | None = optional(
        "Checkpoint name -> step after which it is saved (each in 1..steps).", minProperties=1
    )
    model: TrainModelConfig | None = optional("Architecture (saltbench.training.ArchitectureSpec).")
    optim: TrainOptimConfig | None = optional("Optimizer and schedule (saltbench.training.OptimSpec).")
    seed: int | None = optional("Training seed (initialisation, data order, training data seeds).")
    precision: Precision | None = optional("bf16 autocast or plain fp32.")
    device: Device | None = optional("cpu, cuda or auto (cuda when available).")
    num_threads: PositiveInt | None = optional(
        "torch threads during training (null: torch's default); fixes the reduction order.", nullable=True
    )
    log_every: PositiveInt | None = optional("Progress line every this many steps.")
    styles: tuple[PromptStyle, ...] | None = optional(
        "Prompt styles of the training examples (each drawn uniformly per example).",
        minItems=1,
        uniqueItems=True,
    )
    scratchpad: Scratchpad | None = optional(
        "When an answer starts with the task's worked solution: never, cot (for cot prompts) or always."
    )
    second_pass: TrainSecondPassConfig | None = optional(
        "Question rows that teach the second pass's two questions (saltbench.training.SecondPassMix)."
    )
    variants: Mapping[FamilyName, TrainingVariantConfig] | None = optional(
        "Sibling families trained with this recipe and a few keys changed (name -> those keys), each a job "
        "of its own with the same checkpoints: data/models/{variant}/{checkpoint}, registry entries "
        "{variant}@{checkpoint}.",
    )

    def train_config(self) -> dict[str, Any]:
        """The ``saltbench.training.TrainConfig`` keys as written (what ``TrainConfig.from_dict`` takes)."""
        return {k: v for k, v in self.to_dict().items() if k not in ("enabled", "name", "variants")}

    @property
    def checkpoint_names(self) -> tuple[str, ...]:
        """Names of the configured checkpoints (``()`` when ``checkpoints`` is not given)."""
        return tuple(self.checkpoints or ())

    def families(self) -> dict[str, dict[str, Any]]:
        """Family name -> its ``TrainConfig`` keys: this block's family first, then every variant (this
        block's keys with the variant's written over them)."""
        base = self.train_config()
        variants = self.variants or {}
        return {self.name: base} | {name: base | v.to_dict() for name, v in variants.items()}

    def check_variants(self) -> None:
        """A variant's name differs from the family's name."""
        if self.name in (self.variants or {}):
            raise ConfigError(f"training.variants.{self.name}: a variant cannot take the family's own name")


@dataclass(frozen=True, kw_only=True)
class TrainingVariantConfig(Block):
    """``training.variants.{name}``: the keys a sibling family changes (the rest are ``training``'s)."""

    scratchpad: Scratchpad | None = optional("As training.scratchpad.")
    styles: tuple[PromptStyle, ...] | None = optional("As training.styles.", minItems=1, uniqueItems=True)
    seed: int | None = optional("As training.seed.")
