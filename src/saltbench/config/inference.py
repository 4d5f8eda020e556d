"""``inference``: sharding, batches, budgets and engine of the inference stage (docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from saltbench.config.schema import (
    Block,
    ConfigError,
    Count,
    Fraction,
    Keywords,
    ModelName,
    PositiveInt,
    TaskSlug,
    setting,
)
from saltbench.core.blocks import BackendName
from saltbench.core.vocabulary import Granularity, InferenceJobs, SecondPassKind

DEFAULT_MAX_NEW_TOKENS = 512
"""The generation budget of a task that ``inference.max_new_tokens`` names neither itself nor by
``default``."""


@dataclass(frozen=True, kw_only=True)
class SamplesConfig(Block):
    """``inference.samples``: sampled answers (*draws*) beside the greedy one (docs/generation.md §7)."""

    n: Count = setting(
        0,
        "Draws (sampled answers) per prompt beside the greedy one, in "
        "data/draws/{model}/{style}/{task}.parquet; 0: none. Every generated model of the run must sample "
        "on its backend with a seed; an imported one takes the draws its file carries "
        "(docs/generation.md §7).",
    )
    temperature: Annotated[float, Keywords(exclusiveMinimum=0)] = setting(
        1.0, "Sampling temperature: tokens are drawn from softmax(logits / temperature)."
    )
    top_p: Fraction = setting(
        1.0, "Nucleus sampling: draw among the most likely tokens whose probabilities sum to top_p (1: all)."
    )
    seed: int | None = setting(
        None,
        "Seed of the draws; null = the top-level seed. Draw d of a prompt is seeded by (seed, model, style, "
        "task, sample_id, d), so batching and sharding never change it.",
    )
    models: tuple[str, ...] | None = setting(
        None,
        "The models that draw (a name not among the run's models is ignored, with a warning); null: "
        "every model of the run. The others' sampling-consistency columns are not computed "
        "(a model too slow to sample on a CPU run).",
        uniqueItems=True,
    )

    def drawn(self, models: Sequence[str]) -> tuple[str, ...]:
        """The models of ``models`` that draw: none when ``n`` is 0, else :attr:`models` (default: all)."""
        if self.n == 0:
            return ()
        return tuple(m for m in models if self.models is None or m in self.models)


@dataclass(frozen=True, kw_only=True)
class SecondPassConfig(Block):
    """``inference.second_pass``: the model asked about its own greedy answer (docs/confidence.md §8)."""

    kinds: tuple[SecondPassKind, ...] = setting(
        (),
        "Second-pass estimators: verbalized (a number from 0 to 100) and/or p_true (the True/False mass of "
        "the reply's first token), asked of every model of the run about each unit of its answered greedy "
        "responses, in data/second_pass/{model}/{style}/{task}.parquet; empty: none (docs/confidence.md §8).",
        uniqueItems=True,
    )
    granularities: tuple[Granularity, ...] = setting(
        ("line", "generation"),
        "The units asked about (each one of scoring.granularities): the whole answer, each line, each atom.",
        minItems=1,
        uniqueItems=True,
    )
    atom_max: PositiveInt = setting(
        8,
        "With atom among the granularities: only responses with at most this many atoms are asked per atom "
        "(one question per atom costs one generation each).",
    )
    models: tuple[str, ...] | None = setting(
        None,
        "The models asked (a name not among the run's models is ignored, with a warning); null: every "
        "model of the run that generates (an imported model has no model to ask: it is left out).",
        uniqueItems=True,
    )

    def asked(self, models: Sequence[str], imported: Collection[str] = ()) -> tuple[str, ...]:
        """The models of ``models`` asked: none without :attr:`kinds`, else :attr:`models` (default: every
        model not in ``imported``)."""
        if not self.kinds:
            return ()
        if self.models is None:
            return tuple(m for m in models if m not in imported)
        return tuple(m for m in models if m in self.models)


@dataclass(frozen=True, kw_only=True)
class InferenceConfig(Block):
    """``inference``: sharding and generation settings of the inference stage."""

    shard_size: PositiveInt = setting(
        16,
        "Samples per inference shard: one job each (jobs: per_shard), or what a per_model job resumes by.",
    )
    jobs: InferenceJobs = setting(
        "per_shard",
        "per_shard: one job per shard (the cluster layout: a lost job costs one shard) and a merge job per "
        "(model, style); per_model: one job per model generating every style, task and shard from one model "
        "load or one vLLM engine (for CPU runs, where start-up dominates); a rerun after a kill keeps the "
        "finished shards.",
    )
    batch_size: PositiveInt = setting(8, "Prompts per generation batch.")
    group_prompts: PositiveInt = setting(
        24,
        "per_model jobs on vLLM: prompts per engine call, in whole shards packed in a fixed order. Each "
        "call's shards are saved when it finishes (a kill loses at most one call), and a rerun generates "
        "every prompt in the same call as an uninterrupted run would, so its outputs are bit-identical "
        "(docs/generation.md §5).",
    )
    top_k: Annotated[int, Keywords(minimum=1, maximum=100)] = setting(
        20, "Top-k log-probabilities stored per token."
    )
    max_new_tokens: Mapping[TaskSlug | Literal["default"], PositiveInt] = setting(
        {},
        f"Generation budget per task (key 'default' for the rest, else {DEFAULT_MAX_NEW_TOKENS}); cot uses "
        "cot_factor times more.",
    )
    cot_factor: Annotated[float, Keywords(minimum=1)] = setting(
        2.0, "Budget multiplier of the cot prompt style."
    )
    backend: BackendName | None = setting(
        None,
        "Inference engine for every model of this run: hf (transformers forward passes), vllm (the vLLM "
        "engine in each job) or vllm_server (one vLLM server per model, started and stopped by the workflow; "
        "docs/backends.md §8.6); openai runs only served models; null = each model's registry `backend`.",
    )
    max_error_share: Annotated[float, Keywords(minimum=0, maximum=1)] = setting(
        0.05,
        "The share of a shard's prompts that may end as error rows (finish_reason error: a request that "
        "failed after its retries, a prompt that does not fit the context) before the shard's job fails "
        "naming the model and the reasons; 0 tolerates none, 1 every one (docs/generation.md §3.4).",
    )
    max_samples: Mapping[ModelName, PositiveInt] = setting(
        {},
        "At most this many samples per task for the named models: the first rows of every dataset (a model "
        "too slow to answer all samples of a CPU run answers the same first ones; the other models all).",
    )

    samples: SamplesConfig = setting(
        SamplesConfig,
        "Draws: n sampled answers per prompt beside the greedy one ({n, temperature, top_p, seed}; n: 0 = "
        "off; docs/generation.md §7).",
    )
    second_pass: SecondPassConfig = setting(
        SecondPassConfig,
        "Second pass: the model asked about its own answer ({kinds, granularities, atom_max}; kinds: [] = "
        "off; docs/confidence.md §8).",
    )

    def check_max_samples(self, models: tuple[str, ...]) -> None:
        """Every model named in ``max_samples`` is one of the run's ``models`` (a typo would go unnoticed)."""
        unknown = [m for m in self.max_samples if m not in models]
        if unknown:
            raise ConfigError(
                f"inference.max_samples: {', '.join(map(repr, unknown))} not in models ({', '.join(models)})"
            )

    def max_new_tokens_for(self, task: str, style: str) -> int:
        """The generation budget of ``task`` in prompt ``style``: ``max_new_tokens[task]`` (else
        ``[default]``, else :data:`DEFAULT_MAX_NEW_TOKENS`), times ``cot_factor`` (rounded) for ``cot``."""
        table = self.max_new_tokens
        base = int(table.get(task, table.get("default", DEFAULT_MAX_NEW_TOKENS)))
        return base if style == "direct" else int(round(base * float(self.cot_factor)))

    def rows_for(self, model: str, rows: int) -> int:
        """Samples of a dataset of ``rows`` rows that ``model`` answers (``max_samples`` applied)."""
        cap = self.max_samples.get(model)
        return rows if cap is None else min(rows, cap)
