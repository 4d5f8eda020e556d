"""Conformance of an inference backend: what the generation and intervention stages assume of a loaded model
(docs/extending.md §9, docs/backends.md §7).

Checks, in order (:data:`BACKEND_CHECKS`), on one registry entry and its model files:

* ``loader declared``: the backend's loader is callable, takes only settings a job offers
  (:func:`saltbench.inference.backends.loader_settings`) and its ``options`` annotation, if any, is an
  options block (:func:`saltbench.inference.backends.declared_options`);
* ``loads``: :func:`~saltbench.inference.backends.load_backend` gives a model with the protocol's
  attributes (``backend``, ``continuous_batching``, ``full_entropy``, ``spec``, ``batch_size``, ``top_k``) and
  methods (:class:`saltbench.inference.base.LoadedModel`);
* ``renders``: one prompt (a string) per instruction;
* ``generates records``: one :class:`~saltbench.inference.GenerationRecord` per prompt, in order, each
  well-formed (:func:`record_problems`) within its budget (a budget of 1 among them), and the generations
  table builds from them (:func:`~saltbench.inference.records_to_frame`);
* ``deterministic``: a second call gives the same tokens (greedy decoding);
* ``draws``: a backend whose model class declares ``draws`` (``seeded`` or ``unseeded``) has a ``sample``
  method giving ``n`` well-formed records per prompt within its budget, and with ``seeded`` the same tokens
  again for the same seeds (docs/generation.md §7); one that declares none passes (the configuration
  refuses draws from it);
* ``forced continuation``: ``prompt_cache`` then ``force_and_continue`` on two rows taken from the first
  generation give one :class:`~saltbench.inference.base.ForcedContinuation` per row: a finite, non-positive
  log-probability per target token, a well-formed continuation within the budget, a finish reason of
  ``eos``/``stop``/``length``, and the stop rule obeyed (a rule that stops after one token gives at most
  one token and ``stop`` or ``eos``). A backend that raises ``NotImplementedError`` there (it cannot
  teacher-force, as a chat API) or has no tokenizer passes: the configuration refuses it for the
  interventions.

A check that cannot run because an earlier one failed (no model loaded) says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from saltbench.conformance.common import Failure, raise_first, run_checks
from saltbench.core.vocabulary import FINISH_REASONS
from saltbench.inference import GenerationRecord, ModelSpec, encode_prompt, records_to_frame
from saltbench.inference.backends import (
    LoadSettings,
    backend_loader,
    declared_options,
    load_backend,
    loader_settings,
)
from saltbench.inference.base import DrawSettings, ForcedContinuation

BACKEND_CHECKS: tuple[str, ...] = (
    "loader declared",
    "loads",
    "renders",
    "generates records",
    "deterministic",
    "draws",
    "forced continuation",
)
"""The names of the backend checks, in the order they run."""

INSTRUCTIONS = ("Write the word yes.", "Count from one to five.")
"""Instructions the checks render and generate by default (a backend that answers only certain prompts, as
the simulated one, is given its own)."""

_TOLERANCE = 1e-4
"""How far above 0 a stored log-probability may be (float32 rounding)."""

_ATTRIBUTES = {
    "backend": str,
    "continuous_batching": bool,
    "full_entropy": bool,
    "batch_size": int,
    "top_k": int,
}
_METHODS = ("render", "generate", "prompt_cache", "force_and_continue")


def record_problems(record: Any, *, top_k: int, full_entropy: bool, budget: int) -> str | None:
    """What is wrong with one generation record (``None``: nothing): its type, finish reason, array lengths
    and top-k width, texts that do not join to its text or offsets that do not match them, more tokens than
    ``budget``, a positive log-probability, top-k values out of order, an entropy present where the backend
    says it returns none (``full_entropy``) or missing where it says it does."""
    if not isinstance(record, GenerationRecord):
        return f"{type(record).__name__} is not a GenerationRecord"
    if record.finish_reason not in FINISH_REASONS:
        return f"finish_reason {record.finish_reason!r} is not one of {FINISH_REASONS}"
    n = len(record.token_ids)
    shapes = {
        "token_texts": (len(record.token_texts),),
        "token_offsets": np.shape(record.token_offsets),
        "chosen_logprobs": np.shape(record.chosen_logprobs),
        "topk_ids": np.shape(record.topk_ids),
        "topk_logprobs": np.shape(record.topk_logprobs),
        "entropy": np.shape(record.entropy),
    }
    wanted = {name: (n, top_k) if name.startswith("topk") else (n,) for name in shapes}
    wrong = [f"{name} {shapes[name]}" for name in shapes if shapes[name] != wanted[name]]
    if wrong:
        return f"{n} tokens but {', '.join(wrong)} (top_k {top_k})"
    return _value_problems(record, full_entropy=full_entropy, budget=budget)


def _value_problems(record: GenerationRecord, *, full_entropy: bool, budget: int) -> str | None:
    """The value checks of :func:`record_problems` (shapes already right)."""
    n = len(record.token_ids)
    lengths = np.fromiter((len(t) for t in record.token_texts), dtype=np.int64, count=n)
    if "".join(record.token_texts) != record.text or not np.array_equal(
        np.asarray(record.token_offsets), np.cumsum(lengths) - lengths
    ):
        return f"the token texts do not join to the text {record.text[:40]!r} at their offsets"
    if n > budget:
        return f"{n} tokens for a budget of {budget}"
    chosen = np.asarray(record.chosen_logprobs, dtype=np.float64)
    top = np.asarray(record.topk_logprobs, dtype=np.float64)
    if (chosen[np.isfinite(chosen)] > _TOLERANCE).any() or (top[np.isfinite(top)] > _TOLERANCE).any():
        return "a log-probability above 0"
    steps = np.diff(np.where(np.isnan(top), -np.inf, top), axis=1)
    if (steps[np.isfinite(steps)] > _TOLERANCE).any():
        return "top-k log-probabilities not sorted, most likely first"
    entropy = np.asarray(record.entropy, dtype=np.float64)
    if full_entropy and not (np.isfinite(entropy).all() and (entropy >= -_TOLERANCE).all()):
        return "full_entropy is declared, but an entropy is missing or negative"
    if not full_entropy and not np.isnan(entropy).all():
        return "full_entropy is not declared, but entropies are stored (NaN stands for none)"
    return None


class _Run:
    """What the checks share: the entry, its files, the loaded model and its first generations."""

    def __init__(self, spec: ModelSpec, model_path: str | Path, backend: str, settings: LoadSettings) -> None:
        self.spec, self.model_path, self.backend, self.settings = spec, model_path, backend, settings
        self.model: Any = None
        self.prompts: list[str] = []
        self.records: list[Any] = []

    def loaded(self) -> Any:
        """The model (``AssertionError`` naming the check that failed, if it did not load)."""
        if self.model is None:
            raise AssertionError("not run: the model did not load (check 'loads')")
        return self.model


def _declared(run: _Run) -> str | None:
    loader = backend_loader(run.backend)
    loader_settings(run.backend, loader, run.settings)
    declared_options(run.backend, loader)
    return None


def _loads(run: _Run) -> str | None:
    model = load_backend(run.model_path, run.spec, backend=run.backend, settings=run.settings)
    wrong = [
        f"{name} {getattr(model, name, None)!r}"
        for name, kind in _ATTRIBUTES.items()
        if not isinstance(getattr(model, name, None), kind)
    ]
    missing = [name for name in _METHODS if not callable(getattr(model, name, None))]
    if wrong or missing:
        return f"attributes of the wrong type: {wrong}; methods missing: {missing}"
    if getattr(model, "spec", None) is None or model.spec.name != run.spec.name:
        return "its spec is not the registry entry it was loaded from"
    run.model = model
    return None


def _renders(run: _Run, instructions: Sequence[str]) -> str | None:
    prompts = run.loaded().render(list(instructions))
    if not isinstance(prompts, list) or len(prompts) != len(instructions):
        return f"{len(prompts)} prompts for {len(instructions)} instructions"
    if not all(isinstance(p, str) and p for p in prompts):
        return "a prompt that is not a non-empty string"
    run.prompts = prompts
    return None


def _generates(run: _Run, budget: int) -> str | None:
    model = run.loaded()
    if not run.prompts:
        return "not run: no prompts (check 'renders')"
    budgets = [budget] + [1] * (len(run.prompts) > 1) + [budget] * max(0, len(run.prompts) - 2)
    records = model.generate(run.prompts, budgets, progress=False)
    if len(records) != len(run.prompts):
        return f"{len(records)} records for {len(run.prompts)} prompts"
    for i, (record, limit) in enumerate(zip(records, budgets)):
        cap = run.spec.generation_budget(limit)
        problem = record_problems(record, top_k=model.top_k, full_entropy=model.full_entropy, budget=cap)
        if problem:
            return f"prompt {i}: {problem}"
    records_to_frame(records)
    run.records = records
    return None


def _deterministic(run: _Run, budget: int) -> str | None:
    if not run.records:
        return "not run: no generations (check 'generates records')"
    budgets = [budget] + [1] * (len(run.prompts) > 1) + [budget] * max(0, len(run.prompts) - 2)
    again = run.loaded().generate(run.prompts, budgets, progress=False)
    for i, (first, second) in enumerate(zip(run.records, again)):
        if not np.array_equal(first.token_ids, second.token_ids):
            return f"prompt {i}: {list(first.token_ids)} then {list(second.token_ids)}"
    return None


def _draws(run: _Run, budget: int) -> str | None:
    model = run.loaded()
    support = getattr(type(model), "draws", "none")
    if support == "none":
        return None  # it cannot sample: the configuration refuses draws from it
    if not callable(getattr(model, "sample", None)):
        return f"it declares draws {support!r} but has no sample method"
    if not run.prompts:
        return "not run: no prompts (check 'renders')"
    seeds, budgets = list(range(1, len(run.prompts) + 1)), [budget] * len(run.prompts)
    drawn = model.sample(run.prompts, budgets, seeds, DrawSettings(2), progress=False)
    if len(drawn) != len(run.prompts) or any(len(draws) != 2 for draws in drawn):
        return f"{[len(draws) for draws in drawn]} draws for {len(run.prompts)} prompts and n = 2"
    cap = run.spec.generation_budget(budget)
    for i, draws in enumerate(drawn):
        for d, record in enumerate(draws):
            problem = record_problems(record, top_k=model.top_k, full_entropy=model.full_entropy, budget=cap)
            if problem:
                return f"prompt {i}, draw {d}: {problem}"
    if support == "seeded":
        again = model.sample(run.prompts, budgets, seeds, DrawSettings(2), progress=False)
        for i, (first, second) in enumerate(zip(drawn, again)):
            if not all(np.array_equal(a.token_ids, b.token_ids) for a, b in zip(first, second)):
                return f"prompt {i}: the same seeds drew other tokens (it declares seeded draws)"
    return None


def _forced(run: _Run, budget: int) -> str | None:
    model = run.loaded()
    tokens = [int(t) for t in (run.records[0].token_ids if run.records else [])]
    if model.tokenizer is None or len(tokens) < 2:
        return None if model.tokenizer is None else "not run: the first generation has fewer than 2 tokens"
    prompt_ids = encode_prompt(model.tokenizer, run.prompts[0])
    rows = [(tokens[:1], tokens[1:2]), ([], tokens[:1])]
    try:
        cache = model.prompt_cache(prompt_ids)
        free = model.force_and_continue(prompt_ids, rows, max_new_tokens=budget, cache=cache)
    except NotImplementedError:
        return None  # it cannot teacher-force: the configuration keeps it out of the interventions
    stopped = model.force_and_continue(
        prompt_ids,
        rows,
        max_new_tokens=budget,
        cache=model.prompt_cache(prompt_ids),
        stop=lambda r, ids: True,
    )
    return _forced_problems(model, rows, free, budget) or _stop_problems(stopped, len(rows))


def _forced_problems(model: Any, rows: Sequence[Any], out: Sequence[Any], budget: int) -> str | None:
    if len(out) != len(rows):
        return f"{len(out)} results for {len(rows)} rows"
    for i, ((_, target), result) in enumerate(zip(rows, out)):
        if not isinstance(result, ForcedContinuation):
            return f"row {i}: {type(result).__name__} is not a ForcedContinuation"
        forced = np.asarray(result.target_logprobs, dtype=np.float64)
        if forced.shape != (len(target),) or not np.isfinite(forced).all() or (forced > _TOLERANCE).any():
            return f"row {i}: target log-probabilities {forced.tolist()} for {len(target)} target tokens"
        if result.finish_reason not in ("eos", "stop", "length"):
            return f"row {i}: finish_reason {result.finish_reason!r}"
        problem = record_problems(
            result.generation, top_k=model.top_k, full_entropy=model.full_entropy, budget=budget
        )
        if problem:
            return f"row {i}: its continuation: {problem}"
    return None


def _stop_problems(out: Sequence[Any], n_rows: int) -> str | None:
    if len(out) != n_rows:
        return f"{len(out)} results for {n_rows} rows with a stop rule"
    for i, result in enumerate(out):
        n = len(result.generation.token_ids)
        if n > 1 or (n == 1 and result.finish_reason not in ("stop", "eos")):
            return f"row {i}: a rule that stops after one token gave {n} tokens ({result.finish_reason})"
    return None


def backend_failures(
    spec: ModelSpec,
    model_path: str | Path,
    *,
    backend: str | None = None,
    settings: LoadSettings | None = None,
    instructions: Sequence[str] = INSTRUCTIONS,
    budget: int = 8,
) -> list[Failure]:
    """Every failed check (:data:`BACKEND_CHECKS`) of the registry entry ``spec`` with its files at
    ``model_path`` on ``backend`` (default: the entry's) with the job's ``settings`` (default:
    :class:`~saltbench.inference.backends.LoadSettings`), generating ``instructions`` with at most ``budget``
    new tokens."""
    run = _Run(spec, model_path, backend or spec.backend, settings or LoadSettings())
    checks: list[tuple[str, Callable[[], str | None]]] = [
        ("loader declared", lambda: _declared(run)),
        ("loads", lambda: _loads(run)),
        ("renders", lambda: _renders(run, instructions)),
        ("generates records", lambda: _generates(run, budget)),
        ("deterministic", lambda: _deterministic(run, budget)),
        ("draws", lambda: _draws(run, budget)),
        ("forced continuation", lambda: _forced(run, budget)),
    ]
    return run_checks(checks)


def check_backend(spec: ModelSpec, model_path: str | Path, **kwargs: Any) -> None:
    """Run every backend check (:func:`backend_failures`, same arguments).

    Raises:
        ConformanceError: naming the first failed check.
    """
    raise_first(
        f"backend {kwargs.get('backend') or spec.backend!r}", backend_failures(spec, model_path, **kwargs)
    )


__all__ = ["BACKEND_CHECKS", "INSTRUCTIONS", "backend_failures", "check_backend", "record_problems"]
