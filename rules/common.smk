"""Shared helpers for the rules: wildcard constraints, the model registry, shard counts, resources.

A parameter, input or resource that is the same for every job a rule can plan is given as that value, not
as a function: Snakemake calls a function once per job, which at paper scale (2,124 shard jobs) is a
measurable share of every dry run (docs/performance.md §2.1).
"""

from types import SimpleNamespace

from saltbench.core.shards import n_shards
from saltbench.core.vocabulary import MODEL_NAME_REGEX
from saltbench.inference import GgufPackageSource, LocalSource
from saltbench.inference.sources import SimulatedSource
from saltbench.tasks import TASK_PLUGINS, TASK_SLUGS
from saltbench.workflow.rule_support import (
    NO_PLUGIN,
    names_regex,
    plugin_versions,
    simulation_parameters,
)


wildcard_constraints:
    task="|".join(TASK_SLUGS),
    style="|".join(STYLES),  # the configured prompt styles (the Snakefile's STYLES)
    shard=r"\d+",
    model=MODEL_NAME_REGEX,


CONVERTED_MODELS = "data/models/converted"
# the models whose generations the generation rules write, and those rule import_generations writes
GENERATED_MODEL_REGEX = names_regex(name for name, spec in REGISTRY.items() if not spec.imported)
IMPORTED_MODEL_REGEX = names_regex(IMPORTED_MODELS)


def spec_of(model):
    """The registry entry of a model name."""
    return REGISTRY[model]


def constant_if_shared(function):
    """``function`` of a job's ``model`` wildcard as a rule's input, parameter or resource: the value itself
    where every registry model gives the same (module docstring), else ``function``."""
    values = [function(SimpleNamespace(model=name)) for name in REGISTRY]
    return values[0] if all(value == values[0] for value in values) else function


def shards_of(task, model):
    """Shard indices of a task's inference jobs for one model (inference.max_samples applied)."""
    rows = SETTINGS.inference.rows_for(model, SETTINGS.dataset_rows(task))
    return range(n_shards(rows, config["inference"]["shard_size"]))


def per_task(pattern):
    """``pattern`` for every configured task, keeping the other wildcards: the files of a per-(model, style) job."""
    return expand(pattern, task=TASKS, allow_missing=True)


def generation_shards(wildcards, kind="generations"):
    """The shard files of every task of one (model, style), named by task (``kind``: generations or draws)."""
    return {
        task: expand(
            f"data/{kind}/{{model}}/{{style}}/{{task}}/shard-{{shard}}.parquet",
            model=wildcards.model,
            style=wildcards.style,
            task=task,
            shard=shards_of(task, wildcards.model),
        )
        for task in TASKS
    }


def draw_shards(wildcards):
    """The draws shard files of every task of one (model, style), named by task."""
    return generation_shards(wildcards, "draws")


# The inference settings the greedy generation jobs read: all but inference.samples, which only the draws
# jobs read, and inference.second_pass, which only the second-pass jobs read, so that asking for draws or a
# second pass (or changing them) never reruns or invalidates greedy generations.
GREEDY_INFERENCE = {
    key: value for key, value in config["inference"].items() if key not in ("samples", "second_pass")
}
# ... and the draws jobs read all but inference.second_pass
DRAWS_INFERENCE = {key: value for key, value in config["inference"].items() if key != "second_pass"}
# models whose draws (inference.samples, docs/generation.md §7) the run asks for
DRAW_MODELS = list(SETTINGS.inference.samples.drawn(MODELS))
# models asked about their own answers (inference.second_pass, docs/confidence.md §8)
SECOND_PASS_MODELS = list(
    SETTINGS.inference.second_pass.asked(MODELS, [m for m in MODELS if spec_of(m).imported])
)


