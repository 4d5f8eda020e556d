"""Rule explorer: results/explorer/ (index.html and its data) from the units, generations, datasets and
interventions of the run (saltbench.explorer.build_explorer)."""

from saltbench.explorer import CellFiles, ExplorerOptions, build_explorer
from saltbench.io import provenance
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    setup_logging(snakemake)
    p = snakemake.params
    keys = [(m, s, t) for m in p.models for s in p.styles for t in p.tasks]  # the order of the rule's expand
    units, generations = list(snakemake.input.units), list(snakemake.input.generations)
    if len(units) != len(keys) or len(generations) != len(keys):
        raise ValueError(f"{len(units)} units and {len(generations)} generations files for {len(keys)} cells")
    cells = [CellFiles(m, s, t, u, g) for (m, s, t), u, g in zip(keys, units, generations)]
    for cell in cells:
        for path in (cell.units, cell.generations):
            if not str(path).endswith(f"/{cell.model}/{cell.style}/{cell.task}.parquet"):
                raise ValueError(f"{path} is not the file of {cell.model}, {cell.style}, {cell.task}")
    datasets = {t: path for t, path in zip(p.tasks, snakemake.input.datasets)}
    options = ExplorerOptions(
        top_k=p.alternatives,
        list_size=p.list_size,
        default_column=f"{p.flavour}.{p.confidence}",
        min_units=p.min_units,
    )
    build_explorer(
        snakemake.output[0],
        cells,
        datasets,
        list(snakemake.input.interventions),
        options=options,
        meta=provenance(stage="explorer", rule=snakemake.rule),
    )


main(snakemake)  # noqa: F821
