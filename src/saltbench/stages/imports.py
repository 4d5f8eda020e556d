"""The import stage: generations made elsewhere -> the generations tables of a ``generations`` source
(docs/backends.md §9). What a native model's inference writes, from a file instead of a backend.

:func:`import_generations` reads the file (:func:`saltbench.inference.imports.read_generations_file`), matches
every response to its dataset row and prompt style, refuses the file on the first problem — before anything is
written, so before any downstream job — and converts the responses into one generations table per (style,
task), rows in dataset order, with the contract of :data:`saltbench.core.contracts.GENERATIONS`.

Matching (docs/backends.md §9.5):

* by ``sample_id`` when the response has one (and then its ``prompt``, if given, must be the row's
  instruction in that style, or contain it — a chat template wraps the instruction); its style is the
  response's ``style``, else the style whose instruction the prompt is or contains, else the run's only style;
* else by the SHA-256 digest of its ``prompt``, among the instructions of every dataset row in every prompt
  style (:func:`saltbench.stages.generation.build_prompts` with the run's ``n_shots``): equal text only.

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

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from saltbench.core.vocabulary import STYLES, ImportFormat, ReasoningFormat
from saltbench.inference import TOP_K, records_to_frame
from saltbench.inference.imports import (
    GenerationsFileError,
    ImportedResponse,
    read_generations_file,
    to_record,
)
from saltbench.stages.generation import answered_rows, build_prompts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportResult:
    """The generations tables of an import, by (style, task), and its record (provenance of the file and
    counts: ``source``, ``format``, ``sha256``, ``responses``, ``imported``, ``skipped``,
    ``without_logprobs``, ``errors``)."""

    frames: dict[tuple[str, str], pl.DataFrame]
    record: dict[str, Any] = field(default_factory=dict)


def prompt_digest(prompt: str) -> str:
    """The SHA-256 of a prompt's UTF-8 text (what prompt matching compares).

    >>> prompt_digest("abc")[:16]
    'ba7816bf8f01cfea'
    """
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def _difference(ours: str, theirs: str) -> str:
    """Where the file's prompt ``theirs`` first differs from the row's instruction ``ours``, with a little of
    each from there. A chat template puts text before the instruction, so the instruction is looked for where
    its longest beginning occurs in the prompt (a binary search over prefix lengths, each one ``str.find``);
    the difference is reported at its character in the file's prompt and in the instruction.

    >>> print(_difference("Given DNA = ACG", "<|user|>\\nGiven DNA = ACT<|end|>"))
    first difference at character 23 of the file's prompt (character 14 of the instruction, which starts
    at 9): file 'T<|end|>', dataset 'G'
    """
    low, high = 0, len(ours)  # the longest prefix of ours found in theirs has length in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if ours[:middle] in theirs else (low, middle - 1)
    start = theirs.find(ours[:low]) if low else 0
    at = start + low
    place = f"character {at} of the file's prompt"
    if start:
        place += f" (character {low} of the instruction, which starts at {start})"
    return f"first difference at {place}: file {theirs[at : at + 40]!r}, dataset {ours[low : low + 40]!r}"


@dataclass
class _Rows:
    """The run's dataset rows and their instructions in every prompt style."""

    datasets: Mapping[str, pl.DataFrame]
    n_shots: int | None
    answered: dict[str, int]  # task -> number of rows the run answers
    where: dict[str, tuple[str, int]]  # sample id -> (task, row index)
    instructions: Mapping[tuple[str, str], list[str]]  # (style, task) -> instruction per row
    digests: Mapping[str, tuple[str, str, int]]  # instruction digest -> (style, task, row index)

    @classmethod
    def build(
        cls, datasets: Mapping[str, pl.DataFrame], n_shots: int | None, max_samples: int | None
    ) -> _Rows:
        where: dict[str, tuple[str, int]] = {}
        for task, frame in datasets.items():
            for i, sample_id in enumerate(frame["sample_id"].to_list()):
                if sample_id in where:
                    raise ValueError(
                        f"sample id {sample_id!r} is in the datasets of {where[sample_id][0]} and {task}"
                    )
                where[sample_id] = (task, i)
        instructions: dict[tuple[str, str], list[str]] = {
            (style, task): build_prompts(frame, style, n_shots)
            for style in STYLES
            for task, frame in datasets.items()
        }
        digests = {
            prompt_digest(text): (style, task, i)
            for (style, task), texts in instructions.items()
            for i, text in enumerate(texts)
        }
        answered = {task: answered_rows(frame, max_samples).height for task, frame in datasets.items()}
        return cls(datasets, n_shots, answered, where, instructions, digests)


