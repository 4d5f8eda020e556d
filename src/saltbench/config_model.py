"""The workflow configuration as one typed model: every key, its type, bounds, default and description.

Each block of a config file (``config/*.yaml``) is a frozen dataclass below; :class:`WorkflowConfig` is the
whole file. A field's default is the key's only default, and its ``setting`` / ``required`` / ``optional``
call carries the description and the JSON-schema bounds. From these classes come:

* the JSON schema, :func:`json_schema`: committed as ``saltbench/schema/config.schema.json`` (for editors
  and Snakemake users), regenerated with ``python -m saltbench.config --write-schema``; a test checks that
  the committed file is what the model generates;
* the typed, resolved configuration, :func:`build`: a mapping that the schema has validated becomes a
  :class:`WorkflowConfig` with every default filled in; :meth:`Block.to_dict` gives back the plain resolved
  mapping (the keys as written, then the defaulted ones), which the Snakefile keeps as ``config``;
* the checks between keys of the configuration itself (``check_*`` methods), which raise
  :class:`ConfigError` naming the key.

Validation with readable messages and the checks against the outside world (task generators, the paper
data folder, the model registry, the training recipe) are :mod:`saltbench.config`'s. See
docs/architecture.md §5.

**Why dataclasses** (not pydantic 2 or attrs). (1) Import cost: the Snakefile imports the configuration on
every invocation, dry runs included; this module needs only the standard library, where pydantic costs about
30 ms to import plus the building of a core schema per model class, and attrs would be one more dependency
for what dataclasses do. (2) The schema: generated here with exactly the keywords that the validator and the
error messages rely on (``"type": ["integer", "null", "object"]`` for ``datasets.n_samples``, strict
integers, ``additionalProperties: false``, no ``title`` noise), where pydantic's generator emits ``anyOf``
and ``$defs`` per model and its validator has its own error texts. (3) Values stay as written: ``2`` under a
float key stays ``2`` (provenance hashes and Snakemake's recorded params do not change), where pydantic
coerces in lax mode and rejects lists for tuples in strict mode.

Closed vocabularies (prompt styles, flavours, granularities, placements, confidence functions, calibration
methods, ...) are ``Literal`` types here, so that this module imports nothing heavy; a test checks that each
equals its registry in the package. The task slugs are the schema's ``$defs/task``, filled from
``saltbench.tasks.TASK_SLUGS`` when the schema is generated.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, NoneType, UnionType
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

MAX_SAMPLES_PER_TASK = 1_000_000
"""Upper bound of ``datasets.n_samples`` (per task; also the schema's ``maximum``). The paper uses at most
400 samples per task; a count of 10**12 made building the DAG run out of memory (16 GB)."""

SCHEMA_ID = "https://json-schema.org/draft/2020-12/schema"


class ConfigError(ValueError):
    """The workflow configuration is invalid; the message names the key."""


# -- JSON-schema annotations of types ------------------------------------------------------------------


@dataclass(frozen=True, init=False)
class Keywords:
    """JSON-schema keywords of an annotated type: ``Annotated[int, Keywords(minimum=1)]`` (hashable, as
    ``typing`` needs for the members of a union)."""

    items: tuple[tuple[str, Any], ...]

    def __init__(self, **keywords: Any) -> None:
        """``keywords``: JSON-schema keyword -> value."""
        object.__setattr__(self, "items", tuple(keywords.items()))


@dataclass(frozen=True)
class Ref:
    """A reference to a definition of the schema's ``$defs`` (``Annotated[str, Ref("task")]``)."""

    name: str


TaskSlug = Annotated[str, Ref("task")]
"""A task slug: the schema's ``$defs/task``, whose names are ``saltbench.tasks.TASK_SLUGS``."""
PromptStyle = Literal["direct", "cot"]
Flavour = Literal["topk", "full"]
Granularity = Literal["atom", "line", "generation"]
Placement = Literal["random", "local", "distant"]
Boundary = Literal["token", "atom"]
"""Where an intervention's answer prefix ends (see docs/interventions.md §2)."""
ConfidenceName = Literal[
    "mean_probability",
    "median_probability",
    "max_probability",
    "log_probability_sum",
    "max_log_probability",
    "log_perplexity",
    "perplexity",
    "max_entropy",
    "mean_entropy",
]
CalibrationName = Literal["zscore_sigmoid", "platt", "isotonic", "histogram", "none"]
FitMethod = Literal["logistic", "linear"]
Backend = Literal["hf", "vllm"]
Precision = Literal["bf16", "fp32"]
Device = Literal["cpu", "cuda", "auto"]
Scratchpad = Literal["never", "cot", "always"]
FamilyName = Annotated[str, Keywords(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
"""A trained family's name: data/models/{name}/{checkpoint}; registry entries {name}@{checkpoint}."""

PositiveInt = Annotated[int, Keywords(minimum=1)]
Count = Annotated[int, Keywords(minimum=0)]
SampleCount = Annotated[int, Keywords(minimum=1, maximum=MAX_SAMPLES_PER_TASK)]
OpenUnit = Annotated[float, Keywords(exclusiveMinimum=0, exclusiveMaximum=1)]
"""A number in (0, 1)."""
Fraction = Annotated[float, Keywords(exclusiveMinimum=0, maximum=1)]
"""A number in (0, 1]."""
ModelName = Annotated[str, Keywords(pattern=r"^[A-Za-z0-9._@+-]+$")]
CheckpointName = Annotated[str, Keywords(pattern=r"^[^/.][^/]*$")]
"""A plain directory name (no ``/``, not starting with ``.``)."""


# -- fields ---------------------------------------------------------------------------------------------


def setting(default: Any, description: str = "", **keywords: Any) -> Any:
    """A key with a default: ``default`` (a block class or a ``dict`` is made fresh per instance).

    ``keywords`` are JSON-schema keywords added to the key's schema (``minItems``, ``uniqueItems``, ...).
    """
    meta = {"description": description, "keywords": keywords, "kind": "default"}
    if isinstance(default, type) or isinstance(default, dict):
        factory: Callable[[], Any] = (
            default if isinstance(default, type) else functools.partial(dict, default)
        )
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def required(description: str = "", **keywords: Any) -> Any:
    """A key every config file must give (the schema's ``required``)."""
    return field(metadata={"description": description, "keywords": keywords, "kind": "required"})


def optional(description: str = "", *, nullable: bool = False, **keywords: Any) -> Any:
    """A key without a default: ``None`` when not given, and then absent from the resolved mapping.

    ``nullable``: ``null`` is also a value one may write (the annotation's ``None`` is then in the schema).
    """
    meta = {"description": description, "keywords": keywords, "kind": "optional", "nullable": nullable}
    return field(default=None, metadata=meta)


B = TypeVar("B", bound="Block")


@dataclass(frozen=True, kw_only=True)
class Block:
    """A block of the configuration: a frozen dataclass whose fields are the block's keys."""

    _keys: ClassVar[tuple[str, ...]] = ()
    """The keys as written, in their order (set by :func:`build`; empty for an instance made in code)."""

    def to_dict(self) -> dict[str, Any]:
        """The plain resolved mapping: the keys as written first (in their order), then the defaulted ones
        (in field order); an :func:`optional` key not given is left out. Tuples become lists."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        order = [k for k in self._keys if k in fields] + [k for k in fields if k not in self._keys]
        out: dict[str, Any] = {}
        for name in order:
            value = getattr(self, name)
            if fields[name].metadata.get("kind") == "optional" and value is None and name not in self._keys:
                continue
            out[name] = plain(value)
        return out


def plain(value: Any) -> Any:
    """``value`` as plain data: blocks as mappings (:meth:`Block.to_dict`), tuples as lists, copies."""
    if isinstance(value, Block):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return value


# -- the blocks -----------------------------------------------------------------------------------------


def task_samples(n_samples: Any, task: str) -> int | None:
    """``datasets.n_samples`` for ``task``: one count for every task, or a mapping task -> count (``None``:
    not given; all rows of the paper data)."""
    return n_samples.get(task) if isinstance(n_samples, Mapping) else n_samples


@dataclass(frozen=True, kw_only=True)
class DatasetsConfig(Block):
    """``datasets``: where the evaluation samples come from and how many per task."""

    source: Literal["generated", "paper"] = required(
        "generated = our procedural generators; paper = the authors' reproduction folders."
    )
    paper_path: str | None = optional(
        "Folder holding the authors' *_dataset folders (source: paper); a relative path is resolved against "
        "the working directory (the workflow root under Snakemake). Checked to exist, with one folder per "
        "configured task, before any job runs."
    )
    n_samples: SampleCount | None | Mapping[TaskSlug, SampleCount] = setting(
        None,
        "Samples per task: one integer for all tasks or a mapping task -> integer (source: generated, where "
        "every configured task needs a count; with source: paper, a cap on the rows taken, null = all). At "
        f"most {MAX_SAMPLES_PER_TASK} per task (saltbench.config.MAX_SAMPLES_PER_TASK; the paper uses at "
        "most 400): every sample ends up in an inference shard job of the DAG.",
    )
    n_shots: Count | None = setting(None, "Few-shot examples per prompt (null = all the task has).")
    params: Mapping[TaskSlug, Mapping[str, Any]] = setting(
        {}, "Generator parameters per task (keyword arguments of the task's generate())."
    )

    def samples_for(self, task: str) -> int | None:
        """Samples to take for ``task`` (``None``: not given; all rows of the paper data)."""
        return task_samples(self.n_samples, task)


@dataclass(frozen=True, kw_only=True)
class InferenceConfig(Block):
    """``inference``: sharding and generation settings of the inference stage."""

    shard_size: PositiveInt = setting(
        16,
        "Samples per inference shard: one job each (jobs: per_shard), or what a per_model job resumes by.",
    )
    jobs: Literal["per_shard", "per_model"] = setting(
        "per_shard",
        "per_shard: one job per shard (the cluster layout: a lost job costs one shard) and a merge job per "
        "(model, style); per_model: one job per model generating every style, task and shard from one model "
        "load or one vLLM engine (for CPU runs, where start-up dominates); a rerun after a kill keeps the "
        "finished shards.",
    )
    batch_size: PositiveInt = setting(8, "Prompts per generation batch.")
    top_k: Annotated[int, Keywords(minimum=1, maximum=100)] = setting(
        20, "Top-k log-probabilities stored per token."
    )
    max_new_tokens: Mapping[TaskSlug | Literal["default"], PositiveInt] = setting(
        {}, "Generation budget per task (key 'default' for the rest); cot uses cot_factor times more."
    )
    cot_factor: Annotated[float, Keywords(minimum=1)] = setting(
        2.0, "Budget multiplier of the cot prompt style."
    )
    backend: Backend | None = setting(
        None,
        "Inference engine for every model of this run: hf (transformers forward passes) or vllm (the vLLM "
        "engine); null = each model's registry `backend`.",
    )
    max_samples: Mapping[ModelName, PositiveInt] = setting(
        {},
        "At most this many samples per task for the named models: the first rows of every dataset (a model "
        "too slow to answer all samples of a CPU run answers the same first ones; the other models all).",
    )

    def check_max_samples(self, models: tuple[str, ...]) -> None:
        """Every model named in ``max_samples`` is one of the run's ``models`` (a typo would go unnoticed)."""
        unknown = [m for m in self.max_samples if m not in models]
        if unknown:
            raise ConfigError(
                f"inference.max_samples: {', '.join(map(repr, unknown))} not in models ({', '.join(models)})"
            )

    def rows_for(self, model: str, rows: int) -> int:
        """Samples of a dataset of ``rows`` rows that ``model`` answers (``max_samples`` applied)."""
        cap = self.max_samples.get(model)
        return rows if cap is None else min(rows, cap)


@dataclass(frozen=True, kw_only=True)
class ScoringConfig(Block):
    """``scoring``: how generations become scored units."""

    alignment: Literal["strict", "dynamic"] = setting("strict", "Alignment of answer atoms to the reference.")
    keyword_filter: bool = setting(True, "Drop keyword tokens from the confidence of an atom.")
    granularities: tuple[Granularity, ...] = setting(
        ("atom", "line", "generation"), "Unit granularities scored.", minItems=1, uniqueItems=True
    )
    flavours: tuple[Flavour, ...] = setting(
        ("topk", "full"), "Confidence flavours scored.", minItems=1, uniqueItems=True
    )


@dataclass(frozen=True, kw_only=True)
class MetricsConfig(Block):
    """``metrics``: calibration, binning and bootstrap settings of the metrics stage."""

    calibration_methods: tuple[CalibrationName, ...] = setting(
        ("zscore_sigmoid", "platt", "isotonic", "histogram"),
        "Calibration methods fitted (names of saltbench.calibration.CALIBRATION_METHODS).",
        uniqueItems=True,
    )
    calibration_fraction: OpenUnit = setting(0.5, "Share of the samples used to fit the calibration.")
    n_bins: PositiveInt = setting(15, "Bins of the ECE.")
    ece_binning: Literal["paper", "corrected"] = setting("paper", "Bin edges of the ECE.")
    prr_ties: Literal["average", "paper"] = setting("average", "Tie handling of the PRR.")
    n_bootstrap: Count = setting(200, "Bootstrap resamples of the confidence intervals.")
    ci_level: OpenUnit = setting(0.95, "Level of the confidence intervals.")
    default_confidence: ConfidenceName = setting(
        "mean_probability",
        "Confidence function of the leaderboard, granularity and reasoning tables: a name of "
        "saltbench.confidence.CONFIDENCE_FUNCTIONS.",
    )


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
    """``training.model`` (keys of ``saltbench.training.ModelSpec``; its defaults apply)."""

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
    model: TrainModelConfig | None = optional("Architecture (saltbench.training.ModelSpec).")
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


@dataclass(frozen=True, kw_only=True)
class AnalysisConfig(Block):
    """``analysis``: options of the tables and figures (rules/analysis.smk, rules/figures.smk)."""

    flavour: Flavour = setting(
        "topk", "Flavour of the confidence scores in every table and figure (one of scoring.flavours)."
    )
    granularity: Granularity = setting(
        "atom",
        "Granularity of ECE / AUROC / PRR in the leaderboard and the reasoning table (one of "
        "scoring.granularities).",
    )
    ece_calibration: CalibrationName = setting(
        "zscore_sigmoid",
        "Calibration method whose ECE is reported and compared: a name of "
        "saltbench.calibration.CALIBRATION_METHODS, computed by the metrics stage (in "
        "metrics.calibration_methods, or none).",
    )
    reasoning_level: Literal["task", "sample"] = setting(
        "task", "task: pairs = tasks (metrics tables); sample: pairs = samples (units tables)."
    )
    paired_bootstrap: PositiveInt = setting(2000, "Resamples of the task-level paired bootstrap.")
    intervention_fit: FitMethod = setting("logistic", "Model of the intervention effects.")
    intervention_bootstrap: Count = setting(
        200, "Cluster-bootstrap resamples of the intervention fits (0 = no intervals)."
    )
    position_bins: PositiveInt = setting(10, "Equal-width bins of k/n (clean-prefix accuracy).")
    corruption_bins: PositiveInt = setting(5, "Equal-width bins of the corrupted fraction.")
    rejection_points: Annotated[int, Keywords(minimum=2)] = setting(
        101, "Coverages of the averaged risk-coverage curves."
    )
    reliability_top: PositiveInt = setting(
        4, "Panels of the reliability diagrams (best-calibrated functions)."
    )
    reliability_granularity: Granularity = setting(
        "atom", "Granularity of the reliability diagrams (one of scoring.granularities)."
    )
    rejection_top: PositiveInt = setting(3, "Functions per risk-coverage panel (lowest AURC).")
    label_noise_epsilons: tuple[Annotated[float, Keywords(minimum=0, maximum=0.5)], ...] = setting(
        (0.0, 0.05, 0.1, 0.2, 0.3),
        "Fractions of the correctness labels flipped in the label-noise sensitivity table (each in "
        "[0, 0.5]).",
        minItems=1,
        uniqueItems=True,
    )
    label_noise_replicates: Annotated[int, Keywords(minimum=1, maximum=10000)] = setting(
        20,
        "Bootstrap-and-noise replicates per (model, style, task, granularity) cell of the label-noise table.",
    )


@dataclass(frozen=True, kw_only=True)
class WorkflowConfig(Block):
    """A whole workflow config file (``config/*.yaml``)."""

    seed: Count = required("Master seed: datasets, splits, bootstrap and training seeds derive from it.")
    tasks: tuple[TaskSlug, ...] = required("Task slugs to run.", minItems=1, uniqueItems=True)
    prompt_styles: tuple[PromptStyle, ...] = setting(
        ("direct", "cot"),
        "direct = answer immediately inside the fences; cot = reason step by step, then the fenced answer.",
        minItems=1,
        uniqueItems=True,
    )
    datasets: DatasetsConfig = required("Where the evaluation samples come from and how many per task.")
    model_registry: str = setting(
        "config/models.yaml", "YAML file describing every model (source, dtype, chat template, resources)."
    )
    models: tuple[ModelName, ...] = setting(
        (), "Model names from the registry to evaluate.", uniqueItems=True
    )
    inference: InferenceConfig = setting(
        InferenceConfig, "Inference stage: shards, batches, budgets, engine."
    )
    scoring: ScoringConfig = setting(ScoringConfig, "Scoring stage: alignment, granularities, flavours.")
    metrics: MetricsConfig = setting(MetricsConfig, "Metrics stage: calibration, ECE bins, bootstrap.")
    training: TrainingConfig = setting(
        TrainingConfig,
        "Tiny model family trained by the workflow (rules/train.smk): enabled, name, and the keys of "
        "saltbench.training.TrainConfig (tasks, steps, checkpoints, model, optim, ...), whose defaults "
        "apply.",
    )
    interventions: InterventionsConfig = setting(
        InterventionsConfig,
        "Atom-level intervention experiments (data/interventions/{model}/{task}.parquet).",
    )
    analysis: AnalysisConfig = setting(
        AnalysisConfig, "Tables and figures options read by rules/analysis.smk and rules/figures.smk."
    )

    def check_datasets(self) -> None:
        """With ``datasets.source: generated``, ``n_samples`` gives a count for every task in ``tasks`` (a
        missing count would otherwise fail when the DAG is built).

        Raises:
            ConfigError: naming ``datasets.n_samples`` and the tasks without a count.
        """
        if self.datasets.source != "generated":
            return
        missing = [t for t in self.tasks if self.datasets.samples_for(t) is None]
        if missing:
            raise ConfigError(
                f"datasets.n_samples: a sample count is required for every task with datasets.source "
                f"'generated'; missing for {', '.join(missing)}"
            )

    def check_analysis(self) -> None:
        """The names the analysis uses are computed by the earlier stages.

        ``analysis.ece_calibration`` is one of ``metrics.calibration_methods`` (or ``none``, added for
        probability-valued functions), ``analysis.flavour`` one of ``scoring.flavours``, and
        ``analysis.granularity`` / ``analysis.reliability_granularity`` are in ``scoring.granularities``.

        Raises:
            ConfigError: naming the analysis key and the key that lacks its value.
        """
        analysis, metrics, scoring = self.analysis, self.metrics, self.scoring
        computed = [*metrics.calibration_methods, "none"]
        if analysis.ece_calibration not in computed:
            raise ConfigError(
                f"analysis.ece_calibration: {analysis.ece_calibration!r} is not computed by the metrics "
                f"stage; add it to metrics.calibration_methods (now "
                f"{', '.join(metrics.calibration_methods) or 'empty'})"
            )
        if analysis.flavour not in scoring.flavours:
            raise ConfigError(
                f"analysis.flavour: {analysis.flavour!r} is not scored; scoring.flavours is "
                f"{', '.join(scoring.flavours)}"
            )
        for key in ("granularity", "reliability_granularity"):
            value = getattr(analysis, key)
            if value not in scoring.granularities:
                raise ConfigError(
                    f"analysis.{key}: {value!r} is not scored; scoring.granularities is "
                    f"{', '.join(scoring.granularities)}"
                )


# -- building typed values from validated data --------------------------------------------------------------


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved field types of ``cls`` (``Annotated`` kept), cached."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls, include_extras=True)
    return _HINTS[cls]


def _is_block(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Block)


def _strip(tp: Any) -> Any:
    """``tp`` without ``Annotated``."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _member_for(members: tuple[Any, ...], value: Any) -> Any:
    """The member of a union that ``value`` (validated) is an instance of."""
    for member in members:
        base = _strip(member)
        origin = get_origin(base)
        if value is None and base is NoneType:
            return member
        if isinstance(value, Mapping) and (_is_block(base) or origin in (Mapping, dict)):
            return member
        if isinstance(value, (list, tuple)) and origin is tuple:
            return member
        if value is not None and not isinstance(value, (Mapping, list, tuple)) and base is not NoneType:
            if origin is None or origin is Literal:
                return member
    raise TypeError(f"{value!r} matches none of {members}")  # unreachable for validated data


def _build(tp: Any, value: Any) -> Any:
    tp = _strip(tp)
    origin = get_origin(tp)
    if _is_block(tp):
        hints = _hints(tp)
        kwargs = {
            f.name: _build(hints[f.name], value[f.name]) for f in dataclasses.fields(tp) if f.name in value
        }
        block = tp(**kwargs)
        object.__setattr__(block, "_keys", tuple(value))
        return block
    if origin in (Union, UnionType):
        return _build(_member_for(get_args(tp), value), value)
    if origin is tuple:
        args = get_args(tp)
        items = [args[0]] * len(value) if len(args) == 2 and args[1] is Ellipsis else list(args)
        return tuple(_build(item, v) for item, v in zip(items, value))
    if origin in (Mapping, dict):
        value_type = get_args(tp)[1]
        return MappingProxyType({k: _build(value_type, v) for k, v in value.items()})
    return copy.deepcopy(value)  # scalars and free-form data (generator parameters), as written


def build(cls: type[B], data: Mapping[str, Any]) -> B:
    """The block ``cls`` from ``data`` that the schema has validated: defaults filled in, lists as tuples,
    mappings read-only, numbers as written. Use :func:`saltbench.config.resolve_config` for unchecked data."""
    built: B = _build(cls, data)
    return built


# -- the JSON schema ----------------------------------------------------------------------------------------

_SCALARS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string", NoneType: "null"}


def _union_schema(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema for a union: a ``type`` list when every member has its own type (keywords merged, each
    applying to its type only), an ``enum`` with ``null`` for a ``Literal`` or ``None``, else ``anyOf``."""
    types = [p.get("type") for p in parts]
    if all(isinstance(t, str) for t in types) and len(set(types)) == len(types):
        merged: dict[str, Any] = {"type": types}
        for part in parts:
            for key, value in part.items():
                if key != "type" and merged.setdefault(key, value) != value:
                    return {"anyOf": parts}
        return merged
    others = [p for p in parts if p != {"type": "null"}]
    if len(others) < len(parts) and all(set(p) <= {"enum", "const"} for p in others):
        names = [v for p in others for v in (p["enum"] if "enum" in p else [p["const"]])]
        return {"enum": [*names, None]}
    return {"anyOf": parts}


def _type_schema(tp: Any) -> dict[str, Any]:
    origin = get_origin(tp)
    if tp is Any:
        return {}
    if origin is Annotated:
        base, *metadata = get_args(tp)
        refs = [m for m in metadata if isinstance(m, Ref)]
        if refs:
            return {"$ref": f"#/$defs/{refs[0].name}"}
        annotated = _type_schema(base)
        for m in metadata:
            if isinstance(m, Keywords):
                annotated.update(m.items)
        return annotated
    if origin is Literal:
        choices = list(get_args(tp))
        return {"const": choices[0]} if len(choices) == 1 else {"enum": choices}
    if origin in (Union, UnionType):
        return _union_schema([_type_schema(member) for member in get_args(tp)])
    if origin is tuple:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0])}
        items = [_type_schema(a) for a in args]
        if any(item != items[0] for item in items):
            raise TypeError(f"{tp}: a fixed-length tuple needs one item type")
        return {"type": "array", "items": items[0], "minItems": len(args), "maxItems": len(args)}
    if origin in (Mapping, dict):
        key_type, value_type = get_args(tp)
        schema: dict[str, Any] = {"type": "object"}
        values = _type_schema(value_type)
        if values:
            schema["additionalProperties"] = values
        names = _type_schema(key_type)
        if names != {"type": "string"}:
            schema["propertyNames"] = names
        return schema
    if _is_block(tp):
        return _object_schema(tp)
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    raise TypeError(f"no JSON schema for type {tp!r}")


