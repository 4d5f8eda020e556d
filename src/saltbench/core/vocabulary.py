"""Every closed vocabulary of the workflow, stated once: a ``Literal`` type and the tuple of its values.

The configuration schema, the artifact contracts, the model registry, the stages and the analysis all
import their names from here; nothing else spells them (docs/architecture.md §2). Standard library only, so
that the configuration (imported by the Snakefile on every invocation, dry runs included) stays cheap.

Each tuple is ``typing.get_args`` of its ``Literal``, so the two cannot drift:

>>> STYLES
('direct', 'cot')
>>> GRANULARITIES[0]
'atom'
>>> MODEL_NAME_PATTERN.fullmatch("salt-tiny@final") is not None
True
>>> MODEL_NAME_PATTERN.fullmatch("-leading-dash") is None
True
"""

from __future__ import annotations

import re
from typing import Literal, get_args

PromptStyle = Literal["direct", "cot"]
STYLES: tuple[PromptStyle, ...] = get_args(PromptStyle)
"""Prompt styles: answer directly, or reason step by step before the fenced answer."""

Granularity = Literal["atom", "line", "generation"]
GRANULARITIES: tuple[Granularity, ...] = get_args(Granularity)
"""Unit granularities, finest first."""

Status = Literal["correct", "incorrect", "missing", "redundant", "selective"]
STATUSES: tuple[Status, ...] = get_args(Status)
"""Status of a compared unit (docs/evaluation.md): a reference unit the response lacks is ``missing``."""

RESPONSE_STATUSES: tuple[Status, ...] = ("correct", "incorrect", "selective", "redundant")
"""Statuses of units the model wrote; ``missing`` reference units have no response text and no score."""

Alignment = Literal["strict", "dynamic"]
ALIGNMENTS: tuple[Alignment, ...] = get_args(Alignment)
"""Alignment of answer atoms to the reference (docs/evaluation.md §3)."""

Flavour = Literal["topk", "full"]
FLAVOURS: tuple[Flavour, ...] = get_args(Flavour)
"""Where a token's distribution comes from: the renormalised top-20 or the full vocabulary
(docs/confidence.md §2)."""

DRAW_SOURCE = "draws"
"""The prefix of the confidence columns computed from a response's sampled answers, its draws, instead of a
token distribution (``draws.agreement``, docs/confidence.md §7); it stands where a flavour stands in
``{flavour}.{function}``."""

SECOND_PASS_SOURCE = "second_pass"
"""The prefix of the confidence columns read from the model's replies to questions about its own answer
(``second_pass.verbalized``, ``second_pass.p_true``; docs/confidence.md §8)."""

SecondPassKind = Literal["verbalized", "p_true"]
SECOND_PASS_KINDS: tuple[SecondPassKind, ...] = get_args(SecondPassKind)
"""The two second-pass estimators: verbalized confidence and P(True) (docs/confidence.md §8)."""

SecondPassStatus = Literal["ok", "empty", "unparsable", "out_of_range", "no_true_false"]
SECOND_PASS_STATUSES: tuple[SecondPassStatus, ...] = get_args(SecondPassStatus)
"""What became of a second-pass reply: a value (``ok``) or why there is none (docs/confidence.md §8)."""

TRACE_SOURCE = "trace"
"""The prefix of the confidence columns read from a reasoning model's trace rather than a token distribution
(``trace.reasoning_tokens``; docs/confidence.md)."""

SOURCES: tuple[str, ...] = (*FLAVOURS, DRAW_SOURCE, SECOND_PASS_SOURCE, TRACE_SOURCE)
"""Every prefix of a confidence column ``{source}.{function}``: the two flavours of the token distribution,
then the sources that do not depend on one (the metrics table's ``flavour`` column holds the source)."""

EstimatorFamily = Literal["single_pass", "samples", "second_pass"]
ESTIMATOR_FAMILIES: tuple[EstimatorFamily, ...] = get_args(EstimatorFamily)
"""What an estimator needs beyond the greedy answer (docs/confidence.md): nothing (its token
distributions or trace), sampled answers (draws), or a second generation that asks the model about its
answer."""

CONFIDENCE_NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
"""The name of a confidence function (column ``{flavour}.{name}``). The functions themselves are listed
once, in the registry :data:`saltbench.confidence.CONFIDENCE_FUNCTIONS` (plugins join it)."""

