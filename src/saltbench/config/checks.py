"""The configuration's checks against the outside world: the plugins it selects, the task generators'
parameters (a trial generation), the paper data folder, the number of inference jobs, the training recipe,
the model registry and the budgets it leaves room for (docs/configuration.md §2).

The checks between keys of the configuration itself are the blocks' ``check_*`` methods; these need the
task registry, the file system, the training recipe or the model registry, each imported when its check
runs (so that a dry run loads only what the configuration uses).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from saltbench.config.schema import ConfigError
from saltbench.config.training import TrainTaskConfig
from saltbench.config.workflow import WorkflowConfig
from saltbench.core.paper import PAPER_FOLDERS
from saltbench.core.shards import n_shards

if TYPE_CHECKING:
    import polars as pl

    from saltbench.inference import ModelSpec

log = logging.getLogger(__name__)

MAX_INFERENCE_JOBS = 100_000
"""Upper bound of the inference shard jobs of a run: ``ceil(samples / inference.shard_size)`` summed over
tasks, times models and prompt styles. Building the DAG takes about 20 kB per job (a dry run with 4,000
shard jobs used 80 MB more than one with 27 jobs), so this bound is a few GB; the paper-scale config
(``config/paper.yaml``) has about 2,100."""


def check_task_params(settings: WorkflowConfig) -> None:
    """Every generator parameter set of the configuration is accepted: the task's own check
    (``Task.check_params``), then, for each of ``tasks`` that is a plugin's or has ``datasets.params``, a
    trial generation of a few samples with them — so that a plugin whose generator validates only when it
    runs fails here, naming the key, and not in its ``build_dataset`` job. A built-in task with its default
    parameters is not tried: its tests generate it, and Logic's generator would cost every dry run its
    SymPy import and its solver (docs/performance.md §2.1)."""
    from saltbench.tasks import BUILTIN_TASKS, get_task

    checks = [(f"datasets.params.{slug}", slug, kwargs) for slug, kwargs in settings.datasets.params.items()]
    for slug, spec in (settings.training.tasks or {}).items():
        if isinstance(spec, TrainTaskConfig) and spec.params:
            checks.append((f"training.tasks.{slug}.params", slug, spec.params))
    for where, slug, kwargs in checks:
        try:
            get_task(slug).check_params(dict(kwargs))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: {exc}") from exc
    builtin = {task.slug for task in BUILTIN_TASKS}
    for slug in settings.tasks:
        if slug in builtin and not settings.datasets.params.get(slug):
            continue
        try:
            trial_rows(settings, slug)
        except Exception as exc:  # whatever a generator raises on parameters it cannot use
            where = f"datasets.params.{slug}" if slug in settings.datasets.params else f"tasks: {slug!r}"
            raise ConfigError(
                f"{where}: the task's generator fails on these parameters: {type(exc).__name__}: {exc}"
            ) from exc


TRIAL_SAMPLES = 8
"""Samples of a task's trial generation (:func:`trial_rows`): more than the seven Code variants."""

_trials: dict[str, pl.DataFrame] = {}


def trial_rows(settings: WorkflowConfig, task: str) -> pl.DataFrame:
    """:data:`TRIAL_SAMPLES` rows of ``task`` generated with its ``datasets.params`` and the run's seed
    (computed once per process and parameter set)."""
    from saltbench.io import config_hash
    from saltbench.tasks import get_task

    params = dict(settings.datasets.params.get(task, {}))
    key = config_hash({"task": task, "params": params, "seed": settings.seed})
    if key not in _trials:
        _trials[key] = get_task(task).generate(TRIAL_SAMPLES, settings.seed, **params)
    return _trials[key]


def _named_plugins(settings: WorkflowConfig) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """``{entry-point group: [(key, names), ...]}``: where the configuration names tasks and confidence
    functions (interventions and training only when enabled)."""
    from saltbench.core.plugins import CONFIDENCE_GROUP, TASK_GROUP

    tasks = [("tasks", settings.tasks), ("datasets.params", tuple(settings.datasets.params))]
    if settings.interventions.enabled:
        tasks.append(("interventions.tasks", settings.interventions.tasks))
    if settings.training.enabled:
        tasks.append(("training.tasks", tuple(settings.training.tasks or ())))
    functions = [
        ("scoring.confidence_functions", settings.scoring.confidence_functions),
        ("metrics.default_confidence", (settings.metrics.default_confidence,)),
    ]
    return {TASK_GROUP: tasks, CONFIDENCE_GROUP: functions}