def model_files(wildcards):
    """Files an inference job needs for its model: the converted GGUF, a trained/local directory, a simulated
    model's datasets, or none."""
    source = spec_of(wildcards.model).source
    if isinstance(source, GgufPackageSource):
        return [f"{CONVERTED_MODELS}/{wildcards.model}"]
    if isinstance(source, LocalSource):
        return [source.path]
    if isinstance(source, SimulatedSource) and source.datasets == "data/datasets":
        return expand("data/datasets/{task}.parquet", task=TASKS)  # what it answers from
    return []


def simulation(wildcards):
    """The ``simulation`` parameter of a job running the model: a simulated model's planted parameters."""
    return simulation_parameters(spec_of(wildcards.model))


def backend_of(wildcards):
    """The inference engine of a job: the run's inference.backend, else the model's registry backend."""
    return config["inference"]["backend"] or spec_of(wildcards.model).backend


def model_path(wildcards):
    """What the inference script passes to from_pretrained."""
    return spec_of(wildcards.model).resolve_path(CONVERTED_MODELS)


def managed(wildcards):
    """Whether the job's model runs on a workflow-managed vLLM server (backend vllm_server)."""
    return backend_of(wildcards) == "vllm_server"


def _managed_server(wildcards):
    """The service file of the model's server (the serve_model rule) for a vllm_server model, else nothing:
    consuming it makes the job a client of that server, run beside it in one group job."""
    return [f"data/servers/{wildcards.model}.json"] if managed(wildcards) else []


managed_server = constant_if_shared(_managed_server)


# a client of a workflow-managed server: no GPU, no core of its own (it waits on HTTP), little memory
SERVER_CLIENT_RESOURCES = {"gpu": 0, "gpu_model": None, "mem_mb": 1500, "cpus": 0}


def model_resource(key, server=False):
    """A resource callable reading the model registry (:func:`constant_if_shared`); SLURM maps them to
    --gpus, --mem, --time.

    ``gpu_model`` is None when the registry leaves it null (Snakemake then drops the resource);
    CPU threads come from ``resources.cpus`` through the rule's ``threads``. For a vllm_server model the
    registry's resources belong to its server (``server=True``, the serve_model rule); its inference and
    intervention jobs are clients (SERVER_CLIENT_RESOURCES, their runtime the model's).
    """

    def lookup(wildcards, threads=None):
        res = spec_of(wildcards.model).resources
        if not server and managed(wildcards) and key in SERVER_CLIENT_RESOURCES:
            return SERVER_CLIENT_RESOURCES[key]
        return {
            "gpu": res.gpus,
            "gpu_model": res.gpu_model,
            "mem_mb": res.mem_mb,
            "runtime": res.runtime_min,
            "cpus": res.cpus,
        }[key]

    return constant_if_shared(lookup)


def _task_plugins(wildcards):
    """The ``plugins`` parameter of a job that runs task code: the plugin of its task (the task wildcard),
    else of every task; a new version or edited code of that plugin makes the job's outputs stale."""
    return plugin_versions(tasks=[wildcards.task] if "task" in wildcards.keys() else TASKS)


# NO_PLUGIN for every job while no task plugin is installed (module docstring)
task_plugins = _task_plugins if TASK_PLUGINS else NO_PLUGIN
# the ``plugins`` parameter of the scoring jobs: the task and confidence-function plugins
scoring_plugins = plugin_versions(tasks=TASKS, confidence=config["scoring"]["confidence_functions"])
# the ``plugins`` parameter of the metrics jobs: the task, confidence-function and metric plugins
metrics_plugins = plugin_versions(
    tasks=TASKS, confidence=config["scoring"]["confidence_functions"], metrics=True
)
# the ``max_samples`` parameter of an inference job: the run's cap of its model (None: every row)
max_samples = (
    (lambda wildcards: config["inference"]["max_samples"].get(wildcards.model))
    if config["inference"]["max_samples"]
    else None
)


def intervention_shards(wildcards):
    """The shard files of one (model, task)."""
    return expand(
        "data/interventions/{model}/{task}/shard-{shard}.parquet",
        model=wildcards.model,
        task=wildcards.task,
        shard=range(INTERVENTIONS.n_shards(SETTINGS.dataset_rows(wildcards.task))),
    )