CalibrationMethod = Literal["zscore_sigmoid", "platt", "isotonic", "histogram", "none"]
CALIBRATION_METHODS: tuple[CalibrationMethod, ...] = get_args(CalibrationMethod)
"""Maps from raw confidence scores to probabilities (docs/metrics.md §3); ``none`` keeps the scores."""

EceBinning = Literal["paper", "corrected"]
ECE_BINNINGS: tuple[EceBinning, ...] = get_args(EceBinning)
"""Bin edges of the ECE (docs/metrics.md §4)."""

RejectionTies = Literal["average", "paper"]
REJECTION_TIES: tuple[RejectionTies, ...] = get_args(RejectionTies)
"""Tie handling of the rejection curves (PRR, AURC; docs/metrics.md §6)."""

Placement = Literal["random", "local", "distant"]
PLACEMENTS: tuple[Placement, ...] = get_args(Placement)
"""Where an intervention puts its ``c`` corrupted atoms among the ``k - 1`` prefix atoms
(docs/interventions.md)."""

PLACEMENT_LABELS: tuple[str, ...] = ("clean", *PLACEMENTS)
"""Values of the interventions table's ``placement`` column (``clean``: no corrupted atom, ``c = 0``)."""

Boundary = Literal["token", "atom"]
BOUNDARIES: tuple[Boundary, ...] = get_args(Boundary)
"""Where an intervention's answer prefix ends (docs/interventions.md §2)."""

FitMethod = Literal["logistic", "linear"]
FIT_METHODS: tuple[FitMethod, ...] = get_args(FitMethod)
"""Regression fitted to the intervention outcomes (docs/interventions.md §5)."""

Backend = Literal["hf", "vllm", "openai", "vllm_server", "simulated"]
BACKENDS: tuple[Backend, ...] = get_args(Backend)
"""The built-in inference backends of the model registry (docs/backends.md; saltbench.inference.backends,
where installed packages add theirs): weights
in-process through transformers or vLLM, a served / hosted model through its OpenAI-compatible API, or
the model's weights behind a vLLM server the workflow starts and stops itself (one per model, §8.6)."""

ImportFormat = Literal["salt_cache", "jsonl", "inspect"]
IMPORT_FORMATS: tuple[ImportFormat, ...] = get_args(ImportFormat)
"""File formats of a ``generations`` source, generations made elsewhere and imported (docs/backends.md §9):
the authors' release's generation cache, the documented JSONL schema, inspect_ai evaluation logs."""

ApiEndpoint = Literal["chat", "completions"]
API_ENDPOINTS: tuple[ApiEndpoint, ...] = get_args(ApiEndpoint)
"""Endpoint of an OpenAI-compatible server: ``chat`` (the server applies the chat template) or
``completions`` (a prompt rendered here, raw)."""

DrawSupport = Literal["none", "unseeded", "seeded"]
DRAW_SUPPORT: tuple[DrawSupport, ...] = get_args(DrawSupport)
"""What a backend (or a served API) can do for ``inference.samples``: no sampling, sampling without a seed
(draws not reproducible), or seeded sampling (docs/generation.md §7)."""

Dtype = Literal["float32", "bfloat16", "float16"]
DTYPES: tuple[Dtype, ...] = get_args(Dtype)
"""Weight dtypes of the model registry."""

FinishReason = Literal["eos", "length", "error"]
FINISH_REASONS: tuple[FinishReason, ...] = get_args(FinishReason)
"""Why a generation ended (the generations table's ``finish_reason``)."""

ReasoningFormat = Literal["think", "harmony"]
REASONING_FORMATS: tuple[ReasoningFormat, ...] = get_args(ReasoningFormat)
"""How a reasoning model separates its reasoning from its answer in the decoded text (docs/reasoning.md §1):
``think`` (``<think>…</think>``, the opening tag optional) or ``harmony`` (gpt-oss's channels)."""

FenceRule = Literal["positional", "line"]
FENCE_RULES: tuple[FenceRule, ...] = get_args(FenceRule)
"""Which fence tokens count (docs/compatibility.md §1.3): ``positional`` — every run of four or more ``*``,
as the authors' release; ``line`` — only a run that starts a line (nothing but whitespace between the line
break and it), or ends a line and closes a fence opened before, so a fence quoted in prose is not a fence."""

