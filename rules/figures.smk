"""Stage 7: figures figures/{name}.{pdf,png} (saltbench.plotting), each in the HTML report with its caption.

One rule per entry of saltbench.core.outputs.FIGURE_OUTPUTS (rule figure_{name}), drawn from its analysis
table, or from the training logs for training_loss, with the options its declaration reads (OPTION); a figure
drawn from the eligible models only also reads the eligibility table and names what it left out. Needs
from the Snakefile: TRAINED_MODELS (models whose data/models/{name}/train_log.parquet the training stage
writes), and rules/analysis.smk included first (tables, OPTION).
"""

from saltbench.core.outputs import FIGURE_OUTPUTS, option_value

for figure in FIGURE_OUTPUTS:

    rule:
        name:
            f"figure_{figure.name}"
        localrule: True
        input:
            table=(
                [f"results/tables/{figure.table}.parquet"]
                if figure.table
                else expand("data/models/{name}/train_log.parquet", name=TRAINED_MODELS)
            ),
            eligibility=(["results/tables/eligibility.parquet"] if figure.eligible_only else []),
        output:
            **figure_outputs(figure.name, figure.category, report),
        params:
            figure=figure.name,
            options={key: option_value(option, OPTION) for key, option in figure.options.items()},
        log:
            f"logs/figures/{figure.name}.log",
        benchmark:
            f"benchmarks/figures/{figure.name}.tsv"
        resources:
            mem_mb=2000,
            runtime=10,
        conda:
            "../environment.yml"
        script:
            "../workflow_scripts/draw_figure.py"
