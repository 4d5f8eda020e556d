"""Rule score_units: generations -> one row per response unit with status and confidences, every task."""

import polars as pl

from saltbench.evaluation import merge_vocabularies, token_vocabulary
from saltbench.io import provenance, read_provenance, read_table, write_table
from saltbench.stages.consistency import DRAW_INPUT_COLUMNS, with_draw_consistency
from saltbench.stages.scoring import score_generations
from saltbench.stages.second_pass import join_second_pass
from saltbench.workflow.rule_support import per_task_files, setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    wc, scoring = snakemake.wildcards, snakemake.params.scoring
    asked = list(getattr(snakemake.input, "second_pass", []) or [])
    second_pass = dict(per_task_files(snakemake.params.tasks, asked)) if asked else {}
    files = per_task_files(snakemake.params.tasks, snakemake.input.generations, snakemake.input.datasets)
    # the texts of the token ids the model chose in any task, for topk.ccp's alternatives
    vocabulary = merge_vocabularies(
        [
            token_vocabulary(read_table(path, "generations", ["token_ids", "token_texts"]))
            for _, path, _ in files
        ]
    )
    # the draws of each task, when the run asks for them (the consistency columns)
    drawn = snakemake.input.draws
    draws = dict(per_task_files(snakemake.params.tasks, drawn)) if drawn else {}
    for (task, generations_path, dataset_path), output in zip(files, snakemake.output, strict=True):
        generations = read_table(generations_path, "generations")
        units = score_generations(
            generations,
            read_table(dataset_path, "dataset"),
            task,
            granularities=scoring["granularities"],
            alignment=scoring["alignment"],
            keyword_filter=scoring["keyword_filter"],
            flavours=scoring["flavours"],
            top_k=snakemake.params.top_k,
            functions=scoring["confidence_functions"],
            reasoning=snakemake.params.reasoning,
            fence_rule=scoring["fence_rule"],
            max_new_tokens=snakemake.params.budgets[task],
            vocabulary=vocabulary,
        )
        if second_pass:  # the confidences of the second pass (docs/confidence.md §8)
            answers = read_table(second_pass[task], "second_pass")
            units = join_second_pass(units, answers, snakemake.params.second_pass)
        units = units.select(
            pl.lit(wc.model).alias("model"),
            pl.lit(wc.style).alias("style"),
            pl.lit(task).alias("task"),
            pl.all(),
        )
        if task in draws:
            samples = read_table(draws[task], "draws", DRAW_INPUT_COLUMNS)
            reasoning = snakemake.params.reasoning
            units = with_draw_consistency(units, samples, scoring=scoring, reasoning=reasoning)
        source = read_provenance(generations_path)
        meta = provenance(
            stage="units",
            model=wc.model,
            style=wc.style,
            task=task,
            generations_config_hash=source.get("config_hash"),
            scoring=scoring,
        )
        write_table(units, output, meta, "units")
        counts = units.unique("sample_id")["answer_status"].value_counts(sort=True).to_dicts()
        log.info(
            "scored %d units of %d generations (%s) -> %s", units.height, generations.height, counts, output
        )


main(snakemake)  # noqa: F821