AnswerStatus = Literal["answered", "truncated", "no_fence", "error"]
ANSWER_STATUSES: tuple[AnswerStatus, ...] = get_args(AnswerStatus)
"""What a response holds (docs/reasoning.md §2): a fenced answer; a generation cut by its budget before a
complete answer (inside its reasoning, or inside the answer); no fenced answer although it ended; an error
row."""

Precision = Literal["bf16", "fp32"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
"""Training precision of the tiny models."""

Device = Literal["cpu", "cuda", "auto"]
DEVICES: tuple[Device, ...] = get_args(Device)
"""Devices a training job may ask for."""

Scratchpad = Literal["never", "cot", "always"]
SCRATCHPADS: tuple[Scratchpad, ...] = get_args(Scratchpad)
"""When a training answer starts with the task's worked solution (``Task.worked_solution``): ``never``;
``cot``: for ``cot``-style prompts only (a family that answers both ways); ``always``: whatever the prompt
asks for (reasoning internalised by training, docs/tiny-models.md §2)."""

DatasetSource = Literal["generated", "paper"]
DATASET_SOURCES: tuple[DatasetSource, ...] = get_args(DatasetSource)
"""Where the evaluation samples come from: generated with the master seed, or the authors' release."""

InferenceJobs = Literal["per_shard", "per_model"]
INFERENCE_JOBS: tuple[InferenceJobs, ...] = get_args(InferenceJobs)
"""Job layout of the inference stage: one job per shard (clusters) or one per model (docs/generation.md)."""

ReasoningLevel = Literal["task", "sample"]
REASONING_LEVELS: tuple[ReasoningLevel, ...] = get_args(ReasoningLevel)
"""Unit of pairing of the reasoning comparisons (docs/architecture.md §7)."""

MODEL_NAME_REGEX = r"[A-Za-z0-9][A-Za-z0-9._@+-]*"
"""A model's registry name: starts with a letter or digit (never ``-``, never a path), then letters, digits
and ``._@+-`` (``salt-tiny@final``). The schema's pattern, the registry's check and the rules' wildcard
constraint are this expression."""
MODEL_NAME_PATTERN: re.Pattern[str] = re.compile(MODEL_NAME_REGEX)

FAMILY_NAME_REGEX = r"[A-Za-z0-9][A-Za-z0-9._-]*"
"""A trained family's name (``data/models/{name}/{checkpoint}``; registry entries ``{name}@{checkpoint}``)."""

__all__ = [
    "ANSWER_STATUSES",
    "CONFIDENCE_NAME_PATTERN",
    "ALIGNMENTS",
    "API_ENDPOINTS",
    "ApiEndpoint",
    "DRAW_SUPPORT",
    "DrawSupport",
    "BACKENDS",
    "BOUNDARIES",
    "CALIBRATION_METHODS",
    "DATASET_SOURCES",
    "DEVICES",
    "DRAW_SOURCE",
    "DTYPES",
    "ECE_BINNINGS",
    "FAMILY_NAME_REGEX",
    "FENCE_RULES",
    "FINISH_REASONS",
    "FIT_METHODS",
    "FLAVOURS",
    "GRANULARITIES",
    "IMPORT_FORMATS",
    "INFERENCE_JOBS",
    "MODEL_NAME_PATTERN",
    "MODEL_NAME_REGEX",
    "PLACEMENTS",
    "PLACEMENT_LABELS",
    "PRECISIONS",
    "REASONING_FORMATS",
    "REASONING_LEVELS",
    "REJECTION_TIES",
    "RESPONSE_STATUSES",
    "SCRATCHPADS",
    "SECOND_PASS_KINDS",
    "SECOND_PASS_STATUSES",
    "STATUSES",
    "STYLES",
    "Alignment",
    "AnswerStatus",
    "Backend",
    "Boundary",
    "CalibrationMethod",
    "DatasetSource",
    "Device",
    "Dtype",
    "EceBinning",
    "FenceRule",
    "FinishReason",
    "FitMethod",
    "Flavour",
    "Granularity",
    "ImportFormat",
    "SecondPassKind",
    "SecondPassStatus",
    "InferenceJobs",
    "Placement",
    "Precision",
    "PromptStyle",
    "ReasoningFormat",
    "ReasoningLevel",
    "RejectionTies",
    "Scratchpad",
    "Status",
]
