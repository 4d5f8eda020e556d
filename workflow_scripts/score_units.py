"""Rule score_units: generations -> one row per response unit with status and confidences."""

import polars as pl

from saltbench.io import provenance, read_provenance, read_table, write_table
from saltbench.rule_support import setup_logging
from saltbench.scoring import score_generations


def main(snakemake) -> None:  # noqa: ANN001 - the object Snakemake injects
    log = setup_logging(snakemake)
    wc, scoring = snakemake.wildcards, snakemake.params.scoring
    generations = read_table(snakemake.input.generations, "generations")
    units = score_generations(
        generations,
        read_table(snakemake.input.dataset, "dataset"),
        wc.task,
        granularities=scoring["granularities"],
        alignment=scoring["alignment"],
        keyword_filter=scoring["keyword_filter"],
        flavours=scoring["flavours"],
        top_k=snakemake.params.top_k,
    )
    units = units.select(
        pl.lit(wc.model).alias("model"),
        pl.lit(wc.style).alias("style"),
        pl.lit(wc.task).alias("task"),
        pl.all(),
    )
    source = read_provenance(snakemake.input.generations)
    write_table(
        units,
        snakemake.output[0],
        provenance(
            stage="units",
            model=wc.model,
            style=wc.style,
            task=wc.task,
            generations_config_hash=source.get("config_hash"),
            scoring=scoring,
        ),
        "units",
    )
    log.info("scored %d units of %d generations -> %s", units.height, generations.height, snakemake.output[0])


main(snakemake)  # noqa: F821