def check_broken_plugins(settings: WorkflowConfig) -> None:
    """No task or confidence function the configuration names is an installed plugin that cannot be used
    (it fails to import, or fails its registry's checks: :func:`saltbench.core.plugins.broken_plugins`).
    Such a plugin stops only the runs that name it, here, with the key and the plugin's error; for the
    others it is logged as a warning (docs/extending.md §1).

    Raises:
        ConfigError: ``{key}: {the plugin's error}`` for the first broken plugin named.
    """
    import saltbench.confidence  # noqa: F401 — the registries record the broken plugins when built
    import saltbench.tasks  # noqa: F401
    from saltbench.core.plugins import broken_plugins

    for group, places in _named_plugins(settings).items():
        broken = broken_plugins(group)
        for key, names in places:
            for name in names:
                if name in broken:
                    raise ConfigError(f"{key}: {broken[name]}")
        named = {name for _, names in places for name in names}
        for name in sorted(set(broken) - named):
            log.warning(
                "saltbench: warning: %s; this configuration does not use it: the run goes on", broken[name]
            )


def check_plugins(settings: WorkflowConfig) -> None:
    """The plugins a configuration selects pass their conformance checks (docs/extending.md §4); plugin tasks
    have no reproduction data (``datasets.source: paper``) and join the interventions only when they
    declare a corruption; every selected confidence function supports one of ``scoring.flavours``."""
    from saltbench.confidence import CONFIDENCE_PLUGINS, confidence_spec
    from saltbench.conformance import ConformanceError, check_confidence_function, check_task
    from saltbench.tasks import TASK_PLUGINS, TASKS, declares_corruption

    for slug in settings.tasks:
        if slug not in TASK_PLUGINS:
            continue
        if settings.datasets.source == "paper":
            raise ConfigError(
                f"tasks: {slug!r} (a plugin task, {TASK_PLUGINS[slug].describe()}) has no reproduction data; "
                "datasets.source: paper runs only the six paper tasks"
            )
        try:
            check_task(TASKS[slug])
        except ConformanceError as exc:
            raise ConfigError(f"tasks: {exc} (plugin {TASK_PLUGINS[slug].describe()})") from None
    if settings.interventions.enabled:
        for slug in settings.interventions.tasks or settings.tasks:
            if slug in TASKS and not declares_corruption(TASKS[slug]):
                raise ConfigError(
                    f"interventions.tasks: {slug!r} declares no corruption of an atom (Task.corrupt_atom), "
                    "so it cannot be intervened on; list the other tasks in interventions.tasks"
                )
    for name in settings.scoring.confidence_functions:
        spec = confidence_spec(name)
        if not set(spec.flavours) & set(settings.scoring.flavours):
            raise ConfigError(
                f"scoring.confidence_functions: {name!r} supports the flavour(s) {', '.join(spec.flavours)}, "
                f"none of scoring.flavours ({', '.join(settings.scoring.flavours)})"
            )
        if name in CONFIDENCE_PLUGINS:
            try:
                check_confidence_function(spec)
            except ConformanceError as exc:
                raise ConfigError(
                    f"scoring.confidence_functions: {exc} (plugin {CONFIDENCE_PLUGINS[name].describe()})"
                ) from None


def check_paper_data(settings: WorkflowConfig) -> None:
    """With ``datasets.source: paper``: ``paper_path`` is given, is an existing folder (a relative path is
    resolved against the current working directory, the workflow root under Snakemake) and holds the
    reproduction folder of every task in ``tasks``."""
    ds = settings.datasets
    if ds.source != "paper":
        return
    if not ds.paper_path:
        raise ConfigError("datasets.paper_path: required when datasets.source is 'paper'")
    given = Path(ds.paper_path)
    root = given if given.is_absolute() else Path.cwd() / given
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise ConfigError(
            f"datasets.paper_path: {str(given)!r} {what} (resolved to {str(root.resolve())!r}; relative "
            f"paths are resolved against the working directory)"
        )
    missing = [
        f"{PAPER_FOLDERS[t]} (task {t})" for t in settings.tasks if not (root / PAPER_FOLDERS[t]).is_dir()
    ]
    if missing:
        raise ConfigError(
            f"datasets.paper_path: {str(given)!r} lacks the reproduction folder(s) {', '.join(missing)}"
        )


