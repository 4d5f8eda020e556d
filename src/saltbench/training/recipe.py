"""The training recipe: what determines a run, as frozen dataclasses and plain data, without torch.

:class:`TrainConfig` (tasks, steps, checkpoints, model, optim, ...) with :class:`TaskMix`,
:class:`ArchitectureSpec` and :class:`OptimSpec`, built from plain data by :meth:`TrainConfig.from_dict`, and
the recommended CPU / GPU recipes :data:`DEFAULT_TRAIN_CONFIG` and :data:`GPU_TRAIN_CONFIG`. Only the
standard library is imported, so validating a config (``saltbench.config``, on every Snakemake run, dry
runs included) loads neither torch nor transformers. Training itself (data, model, optimisation loop and
learning-rate schedule) is :mod:`saltbench.training.trainer`; the workflow's keys are in docs/architecture.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from saltbench.core.vocabulary import (
    DEVICES,
    GRANULARITIES,
    PRECISIONS,
    SCRATCHPADS,
    SECOND_PASS_KINDS,
    STYLES,
    Device,
    Granularity,
    Precision,
    Scratchpad,
    SecondPassKind,
)

DEFAULT_TRAIN_CONFIG: dict[str, Any] = {
    "seed": 0,
    "steps": 4000,
    "n_per_task": 10000,
    "token_budget": 1024,
    "checkpoints": {"early": 1300, "mid": 2600, "final": 4000},
    "precision": "fp32",
    "device": "cpu",
    "num_threads": 1,
    "log_every": 250,
    "styles": ["direct", "cot"],
    "scratchpad": "cot",
    "second_pass": {"share": 0.05},
    "model": {
        "d_model": 128,
        "n_layers": 2,
        "n_heads": 4,
        "d_ff": 352,
        "tie_embeddings": True,
        "max_positions": 512,
    },
    "optim": {
        "lr": 2e-3,
        "weight_decay": 0.01,
        "betas": [0.9, 0.95],
        "warmup_steps": 50,
        "min_lr_ratio": 0.1,
        "grad_clip": 1.0,
    },
    "tasks": {
        "kronecker": {
            "weight": 1.5,
            "params": {"output_lengths": [16], "prefer_2d_probability": 1.0, "value_min": 4, "value_max": 9},
        },
        "words": {
            "weight": 1.5,
            "params": {"min_words": 12, "max_words": 18, "min_needles": 1, "subjects": ["numbers"]},
        },
        "matmul": {
            "weight": 0.5,
            "params": {
                "output_lengths": [4],
                "min_inner_dim": 2,
                "max_inner_dim": 2,
                "value_min": 1,
                "value_max": 3,
            },
        },
        "logic": {"weight": 0.25, "params": {"num_variables": [6, 8]}},
    },
}
"""Recommended CPU recipe of the default run's ``salt-tiny`` family, as plain data for ``config.yaml``
(``TrainConfig.from_dict`` builds it; a test checks that the config's ``training`` block is this).

Every example is drawn in either prompt style; a ``cot`` prompt is answered with the task's worked solution
before the fenced answer (``scratchpad: cot``), so one model answers both ways. Its sibling
:data:`DEFAULT_TRAIN_VARIANTS` differs only in always writing the worked solution. Task sizes are chosen so
that a model of this size learns each task partly within the default run's time (docs/tiny-models.md §2,
with the measurements): 2x2 (x) 2x2 Kronecker products of entries 4-9 (every product has two digits, so an
entry's position in the answer does not depend on the values), 2x2 products of 2x2 matrices with entries 1-3,
the numbers of 12-18-word texts, and propositional deduction over 6 or 8 variables. DNA complement and code
output are not in the mix: a model of this size does not learn them (earlier measurements in the same page).
Fixed step count, fp32, one thread: bit-identical weights for a seed on one CPU type and torch version —
and, because training is chaotic, a different CPU type (other rounding) trains different weights of
different quality (docs/tiny-models.md §3).
"""

DEFAULT_TRAIN_VARIANTS: dict[str, dict[str, Any]] = {"salt-tiny-reason": {"scratchpad": "always"}}
"""The default run's sibling families (config ``training.variants``): the same recipe, but every answer
starts with the worked solution, whatever the prompt style asks for — reasoning internalised by training."""

GPU_TRAIN_CONFIG: dict[str, Any] = {
    **DEFAULT_TRAIN_CONFIG,
    "steps": 20000,
    "n_per_task": 40000,
    "token_budget": 8192,
    "checkpoints": {"early": 2500, "mid": 7500, "final": 20000},
    "device": "cuda",
    "precision": "bf16",
    "num_threads": None,
    "model": {
        "d_model": 256,
        "n_layers": 4,
        "n_heads": 8,
        "d_ff": 704,
        "tie_embeddings": True,
        "max_positions": 1024,
    },
    "optim": {**DEFAULT_TRAIN_CONFIG["optim"], "lr": 1e-3, "warmup_steps": 200},
}
"""A bigger model (d256, 4 layers, ~3.2M parameters) and more steps for one GPU, same tasks.

Not measured here (no GPU in this session); bf16 autocast, and deterministic algorithms only warn
on CUDA. ``TrainConfig.from_dict(GPU_TRAIN_CONFIG)``.
"""


@dataclass(frozen=True)
class TaskMix:
    """One task of the training mixture.

    Attributes:
        task: task slug (``kronecker``, ``words`` ...).
        weight: share of the mixture: the task contributes ``round(weight * n_per_task)`` rows.
        params: keyword arguments for the task's ``generate`` (sizes, value ranges ...).
        variant: Code variant / Words subject to restrict to (``None``: the generator's mix).
    """

    task: str
    weight: float = 1.0
    params: Mapping[str, Any] = field(default_factory=dict)
    variant: str | None = None

    def __post_init__(self) -> None:
        w = self.weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"weight of task {self.task!r} must be a finite number >= 0, got {w!r}")
        object.__setattr__(self, "weight", float(w))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))


def parse_tasks_config(tasks_cfg: Mapping[str, Any] | Sequence[TaskMix]) -> tuple[TaskMix, ...]:
    """``{task: {weight: float, params: {...}, variant: str?}}`` (or TaskMix objects) -> TaskMix tuple.

    A bare number as the value is read as the weight. Keys are task slugs; the order is kept.
    """
    if isinstance(tasks_cfg, Sequence) and not isinstance(tasks_cfg, (str, bytes)):
        mixes = tuple(tasks_cfg)
        if not all(isinstance(m, TaskMix) for m in mixes):
            raise ValueError(f"tasks must be a mapping or a sequence of TaskMix, got {tasks_cfg!r}")
        return mixes
    if not isinstance(tasks_cfg, Mapping) or not tasks_cfg:
        raise ValueError(f"tasks must be a non-empty mapping {{task: {{weight, params}}}}, got {tasks_cfg!r}")
    out: list[TaskMix] = []
    for slug, spec in tasks_cfg.items():
        if isinstance(spec, (int, float)) and not isinstance(spec, bool):
            out.append(TaskMix(task=slug, weight=float(spec)))
            continue
        if not isinstance(spec, Mapping):
            raise ValueError(f"tasks.{slug} must be a mapping with weight/params, got {spec!r}")
        unknown = sorted(set(spec) - {"weight", "params", "variant"})
        if unknown:
            raise ValueError(f"tasks.{slug}: unknown key(s) {unknown}; allowed: params, variant, weight")
        out.append(
            TaskMix(
                task=slug,
                weight=spec.get("weight", 1.0),
                params=dict(spec.get("params") or {}),
                variant=spec.get("variant"),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class ArchitectureSpec:
    """Architecture of one model of the family.

    Attributes:
        d_model: hidden size; must be divisible by ``n_heads``.
        n_layers: decoder layers.
        n_heads: attention heads (``n_kv_heads`` key/value heads; ``None`` = ``n_heads``).
        d_ff: SwiGLU intermediate size.
        tie_embeddings: share the input embedding and the output projection.
        max_positions: ``max_position_embeddings`` (longest prompt + answer the model is meant for).
        rope_theta: rotary base.
    """

    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 352
    n_kv_heads: int | None = None
    tie_embeddings: bool = True
    max_positions: int = 1024
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "d_ff", "max_positions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        kv = self.n_kv_heads
        bad_kv = isinstance(kv, bool) or not isinstance(kv, int) or kv < 1 or self.n_heads % kv
        if kv is not None and bad_kv:
            raise ValueError(f"n_kv_heads must be a positive divisor of n_heads={self.n_heads}, got {kv!r}")


@dataclass(frozen=True)
class SecondPassMix:
    """Question rows of the second pass in the training data (``training.second_pass``; built by
    :func:`saltbench.training.second_pass.build_question_pairs`, docs/tiny-models.md §2.4).

    Attributes:
        share: question rows per training row of each task (0: none; the default).
        kinds: the questions asked (:data:`SECOND_PASS_KINDS`).
        granularities: the units asked about, each drawn uniformly per row.
        atom_max: atoms are asked about only in answers with at most this many atoms (the inference
            setting's meaning, ``inference.second_pass.atom_max``).
        wrong_share: the probability that the unit asked about is wrong.
    """

    share: float = 0.0
    kinds: tuple[SecondPassKind, ...] = SECOND_PASS_KINDS
    granularities: tuple[Granularity, ...] = ("atom", "line", "generation")
    atom_max: int = 8
    wrong_share: float = 0.5

    def __post_init__(self) -> None:
        for name in ("share", "wrong_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ValueError(f"second_pass.{name} must be a number in [0, 1], got {value!r}")
        for name, allowed in (("kinds", SECOND_PASS_KINDS), ("granularities", GRANULARITIES)):
            values = tuple(getattr(self, name))
            if not values or len(set(values)) != len(values) or not set(values) <= set(allowed):
                raise ValueError(f"second_pass.{name} must be distinct values of {allowed}, got {values!r}")
            object.__setattr__(self, name, values)
        if isinstance(self.atom_max, bool) or not isinstance(self.atom_max, int) or self.atom_max < 1:
            raise ValueError(f"second_pass.atom_max must be a positive integer, got {self.atom_max!r}")


@dataclass(frozen=True)
class OptimSpec:
    """AdamW and schedule settings (learning-rate formula: :func:`saltbench.training.trainer.lr_at`)."""

    lr: float = 2e-3
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    warmup_steps: int = 50
    min_lr_ratio: float = 0.1
    grad_clip: float | None = 1.0

    def __post_init__(self) -> None:
        if not (isinstance(self.lr, (int, float)) and self.lr > 0):
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio!r}")
        warmup = self.warmup_steps
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"warmup_steps must be an integer >= 0, got {self.warmup_steps!r}")
        betas = tuple(float(b) for b in self.betas)
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas!r}")
        object.__setattr__(self, "betas", betas)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (same config + machine ⇒ same weights).

    Attributes:
        tasks: the training mixture (see :class:`TaskMix`).
        steps: optimizer steps (fixed, not a time budget).
        n_per_task: rows generated per unit of task weight (the pool is cycled in epochs).
        token_budget: max ``batch_size * padded_length`` per batch.
        checkpoints: checkpoint name -> step after which it is saved (each in ``1..steps``).
        model / optim: architecture and optimizer.
        seed: master seed (initialisation, data order, training data seeds).
        precision: ``bf16`` autocast or plain ``fp32`` (weights are always stored in float32).
        device: ``cpu``, ``cuda`` or ``auto`` (cuda when available).
        num_threads: ``torch.set_num_threads`` during training (``None``: leave as is); part of
            what fixes the floating-point reduction order, so keep it fixed for reproducibility.
        log_every: log a progress line every this many steps.
        styles: prompt styles of the training examples; each example's style is drawn uniformly from
            them (seeded per task), so a family trained on ``("direct", "cot")`` sees both prompt forms.
        scratchpad: when an answer starts with the worked solution (:data:`SCRATCHPADS`).
        second_pass: question rows that teach the second pass's questions (:class:`SecondPassMix`).
    """

    tasks: tuple[TaskMix, ...]
    steps: int = 7200
    n_per_task: int = 24000
    token_budget: int = 2048
    checkpoints: Mapping[str, int] = field(default_factory=lambda: {"final": 7200})
    model: ArchitectureSpec = field(default_factory=ArchitectureSpec)
    optim: OptimSpec = field(default_factory=OptimSpec)
    seed: int = 0
    precision: Precision = "fp32"
    device: Device = "cpu"
    num_threads: int | None = 1
    log_every: int = 200
    styles: tuple[str, ...] = ("direct",)
    scratchpad: Scratchpad = "never"
    second_pass: SecondPassMix = field(default_factory=SecondPassMix)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", parse_tasks_config(self.tasks))
        for name in ("steps", "n_per_task", "token_budget", "log_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.checkpoints:
            raise ValueError("checkpoints must name at least one checkpoint")
        for name, step in self.checkpoints.items():
            if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
                raise ValueError(f"checkpoint name must be a plain directory name, got {name!r}")
            if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= self.steps:
                raise ValueError(f"checkpoints.{name} must be a step in 1..{self.steps}, got {step!r}")
        object.__setattr__(self, "checkpoints", MappingProxyType(dict(self.checkpoints)))
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        threads = self.num_threads
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"num_threads must be a positive integer or None, got {threads!r}")
        styles = (self.styles,) if isinstance(self.styles, str) else tuple(self.styles)
        if not styles or len(set(styles)) != len(styles) or not set(styles) <= set(STYLES):
            raise ValueError(f"styles must be distinct values of {STYLES}, got {self.styles!r}")
        object.__setattr__(self, "styles", styles)
        if self.scratchpad not in SCRATCHPADS:
            raise ValueError(f"scratchpad must be one of {SCRATCHPADS}, got {self.scratchpad!r}")

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any]) -> TrainConfig:
        """Build from plain data (``DEFAULT_TRAIN_CONFIG`` layout); unknown keys raise ``ValueError``."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(cfg) - known)
        if unknown:
            raise ValueError(f"unknown training config key(s) {unknown}; known: {sorted(known)}")
        kwargs = dict(cfg)
        if "model" in kwargs and isinstance(kwargs["model"], Mapping):
            kwargs["model"] = ArchitectureSpec(**kwargs["model"])
        if "optim" in kwargs and isinstance(kwargs["optim"], Mapping):
            optim: dict[str, Any] = {k: tuple(v) if k == "betas" else v for k, v in kwargs["optim"].items()}
            kwargs["optim"] = OptimSpec(**optim)
        if "second_pass" in kwargs and isinstance(kwargs["second_pass"], Mapping):
            unknown = sorted(set(kwargs["second_pass"]) - {f.name for f in dataclasses.fields(SecondPassMix)})
            if unknown:
                raise ValueError(f"unknown training.second_pass key(s) {unknown}")
            kwargs["second_pass"] = SecondPassMix(**kwargs["second_pass"])
        if "tasks" not in kwargs:
            raise ValueError("training config needs 'tasks'")
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data; ``from_dict(to_dict())`` gives an equal config."""
        return {
            "tasks": {
                m.task: {
                    "weight": m.weight,
                    "params": dict(m.params),
                    **({"variant": m.variant} if m.variant else {}),
                }
                for m in self.tasks
            },
            "steps": self.steps,
            "n_per_task": self.n_per_task,
            "token_budget": self.token_budget,
            "checkpoints": dict(self.checkpoints),
            "model": dataclasses.asdict(self.model),
            "optim": {**dataclasses.asdict(self.optim), "betas": list(self.optim.betas)},
            "seed": self.seed,
            "precision": self.precision,
            "device": self.device,
            "num_threads": self.num_threads,
            "log_every": self.log_every,
            "styles": list(self.styles),
            "scratchpad": self.scratchpad,
            "second_pass": {
                **dataclasses.asdict(self.second_pass),
                "kinds": list(self.second_pass.kinds),
                "granularities": list(self.second_pass.granularities),
            },
        }


__all__ = [
    "DEFAULT_TRAIN_CONFIG",
    "DEFAULT_TRAIN_VARIANTS",
    "DEVICES",
    "GPU_TRAIN_CONFIG",
    "PRECISIONS",
    "SCRATCHPADS",
    "STYLES",
    "Device",
    "ArchitectureSpec",
    "OptimSpec",
    "Precision",
    "Scratchpad",
    "SecondPassMix",
    "TaskMix",
    "TrainConfig",
    "parse_tasks_config",
]