def _without_none(tp: Any) -> Any:
    if get_origin(tp) in (Union, UnionType):
        members = tuple(m for m in get_args(tp) if m is not NoneType)
        return members[0] if len(members) == 1 else Union[members]  # noqa: UP007 - a runtime union
    return tp


def _field_schema(f: dataclasses.Field[Any], tp: Any) -> dict[str, Any]:
    meta = f.metadata
    if meta["kind"] == "optional" and not meta["nullable"]:
        tp = _without_none(tp)
    schema = _type_schema(tp)
    schema.update(meta["keywords"])
    if meta["kind"] == "default":
        factory: Any = f.default_factory
        default = f.default if f.default is not dataclasses.MISSING else factory()
        schema["default"] = {} if isinstance(default, Block) else plain(default)
    if meta["description"]:
        schema["description"] = meta["description"]
    return schema


def _object_schema(cls: type[Block]) -> dict[str, Any]:
    hints = _hints(cls)
    fields = dataclasses.fields(cls)
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    needed = [f.name for f in fields if f.metadata["kind"] == "required"]
    if needed:
        schema["required"] = needed
    schema["properties"] = {f.name: _field_schema(f, hints[f.name]) for f in fields}
    return schema


def json_schema() -> dict[str, Any]:
    """The JSON schema (Draft 2020-12) of a workflow config file, generated from :class:`WorkflowConfig`.

    ``$defs/task`` lists ``saltbench.tasks.TASK_SLUGS`` (imported here, not when this module is).
    """
    from saltbench.tasks import TASK_SLUGS

    return {
        "$schema": SCHEMA_ID,
        "title": "saltbench workflow configuration",
        "description": (
            "Generated from saltbench.config_model (python -m saltbench.config --write-schema); do not edit. "
            "'integer' means a real integer: 2.0 and true are rejected."
        ),
        **_object_schema(WorkflowConfig),
        "$defs": {
            "task": {"enum": list(TASK_SLUGS), "description": "A task slug (saltbench.tasks.TASK_SLUGS)."}
        },
    }


BLOCKS: Mapping[str, type[Block]] = MappingProxyType(
    {name: _strip(tp) for name, tp in _hints(WorkflowConfig).items() if _is_block(_strip(tp))}
)
"""The block class of each top-level key that is a block (``datasets``, ``inference``, ..., ``analysis``)."""


__all__ = [
    "BLOCKS",
    "MAX_SAMPLES_PER_TASK",
    "AnalysisConfig",
    "Block",
    "Boundary",
    "ConfigError",
    "DatasetsConfig",
    "InferenceConfig",
    "InterventionsConfig",
    "MetricsConfig",
    "Placement",
    "ScoringConfig",
    "TrainingConfig",
    "TrainModelConfig",
    "TrainOptimConfig",
    "TrainTaskConfig",
    "WorkflowConfig",
    "build",
    "json_schema",
    "plain",
]