def _match(
    response: ImportedResponse, rows: _Rows, styles: Sequence[str], refuse: Any
) -> tuple[str, str, int]:
    """The (style, task, row index) of ``response`` (module docstring)."""
    if response.style is not None and response.style not in STYLES:
        raise refuse(f"style {response.style!r} is not a prompt style ({', '.join(STYLES)})")
    if response.sample_id is None:
        found = rows.digests.get(prompt_digest(response.prompt or ""))
        if found is None:
            raise refuse(
                "the prompt matches no dataset row's prompt in any style (compared by digest, so it must be "
                "the instruction as saltbench builds it; give sample_id where a chat template rendered it)"
            )
        if response.style is not None and response.style != found[0]:
            raise refuse(f"style {response.style!r}, but the prompt is the {found[0]} prompt of its row")
        return found
    if response.sample_id not in rows.where:
        tasks = ", ".join(rows.datasets)
        raise refuse(f"sample id {response.sample_id!r} is not in the run's datasets (tasks {tasks})")
    task, i = rows.where[response.sample_id]
    style: str | None = response.style
    if style is None and response.prompt is not None:
        style = next(
            (s for s in STYLES if rows.instructions[(s, task)][i] in response.prompt),
            None,
        )
        if style is None:
            ours = rows.instructions[(styles[0], task)][i]
            where = _difference(ours, response.prompt)
            raise refuse(f"the prompt differs from the row's prompt in every style ({where})")
    if style is None:
        if len(styles) != 1:
            raise refuse(
                f"no style and no prompt, and the run has prompt styles {list(styles)}: give 'style'"
            )
        style = styles[0]
    ours = rows.instructions[(style, task)][i]
    if response.prompt is not None and ours not in response.prompt:
        raise refuse(
            f"the prompt differs from the row's {style} prompt ({_difference(ours, response.prompt)})"
        )
    return style, task, i


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

    Raises:
        GenerationsFileError: the file refused (module docstring), naming it, the place and the reason.
        FileNotFoundError: no file at ``path``.
    """
    responses = read_generations_file(path, format)
    rows = _Rows.build(datasets, n_shots, max_samples)
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
    return ImportResult(frames, record)


def _choose_responses(
    responses: Sequence[ImportedResponse], rows: _Rows, styles: Sequence[str], path: str | Path
) -> tuple[dict[tuple[str, str, int], ImportedResponse], int]:
    """Each response by its (style, task, row index), and how many were skipped (rows the run does not
    answer); refuses a response that matches no row and a second response to one row."""
    chosen: dict[tuple[str, str, int], ImportedResponse] = {}
    skipped = 0
    for response in responses:
        refuse = partial(GenerationsFileError, path, response.where)
        style, task, row_index = _match(response, rows, styles, refuse)
        if style not in styles or row_index >= rows.answered[task]:
            skipped += 1
            continue
        key = (style, task, row_index)
        if key in chosen:
            sample_id = rows.datasets[task]["sample_id"][row_index]
            raise refuse(
                f"a second response to sample {sample_id!r} ({style}); the first is at {chosen[key].where}"
            )
        chosen[key] = response
    return chosen, skipped


def _refuse_unanswered_rows(
    chosen: Mapping[tuple[str, str, int], ImportedResponse],
    rows: _Rows,
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
    rows: _Rows,
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


__all__ = ["ImportResult", "import_generations", "prompt_digest"]