def check_job_count(settings: WorkflowConfig) -> None:
    """Checks that the run has at most :data:`MAX_INFERENCE_JOBS` inference shard jobs.

    The count is ``ceil(samples / inference.shard_size)`` (at least 1) summed over ``tasks``, times the
    number of ``models`` and ``prompt_styles``; with ``datasets.source: paper`` the samples of a task are
    its reproduction rows, capped by ``n_samples``.
    """
    shard_size = settings.inference.shard_size
    rows = [settings.dataset_rows(task) or 0 for task in settings.tasks]
    shards = sum(n_shards(n, shard_size) for n in rows)
    models, styles = len(settings.models), len(settings.prompt_styles)
    jobs = shards * models * styles
    if jobs > MAX_INFERENCE_JOBS:
        raise ConfigError(
            f"datasets.n_samples / inference.shard_size: {jobs:,} inference jobs ({shards:,} shards over "
            f"{len(settings.tasks)} task(s) x {models} model(s) x {styles} prompt style(s)); at most "
            f"{MAX_INFERENCE_JOBS:,} (saltbench.config.MAX_INFERENCE_JOBS): raise inference.shard_size or "
            f"lower datasets.n_samples"
        )


def check_training(settings: WorkflowConfig) -> None:
    """With ``training.enabled``: the recipe builds (``saltbench.training.TrainConfig.from_dict``: the rules
    between keys, e.g. checkpoint steps within ``steps``, ``d_model`` divisible by ``n_heads``); the recipe
    module is torch-free, so this costs a dry run nothing."""
    if not settings.training.enabled:
        return
    from saltbench.training.recipe import TrainConfig

    settings.training.check_variants()
    for name, recipe in settings.training.families().items():
        key = "training" if name == settings.training.name else f"training.variants.{name}"
        try:
            TrainConfig.from_dict(recipe)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{key}: {exc}") from exc


def check_models_in_registry(settings: WorkflowConfig) -> None:
    """Every model of ``models`` (and of ``interventions.models`` when enabled) is in the registry; an
    ``inference.backend`` override fits every model (``openai`` for served models, and only for them; an
    imported model runs on no backend, so none applies to it); no served model without prompt
    log-probabilities and no imported model is asked for interventions."""
    if not settings.models:
        raise ConfigError("models: the run names no model (every table would be empty); name at least one")
    named = [("models", settings.models)]
    if settings.interventions.enabled:
        named.append(("interventions.models", settings.interventions.models))
    from saltbench.inference import load_model_registry
    from saltbench.inference.openai import api_settings

    registry_path = Path(settings.model_registry)
    if not registry_path.exists():
        raise ConfigError(f"model_registry: file {str(registry_path)!r} does not exist")
    try:
        registry = load_model_registry(registry_path)
    except ValueError as exc:  # the registry's own checks name the file, the model and the key
        raise ConfigError(f"model_registry: {exc}") from None
    for key, names in named:
        for name in names:
            if name not in registry:
                raise ConfigError(
                    f"{key}: unknown model {name!r}; the registry {str(registry_path)!r} defines "
                    f"{', '.join(sorted(registry))}"
                )
    override = settings.inference.backend
    for name in settings.models:
        spec = registry[name]
        if spec.imported:  # its generations come from a file, not from a backend
            continue
        exclusive = ("openai", "simulated")  # backends of one source kind each (served, simulated models)
        if (
            override is not None
            and override != spec.backend
            and exclusive.count(override) + exclusive.count(spec.backend)
        ):
            raise ConfigError(
                f"inference.backend: {override!r} cannot run model {name!r} (registry backend "
                f"{spec.backend!r}): a served model runs only on backend openai and a simulated one only on "
                "backend simulated, and those backends run nothing else"
            )
    if settings.interventions.enabled:
        imported = [n for n in settings.interventions.models or settings.models if registry[n].imported]
        if imported:
            raise ConfigError(
                f"interventions.models: {', '.join(imported)} imported (source kind generations): the "
                "interventions teacher-force answer prefixes through the model itself, and an imported model "
                "has only its generations; list interventions.models without it (docs/backends.md §9)"
            )
        served = [
            n
            for n in settings.interventions.models or settings.models
            if registry[n].served and not api_settings(registry[n]).prompt_logprobs
        ]
        if served:
            raise ConfigError(
                f"interventions.models: {', '.join(served)} run(s) on backend openai without "
                "backend_options.prompt_logprobs: the interventions teacher-force an answer prefix, which "
                "needs the completions endpoint with token-id prompts and prompt log-probabilities (vLLM, "
                "SGLang, TGI; not the OpenAI chat API); set backend_options.prompt_logprobs where the server "
                "has them, or leave the model out of interventions.models (docs/backends.md §8)"
            )
    check_backend_plugins(settings, registry)
    check_budgets(settings, registry)
    check_draws(settings, registry)
    check_second_pass(settings, registry)


