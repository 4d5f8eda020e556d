"""saltbench: the SALT study as a Snakemake workflow (see README.md).

Stages, one rules/*.smk each: datasets -> inference -> scoring -> metrics (+ training, interventions)
-> analysis tables -> figures. The config is validated against the package's JSON schema before any
job runs (saltbench.config.validate_config); a wrong key or value stops the run with a message naming it.
"""

from saltbench.config import validate_config


configfile: "config/config.yaml"


config.update(validate_config(config))

TASKS = config["tasks"]
STYLES = config["prompt_styles"]
MODELS = config["models"]


include: "rules/common.smk"
include: "rules/datasets.smk"
include: "rules/inference.smk"
include: "rules/scoring.smk"


rule all:
    default_target: True
    input:
        expand("data/datasets/{task}.parquet", task=TASKS),
        expand("results/metrics/{model}/{style}/{task}.parquet", model=MODELS, style=STYLES, task=TASKS),
