"""Stage 6: analysis tables results/tables/{name}.{parquet,csv,tex} (saltbench.analysis), and the findings.

One rule table_{name} per declaration of saltbench.workflow.tables.TABLE_RULES: its inputs (the file sets
below, other tables), its parameters (config keys, read with OPTION), its resources; the script
workflow_scripts/make_table.py runs the declared function. A declaration with per-model parts also gets
rule table_{name}_part: one job per model (its files of TABLE_MODEL_FILES) writing
results/tables/parts/{name}/{model}.parquet (workflow_scripts/make_table_part.py), which table_{name} merges. Needs from the Snakefile: TASKS, STYLES, MODELS,
INTERVENTION_MODELS, INTERVENTION_TASKS (empty lists when config `interventions` is disabled),
SIMULATED_MODELS (the run's simulated models: the recovery table and the findings read them), DRAW_MODELS
(the models whose draws the run asks for: generation health and the estimator cost count them),
SECOND_PASS_MODELS (the models the second pass asks: the same two tables count their replies) and, when there
are simulated models, REGISTRY. Options: config `analysis` (keys and defaults:
saltbench.workflow.analysis_rules.ANALYSIS_DEFAULTS), `metrics`, `scoring` and `seed`. Each table's CSV goes
into the HTML report with its caption.
"""

from saltbench.workflow.analysis_rules import (
    analysis_options,
    figure_outputs,
    table_outputs,
)
from saltbench.workflow.rule_support import simulation_parameters
from saltbench.workflow.table_rules import (
    option_lookup,
    part_inputs,
    part_params,
    part_path,
    rule_inputs,
    rule_params,
)
from saltbench.workflow.tables import TABLE_RULES

ANALYSIS = analysis_options(config)
ANALYSIS_METRICS = expand(
    "results/metrics/{model}/{style}/{task}.parquet", model=MODELS, style=STYLES, task=TASKS
)
ANALYSIS_UNITS = expand("data/units/{model}/{style}/{task}.parquet", model=MODELS, style=STYLES, task=TASKS)
ANALYSIS_INTERVENTIONS = expand(
    "data/interventions/{model}/{task}.parquet", model=INTERVENTION_MODELS, task=INTERVENTION_TASKS
)
# the file sets a table rule's inputs name (saltbench.workflow.table_rules.RuleInput)
TABLE_FILES = {
    "metrics": ANALYSIS_METRICS,
    "units": ANALYSIS_UNITS,
    "interventions": ANALYSIS_INTERVENTIONS,
    "datasets": expand("data/datasets/{task}.parquet", task=TASKS),
    "simulated_units": expand(
        "data/units/{model}/{style}/{task}.parquet", model=SIMULATED_MODELS, style=STYLES, task=TASKS
    ),
    "registry": config["model_registry"],
    # what the estimators beyond a single pass cost (table estimator_cost)
    "draws": expand("data/draws/{model}/{style}/{task}.parquet", model=DRAW_MODELS, style=STYLES, task=TASKS),
    "second_pass": expand(
        "data/second_pass/{model}/{style}/{task}.parquet", model=SECOND_PASS_MODELS, style=STYLES, task=TASKS
    ),
}
# one model's files, for the per-model parts of a table (saltbench.workflow.table_rules.ModelParts)
TABLE_MODEL_FILES = {
    "units": expand("data/units/{{model}}/{style}/{task}.parquet", style=STYLES, task=TASKS),
    "metrics": expand("results/metrics/{{model}}/{style}/{task}.parquet", style=STYLES, task=TASKS),
}
# what an option reads: a config key (`analysis` with its defaults filled in) or a fact of the run (run.*)
OPTION = option_lookup(
    {**config, "analysis": ANALYSIS},
    {
        "models": MODELS,
        "styles": STYLES,
        "tasks": TASKS,
        "intervention_models": INTERVENTION_MODELS,
        "intervention_tasks": INTERVENTION_TASKS,
        "interventions": bool(INTERVENTION_MODELS),
        "draws": bool(DRAW_MODELS),
        # what generation health counts the draws with (docs/reasoning.md §3); nothing without draws
        "draw_counts": (
            {
                "models": DRAW_MODELS,
                "n": config["inference"]["samples"]["n"],
                "keyword_filter": config["scoring"]["keyword_filter"],
                "fence_rule": config["scoring"]["fence_rule"],
            }
            if DRAW_MODELS
            else {"models": [], "n": 0}
        ),
        "simulation": [simulation_parameters(REGISTRY[m]) for m in SIMULATED_MODELS],
    },
)


for table in TABLE_RULES:

    rule:
        name:
            f"table_{table.name}"
        localrule: table.local
        input:
            **rule_inputs(table, TABLE_FILES, OPTION),
        output:
            **{
                name: path
                for out in table.outputs
                for name, path in table_outputs(out.name, out.formats, report, out.prefix).items()
            },
        params:
            **rule_params(table, OPTION),
        log:
            f"logs/tables/{table.name}.log",
        benchmark:
            f"benchmarks/tables/{table.name}.tsv"
        resources:
            mem_mb=table.mem_mb,
            runtime=table.runtime,
        conda:
            "../environment.yml"
        script:
            "../workflow_scripts/make_table.py"

    workflow.get_rule(f"table_{table.name}").docstring = table.doc
    if table.parts is not None:

        rule:
            name:
                f"table_{table.name}_part"
            input:
                **part_inputs(table, TABLE_MODEL_FILES),
            output:
                parquet=part_path(table.name, "{model}"),
            params:
                **part_params(table, OPTION),
            log:
                f"logs/tables/{table.name}_part/{{model}}.log",
            benchmark:
                f"benchmarks/tables/{table.name}_part/{{model}}.tsv"
            resources:
                mem_mb=table.parts.mem_mb,
                runtime=table.parts.runtime,
            conda:
                "../environment.yml"
            script:
                "../workflow_scripts/make_table_part.py"

        workflow.get_rule(f"table_{table.name}_part").docstring = f"One model's part of: {table.doc}"


rule findings:
    """results/findings.md: one short section per question of the study, every number from a table."""
    localrule: True
    input:
        generation_health="results/tables/generation_health.parquet",
        eligibility="results/tables/eligibility.parquet",
        dominance="results/tables/dominance.parquet",
        frontier="results/tables/frontier.parquet",
        granularity="results/tables/granularity.parquet",
        reasoning_tradeoff="results/tables/reasoning_tradeoff.parquet",
        label_noise="results/tables/label_noise.parquet",
        interventions=["results/tables/interventions.parquet"] if INTERVENTION_MODELS else [],
        interventions_by_placement=(
            ["results/tables/interventions_by_placement.parquet"] if INTERVENTION_MODELS else []
        ),
        recovery=["results/tables/recovery.parquet"] if SIMULATED_MODELS else [],
        # imported models: their import records say which were scored without log-probabilities
        imports=expand("data/generations/{model}/import.json", model=IMPORTED_MODELS),
    output:
        report("results/findings.md", caption="../report/findings.rst", category="Findings"),
    params:
        min_answered=ANALYSIS["min_answered_share"],
        min_units=ANALYSIS["min_units"],
    log:
        "logs/tables/findings.log",
    benchmark:
        "benchmarks/tables/findings.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/findings.py"
