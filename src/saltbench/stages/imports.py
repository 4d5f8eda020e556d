"""The import stage: generations made elsewhere -> the generations tables of a ``generations`` source
(docs/backends.md §9). What a native model's inference writes, from a file instead of a backend.

:func:`import_generations` reads the file (:func:`saltbench.inference.imports.read_generations_file`), matches
every response to its dataset row and prompt style, refuses the file on the first problem — before anything is
written, so before any downstream job — and converts the responses into one generations table per (style,
task), rows in dataset order, with the contract of :data:`saltbench.core.contracts.GENERATIONS`.

Matching (docs/backends.md §9.5; :mod:`saltbench.stages._matching`): by ``sample_id``; else by the digest of
its ``prompt`` among the run's instructions; else by the few-shot block and test block its prompt holds (the
part saltbench's prompts and the authors' share word for word: a chat-wrapped instruction of ours, or the
authors' own prompt) and/or its task ``input``. Its style is the response's, else the style whose
instruction the prompt holds, else the run's only style. Responses to identical rows are assigned in file
order.

Refused, naming the file, the place (line, record, sample) and the reason: an unknown sample id, a prompt that
matches no row, a prompt that differs from its row's, a style that contradicts the prompt, two responses for
one (style, row) (both places named), a row the run answers that no response covers (the style, task and
first ids named), and a file whose every answered response is an error row (a failed evaluation; some error
rows are imported, with a warning). Responses for rows the run does not answer — a style it does not use,
rows beyond ``inference.max_samples`` — are skipped and counted.

The import record (:class:`ImportResult`) states the file's SHA-256, its format, the counts, and how many
responses carry no log-probabilities (scored for accuracy only; the findings page names the model).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from saltbench.core.contracts import GENERATION_META
from saltbench.core.vocabulary import ImportFormat, ReasoningFormat
from saltbench.inference import TOP_K, records_to_frame
from saltbench.inference.imports import (
    GenerationsFileError,
    ImportedResponse,
    read_generations_file,
    to_record,
)
from saltbench.stages._matching import DatasetRows, match, prompt_digest, resolve_style

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportResult:
    """The generations tables of an import, by (style, task), and its record (provenance of the file and
    counts: ``source``, ``format``, ``sha256``, ``responses``, ``imported``, ``skipped``,
    ``without_logprobs``, ``errors``)."""

    frames: dict[tuple[str, str], pl.DataFrame]
    record: dict[str, Any] = field(default_factory=dict)
    draws: dict[tuple[str, str], pl.DataFrame] = field(default_factory=dict)
    """The draws tables by (style, task) when the run asks for draws (docs/backends.md §9.7), else empty."""


def import_generations(
    path: str | Path,
    format: ImportFormat,
    datasets: Mapping[str, pl.DataFrame],
    *,
    model_name: str,
    styles: Sequence[str],
    n_shots: int | None,
    max_samples: int | None = None,
    reasoning: ReasoningFormat | None = None,
    top_k: int = TOP_K,
    n_draws: int = 0,
) -> ImportResult:
    """The generations tables of ``model_name`` from the file ``path`` (module docstring).

    Args:
        path, format: the file and its format (the registry's ``source.path`` and ``source.format``).
        datasets: every task's dataset frame, by task slug (the run's tasks).
        model_name: the registry name (the ``model`` column).
        styles: the run's prompt styles; n_shots: its ``datasets.n_shots`` (the instructions compared).
        max_samples: the run answers the first ``max_samples`` rows of each task (``None``: all).
        reasoning: the model's ``reasoning_format`` (reasoning returned apart is put back in it).
        top_k: alternatives kept per token.
        n_draws: the draws the run asks per prompt (``inference.samples.n``; 0: none): each response's first
            ``n_draws`` draws become the draws tables (:func:`draws_frame`).

    Raises:
        GenerationsFileError: the file refused (module docstring), naming it, the place and the reason.
        FileNotFoundError: no file at ``path``.
    """
    responses = read_generations_file(path, format)
    rows = DatasetRows.build(datasets, n_shots, max_samples)
    chosen, skipped = _choose_responses(responses, rows, styles, path)
    _refuse_unanswered_rows(chosen, rows, styles, path)
    _refuse_only_errors(chosen, path)
    frames = {
        (style, task): _generations_frame(
            chosen, rows, style, task, model_name=model_name, path=path, top_k=top_k, reasoning=reasoning
        )
        for style in styles
        for task in datasets
    }
    record = _import_record(path, format, model_name, len(responses), chosen, skipped)
    if not n_draws:
        return ImportResult(frames, record)
    draws = {
        key: draws_frame(
            frame, chosen, rows, key, n_draws=n_draws, path=path, top_k=top_k, reasoning=reasoning
        )
        for key, frame in frames.items()
    }
    record["draws"] = sum(frame.height for frame in draws.values())
    if not record["draws"]:
        log.warning(
            "%s: the run asks for %d draws per prompt but %s carries none: the model's draws tables are "
            "empty and its consistency columns NaN (docs/backends.md §9.7)",
            model_name,
            n_draws,
            path,
        )
    return ImportResult(frames, record, draws)


def draws_frame(
    generations: pl.DataFrame,
    chosen: Mapping[tuple[str, str, int], ImportedResponse],
    rows: DatasetRows,
    key: tuple[str, str],
    *,
    n_draws: int,
    path: str | Path,
    top_k: int,
    reasoning: ReasoningFormat | None,
) -> pl.DataFrame:
    """The draws table of one (style, task) (contract ``draws``): the first ``n_draws`` draws of each response
    of its ``generations`` table, in its row order, with that row's meta columns and ``draw`` 0 … n−1.

    A response to an error row without draws gets ``n_draws`` error rows (its prompt could not run, as a
    backend records it); a file that carries no draws at all gives an empty table. Refused (naming the
    response): a response with fewer draws than ``n_draws`` while the file carries draws.
    """
    style, task = key
    picked = [chosen[(style, task, row_index)] for row_index in range(rows.answered[task])]
    if not any(response.draws for response in chosen.values()):
        picked = []
    records, parents, numbers = [], [], []
    for row_index, response in enumerate(picked):
        for number, drawn in enumerate(_response_draws(response, n_draws, path)):
            records.append(to_record(drawn, path=path, k=top_k, reasoning=reasoning))
            parents.append(row_index)
            numbers.append(number)
    meta = generations.select(*GENERATION_META.keys())[parents]
    columns = {name: meta[name].to_list() for name in GENERATION_META}
    frame = records_to_frame(records, {**columns, "draw": numbers})
    return frame.with_columns(pl.col("draw").cast(pl.Int32)).cast(
        {name: GENERATION_META[name] for name in GENERATION_META}
    )


def _response_draws(response: ImportedResponse, n_draws: int, path: str | Path) -> list[ImportedResponse]:
    """The first ``n_draws`` draws of ``response``; an error row without draws: ``n_draws`` error rows."""
    if response.finish_reason == "error" and not response.draws:
        return [ImportedResponse(response.where, "", finish_reason="error", error=response.error)] * n_draws
    if len(response.draws) < n_draws:
        raise GenerationsFileError(
            path,
            response.where,
            f"{len(response.draws)} draws, the run asks for {n_draws} per prompt (inference.samples.n)",
        )
    return list(response.draws[:n_draws])


def _choose_responses(
    responses: Sequence[ImportedResponse], rows: DatasetRows, styles: Sequence[str], path: str | Path
) -> tuple[dict[tuple[str, str, int], ImportedResponse], int]:
    """Each response by its (style, task, row index), and how many were skipped (rows the run does not
    answer); a response whose candidates are identical rows takes the first one not taken yet (file order).
    Refuses a response that matches no row and one more response than its rows."""
    chosen: dict[tuple[str, str, int], ImportedResponse] = {}
    skipped = 0
    for response in responses:
        refuse = partial(GenerationsFileError, path, response.where)
        found = match(response, rows, refuse)
        style = resolve_style(found, styles, refuse)
        task = found.task
        free = [i for i in found.rows if (style, task, i) not in chosen]
        if not free:
            sample_ids = [rows.datasets[task]["sample_id"][i] for i in found.rows]
            places = ", ".join(chosen[(style, task, i)].where for i in found.rows)
            if len(sample_ids) == 1:
                raise refuse(
                    f"a second response to sample {sample_ids[0]!r} ({style}); the first is at {places}"
                )
            raise refuse(
                f"a response too many for the identical rows {sample_ids} ({style}); they are answered at "
                f"{places}"
            )
        if style not in styles or free[0] >= rows.answered[task]:
            skipped += 1
            continue
        chosen[(style, task, free[0])] = response
    return chosen, skipped


def _refuse_unanswered_rows(
    chosen: Mapping[tuple[str, str, int], ImportedResponse],
    rows: DatasetRows,
    styles: Sequence[str],
    path: str | Path,
) -> None:
    """Refuse the file when a row the run answers, in one of its styles, has no response (first ids named)."""
    for style in styles:
        for task, frame in rows.datasets.items():
            answered = rows.answered[task]
            missing = [
                frame["sample_id"][row_index]
                for row_index in range(answered)
                if (style, task, row_index) not in chosen
            ]
            if missing:
                raise GenerationsFileError(
                    path,
                    "",
                    f"no response to {len(missing)} of the {answered} {task} rows the run answers "
                    f"in the {style} style, e.g. {missing[:5]}",
                )


def _refuse_only_errors(chosen: Mapping[tuple[str, str, int], ImportedResponse], path: str | Path) -> None:
    """Refuse a file whose every response the run answers is an error row (a failed evaluation: nothing to
    score), naming the first error; warn, with the count, when only some are (docs/backends.md §9.5)."""
    errors = [response for response in chosen.values() if response.finish_reason == "error"]
    if not errors:
        return
    first = f"the first, at {errors[0].where}: {str(errors[0].error or 'no message')[:120]!r}"
    if len(errors) == len(chosen):
        raise GenerationsFileError(
            path,
            "",
            f"every one of the {len(chosen)} responses the run answers is an error row ({first}): there is "
            "nothing to score; import the file of a run that succeeded, or leave the model out",
        )
    log.warning(
        "%s: %d of the %d responses the run answers are error rows, scored as wrong (%s)",
        path,
        len(errors),
        len(chosen),
        first,
    )


def _generations_frame(
    chosen: Mapping[tuple[str, str, int], ImportedResponse],
    rows: DatasetRows,
    style: str,
    task: str,
    *,
    model_name: str,
    path: str | Path,
    top_k: int,
    reasoning: ReasoningFormat | None,
) -> pl.DataFrame:
    """The generations table of one (style, task): the chosen responses as records, rows in dataset order,
    a response without a prompt recorded with its row's instruction."""
    frame = rows.datasets[task]
    answered = rows.answered[task]
    picked = [chosen[(style, task, row_index)] for row_index in range(answered)]
    records = [to_record(response, path=path, k=top_k, reasoning=reasoning) for response in picked]
    instructions = rows.instructions[(style, task)]
    columns = {
        "sample_id": frame["sample_id"].head(answered).to_list(),
        "task": frame["task"].head(answered).to_list(),
        "variant": frame["variant"].head(answered).to_list(),
        "model": [model_name] * answered,
        "style": [style] * answered,
        "prompt": [
            response.prompt if response.prompt is not None else instructions[row_index]
            for row_index, response in enumerate(picked)
        ],
    }
    return records_to_frame(records, columns)


def _import_record(
    path: str | Path,
    file_format: ImportFormat,
    model_name: str,
    response_count: int,
    chosen: Mapping[tuple[str, str, int], ImportedResponse],
    skipped: int,
) -> dict[str, Any]:
    """The import record (the file's provenance and the counts), logged in one line."""
    from saltbench.io import file_sha256

    without = sum(not response.has_logprobs for response in chosen.values())
    errors = sum(response.finish_reason == "error" for response in chosen.values())
    record = {
        "source": str(path),
        "format": file_format,
        "sha256": file_sha256(path),
        "responses": response_count,
        "imported": len(chosen),
        "skipped": skipped,
        "without_logprobs": without,
        "errors": errors,
    }
    log.info(
        "%s: %d responses from %s (%s), %d skipped, %d without log-probabilities",
        model_name,
        len(chosen),
        path,
        file_format,
        skipped,
        without,
    )
    return record


__all__ = ["ImportResult", "draws_frame", "import_generations", "prompt_digest"]
