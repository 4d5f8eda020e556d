"""saltbench: the SALT study as a Snakemake workflow (see README.md).

Stages, one rules/*.smk each: datasets -> inference -> scoring -> metrics (+ training, interventions)
-> analysis tables -> figures, and the explorer of every response. The config is validated by the package's
configuration model before any job runs (saltbench.config.resolve_config); a wrong key or value stops the run
with a message naming it.
"""

import gc
import os
import sys

from saltbench.config import ConfigError, check_config_files, resolve_config
from saltbench.core.plugins import PluginError
from saltbench.inference import load_model_registry
from saltbench.inference.sources import SimulatedSource
from saltbench.interventions import InterventionOptions
from saltbench.workflow.rule_support import report_text
from saltbench.workflow.tables import target_files
from saltbench.workflow.kept import finish_run, start_run
from saltbench.workflow.runlock import acquire_run_lock, remove_stale_job_scripts, remove_stale_temporaries

# config/config.yaml is the default; a --configfile given on the command line replaces it entirely
# (Snakemake would otherwise deep-merge the two, leaking small-config keys into e.g. config/paper.yaml).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# Snakemake's YAML loader keeps the last value of a repeated key silently; ours rejects it (file, line).
# The typed configuration (saltbench.config.workflow.WorkflowConfig: every default stated there); Snakemake's
# `config` becomes its plain resolved form, which the rules' params read. A mistake (in the config, the model
# registry or a plugin it names) stops the run with its message alone: it names the key, no traceback is needed.
# An installed plugin that fails to import stops only the runs whose config names it (docs/extending.md §1).
try:
    check_config_files(workflow.configfiles)
    SETTINGS = resolve_config(config)
except (ConfigError, PluginError) as exc:
    sys.exit(f"saltbench: {exc}")
config.update(SETTINGS.to_dict())

TASKS = list(SETTINGS.tasks)
STYLES = list(SETTINGS.prompt_styles)
STYLE_TASKS = [(style, task) for style in STYLES for task in TASKS]  # the files of a per_model inference job
INFERENCE_JOBS = SETTINGS.inference.jobs
MODELS = list(SETTINGS.models)
REGISTRY = load_model_registry(config["model_registry"])  # checked by resolve_config above
INTERVENTIONS = InterventionOptions.from_config(SETTINGS)
INTERVENTION_MODELS = list(INTERVENTIONS.models) if INTERVENTIONS.enabled else []
INTERVENTION_TASKS = [t for t in INTERVENTIONS.tasks if t in TASKS] if INTERVENTION_MODELS else []
TRAINING = SETTINGS.training
TRAINING_FAMILIES = TRAINING.families()  # family -> the saltbench.training.TrainConfig keys as written
TRAINING_CHECKPOINTS = list(TRAINING.checkpoint_names)
TRAINED_MODELS = list(TRAINING_FAMILIES) if TRAINING.enabled else []
# The parts of the study this run makes (saltbench.workflow.tables, saltbench.core.outputs: every table and
# figure, with what it needs).
SIMULATED_MODELS = [m for m in MODELS if isinstance(REGISTRY[m].source, SimulatedSource)]
# models whose generations are imported from a file (source kind generations): rule import_generations
IMPORTED_MODELS = [m for m in MODELS if REGISTRY[m].imported]
ENABLED_OUTPUTS = (
    ["interventions"] * bool(INTERVENTION_MODELS)
    + ["training"] * bool(TRAINED_MODELS)
    + ["simulation"] * bool(SIMULATED_MODELS)
)


# No job runs more threads than its rule's `threads` (the scheduler keeps their sum within --cores):
# Snakemake sets OMP/MKL/OpenBLAS thread counts per job, the scripts give torch exactly `threads`, and
# polars, whose own pool would take every core, gets one thread in every job (its work there is light).
os.environ.setdefault("POLARS_MAX_THREADS", "1")


# The report's front page: report/workflow.rst, then (after a run) the findings page's opening section.
report: report_text("report/workflow.rst", "results/findings.md", ".snakemake/saltbench/workflow.rst")


onstart:
    # Real runs only (never dry runs, --lint or --report): one running workflow per directory, held until
    # this process exits (saltbench.workflow.runlock); then the temporary files of interrupted writers are removed,
    # and the kept copies of finished shards that are not restorable: their outputs exist, or were deleted by hand
    # since the last run (saltbench.workflow.kept, docs/reliability.md §2.3).
    acquire_run_lock()
    remove_stale_temporaries(["data", "results", "figures"])
    remove_stale_job_scripts()
    start_run()


onerror:
    # The kept copies whose outputs are missing now were deleted by Snakemake after a failed job of this run:
    # marked restorable, so that the next run of those jobs restores them (docs/reliability.md §2.3).
    finish_run()


include: "rules/common.smk"
include: "rules/datasets.smk"
include: "rules/train.smk"
include: "rules/inference.smk"
include: "rules/second_pass.smk"
include: "rules/scoring.smk"
include: "rules/interventions.smk"
include: "rules/analysis.smk"
include: "rules/figures.smk"
include: "rules/explorer.smk"


rule all:
    """Every dataset, metrics file, table and figure of the configuration, the findings and the explorer."""
    default_target: True
    localrule: True
    input:
        expand("data/datasets/{task}.parquet", task=TASKS),
        expand("results/metrics/{model}/{style}/{task}.parquet", model=MODELS, style=STYLES, task=TASKS),
        expand("data/draws/{model}/{style}/{task}.parquet", model=DRAW_MODELS, style=STYLES, task=TASKS),
        target_files(ENABLED_OUTPUTS),
        "results/findings.md",
        "results/explorer",


# Everything above lives as long as this process: Python's cyclic garbage collector need not scan it again
# while Snakemake builds the DAG, which at paper scale saves a share of every dry run
# (docs/performance.md §2.1).
gc.freeze()
