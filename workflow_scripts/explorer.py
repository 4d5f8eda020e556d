"""Rules explorer_model and explorer: one model's data files (saltbench.explorer.build_model_part), then
results/explorer/ (index.html and its data) from every model's part and the interventions of the run
(saltbench.explorer.build_index)."""

from saltbench.explorer import CellFiles, ExplorerOptions, build_index, build_model_part
from saltbench.io import provenance
from saltbench.workflow.rule_support import setup_logging


def model_part(snakemake) -> None:
    """Rule explorer_model: the chunks of one model, numbered from params.first_id."""
    p, model = snakemake.params, snakemake.wildcards.model
    keys = [(s, t) for s in p.styles for t in p.tasks]  # the order of the rule's expand
    files = (snakemake.input.units, snakemake.input.generations, snakemake.input.metrics)
    if any(len(f) != len(keys) for f in files):
        raise ValueError(f"{[len(f) for f in files]} units, generations, metrics files for {len(keys)} cells")
    cells = [CellFiles(model, s, t, u, g, m) for (s, t), u, g, m in zip(keys, *files)]
    for cell in cells:
        for path in (cell.units, cell.generations, cell.metrics):
            if not str(path).endswith(f"/{cell.model}/{cell.style}/{cell.task}.parquet"):
                raise ValueError(f"{path} is not the file of {cell.model}, {cell.style}, {cell.task}")
    datasets = dict(zip(p.tasks, snakemake.input.datasets))
    options = ExplorerOptions(top_k=p.alternatives, list_size=p.list_size)
    build_model_part(snakemake.output[0], cells, datasets, first_id=p.first_id, options=options)


def index(snakemake) -> None:
    """Rule explorer: the page from every model's part."""
    p = snakemake.params
    options = ExplorerOptions(
        top_k=p.alternatives,
        list_size=p.list_size,
        default_column=f"{p.flavour}.{p.confidence}",
        min_units=p.min_units,
        min_model_units=p.min_model_units,
        eligible_answered_share=p.eligible_answered_share,
        alignment=p.alignment,
    )
    build_index(
        snakemake.output[0],
        list(snakemake.input.parts),
        dict(zip(p.tasks, snakemake.input.datasets)),
        list(snakemake.input.interventions),
        options=options,
        meta=provenance(stage="explorer", rule=snakemake.rule),
    )


def main(snakemake) -> None:
    setup_logging(snakemake)
    (model_part if snakemake.rule == "explorer_model" else index)(snakemake)


main(snakemake)  # noqa: F821