def check_backend_plugins(settings: WorkflowConfig, registry: Mapping[str, ModelSpec]) -> None:
    """No model of the run runs on a backend plugin that cannot be used (it reuses a built-in backend's
    name: :func:`saltbench.inference.backends.backend_names`, or failed to import when the registry read an
    entry naming it: :func:`saltbench.inference.backends.options_class`); such a plugin stops only the runs
    whose models use that name, and is a warning for the others (docs/extending.md §1).

    Raises:
        ConfigError: ``models: model 'M' runs on backend 'B': {the plugin's error}``.
    """
    from saltbench.core.plugins import BACKEND_GROUP, broken_plugins
    from saltbench.inference.backends import backend_names

    backend_names()  # records the unusable backend plugins
    broken = broken_plugins(BACKEND_GROUP)
    used = set()
    for name in settings.models:
        spec = registry[name]
        backend = None if spec.imported else settings.inference.backend or spec.backend
        if backend in broken:
            raise ConfigError(f"models: model {name!r} runs on backend {backend!r}: {broken[backend]}")
        used.add(backend)
    for backend in sorted(set(broken) - used):
        log.warning(
            "saltbench: warning: %s; this configuration does not use it: the run goes on", broken[backend]
        )


def check_budgets(settings: WorkflowConfig, registry: Mapping[str, ModelSpec]) -> None:
    """Every model with a ``max_context`` has room for a prompt besides its generation budget, for every
    task and style it answers (the budget as its backend applies it: the registry's ``max_new_tokens``, or
    the config's scaled by ``max_new_tokens_scale``). A budget that fills the context made every prompt an
    error row. How long a prompt is depends on the model's tokenizer and chat template, so a budget that
    leaves some room is checked per prompt when it is generated (``inference.max_error_share``)."""
    for name in settings.models:
        spec = registry[name]
        if spec.max_context is None or spec.imported:
            continue
        for task in settings.tasks:
            for style in settings.prompt_styles:
                budget = spec.generation_budget(settings.inference.max_new_tokens_for(task, style))
                if budget >= spec.max_context:
                    raise ConfigError(
                        f"inference.max_new_tokens: model {name!r} has max_context {spec.max_context}, and "
                        f"its {style} budget of task {task!r} ({budget} new tokens) leaves no room for the "
                        "prompt; lower the budget or raise the registry's max_context"
                    )


def _warn_outside_the_run(key: str, named: Sequence[str] | None, models: Sequence[str]) -> None:
    """Log the names of ``named`` (config ``key``) that are not among the run's ``models``: a run may narrow
    ``models`` (a command line, another registry), so they are ignored with a warning, not refused."""
    outside = [m for m in named or () if m not in models]
    if outside:
        log.warning("%s: %s not among the run's models; ignored", key, ", ".join(outside))


def check_draws(settings: WorkflowConfig, registry: Mapping[str, ModelSpec]) -> None:
    """With ``inference.samples.n > 0``, every model of the run samples with a seed on its backend
    (:func:`saltbench.inference.backends.draw_support`: ``seeded``), so that a rerun reproduces every draw;
    an imported model takes the draws its file carries (JSONL ``draws``, inspect_ai epochs: docs/backends.md
    §9.7), so the authors' cache, which carries none, is refused (docs/generation.md §7). Only the models
    of ``inference.samples.models`` draw (default: all); a name it lists outside the run's models is
    logged and ignored.

    Raises:
        ConfigError: ``inference.samples: model 'M' ...`` naming the backend and what it lacks.
    """
    from saltbench.inference.backends import draw_support

    _warn_outside_the_run("inference.samples.models", settings.inference.samples.models, settings.models)
    for name in settings.inference.samples.drawn(settings.models):
        spec = registry[name]
        if spec.imported:
            if getattr(spec.source, "format", None) == "salt_cache":
                raise ConfigError(
                    f"inference.samples: model {name!r} is imported from the authors' cache, which carries "
                    "no draws; set inference.samples.n: 0 or leave the model out of inference.samples.models "
                    "(docs/backends.md §9.7)"
                )
            continue
        backend = settings.inference.backend or spec.backend
        support = draw_support(backend, spec)
        if support != "seeded":
            lacks = (
                "cannot sample" if support == "none" else "samples without a seed (draws not reproducible)"
            )
            raise ConfigError(
                f"inference.samples: model {name!r} on backend {backend!r} {lacks}; draws need seeded "
                "sampling (a served API taking n and seed: backend_options.draws), so set "
                "inference.samples.n: 0 or leave the model out of inference.samples.models "
                "(docs/generation.md §7)"
            )


def check_second_pass(settings: WorkflowConfig, registry: Mapping[str, ModelSpec]) -> None:
    """With ``inference.second_pass.kinds``, every unit granularity asked about is scored
    (``scoring.granularities``), no model asked is imported (it has no model to ask: by default the
    imported models are left out, :meth:`SecondPassConfig.asked`), and with
    ``p_true`` no model is served without token ids: P(True) reads the token texts of the reply's first
    token's candidates, which an API returning token strings only (backend openai without
    ``backend_options.token_ids``) does not keep (docs/confidence.md §8).

    Raises:
        ConfigError: ``inference.second_pass...`` naming the key, the model and what it lacks.
    """
    second = settings.inference.second_pass
    if not second.kinds:
        return
    unscored = [g for g in second.granularities if g not in settings.scoring.granularities]
    if unscored:
        raise ConfigError(
            f"inference.second_pass.granularities: {', '.join(unscored)} not in scoring.granularities "
            f"({', '.join(settings.scoring.granularities)}): its answers would join no unit"
        )
    from saltbench.inference.openai import api_settings

    _warn_outside_the_run("inference.second_pass.models", second.models, settings.models)
    imported = [name for name in settings.models if registry[name].imported]
    for name in second.asked(settings.models, imported):
        spec = registry[name]
        if spec.imported:
            raise ConfigError(
                f"inference.second_pass.models: model {name!r} is imported (source kind generations): there "
                "is no model to ask about its answers; leave it out of inference.second_pass.models "
                "(docs/confidence.md §8)"
            )
        if "p_true" in second.kinds and spec.served and not api_settings(spec).token_ids:
            raise ConfigError(
                f"inference.second_pass.kinds: p_true for model {name!r} on backend openai without "
                "backend_options.token_ids: the API returns token strings only, so the first reply token's "
                "candidates cannot be read as True or False; set backend_options.token_ids (with its "
                "tokenizer) where the server has them, or ask verbalized only (docs/confidence.md §8)"
            )


def check_outside_world(settings: WorkflowConfig, *, check_models: bool = True) -> None:
    """Every check of this module, in the order :func:`saltbench.config.resolve_config` runs them (between
    the blocks' own checks)."""
    check_broken_plugins(settings)
    check_plugins(settings)
    check_task_params(settings)
    settings.check_datasets()
    check_paper_data(settings)
    check_job_count(settings)
    settings.check_analysis()
    check_training(settings)
    settings.interventions.check_grid()
    settings.check_interventions()
    if check_models:
        check_models_in_registry(settings)
    settings.inference.check_max_samples(settings.models)


__all__ = ["MAX_INFERENCE_JOBS", "check_outside_world"]
