"""The JSONL generations schema (docs/backends.md §9.2): one JSON object per line, one line per response —
read for an import, written by the export.

Keys (every one but ``text`` optional; an unknown key is refused, naming it):

* identity — ``sample_id`` (the dataset row's id), ``prompt`` (the instruction as saltbench builds it, the
  prompt a chat template made of it, or the authors' prompt) and/or ``input`` (the row's task input);
  ``style`` (``direct``/``cot``); ``task``, ``variant`` and
  ``model`` are written by the export and not read back (the dataset row and the registry name give them);
* ``text`` — the generated text; ``reasoning`` — reasoning returned apart from it (no log-probabilities;
  present but empty or ``null``: the harness returned none, so ``text`` is the final content; absent:
  ``text`` is the output as the model wrote it, reasoning inline);
* ``finish_reason`` — ``eos`` (also ``stop``), ``length`` (also ``max_tokens``) or ``error`` (then ``error``
  says why, and ``text`` is empty); default ``eos``; ``num_prompt_tokens`` (default 0);
* per token — ``tokens`` (texts, joining to ``text``) or ``token_bytes`` (UTF-8 bytes per token, a character
  split over tokens belonging to the one that completes it); ``token_offsets`` (checked: where each token
  starts in ``text``); ``token_ids``; ``logprobs`` (the chosen token's log-probability); ``top_logprobs``
  (its alternatives' log-probabilities, most likely first, any number — the first 20 are kept) with
  ``top_ids`` or ``top_tokens`` naming them; ``entropy`` (nats). A response without ``logprobs`` is scored
  for accuracy only. ``null`` in a number list is NaN ("absent"); ``-Infinity`` is −∞ (Python's ``json``
  writes and reads both);
* ``draws`` — sampled answers to the same prompt (docs/backends.md §9.7): a list of objects, draw 0 first,
  each with the keys of a response but its identity (``text``, ``finish_reason``, ``error``,
  ``num_prompt_tokens``, ``reasoning`` and the per-token keys; ``sample_id``, ``prompt``, ``input``,
  ``style``, ``task``, ``variant``, ``model`` and a nested ``draws`` are refused: a draw answers its line's
  prompt). Read when the run asks for draws (``inference.samples.n > 0``), ignored otherwise.

The export writes every key of a generations table row (:func:`write_jsonl`); reading that file back gives
the same table (:func:`saltbench.stages.imports.import_generations`).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from saltbench.core.contracts import GENERATION_COLUMNS, GENERATION_META
from saltbench.core.vocabulary import FinishReason
from saltbench.inference.imports._response import GenerationsFileError, ImportedResponse

FINISH_ALIASES: Mapping[str, FinishReason] = {
    "eos": "eos",
    "stop": "eos",
    "length": "length",
    "max_tokens": "length",
    "error": "error",
}
"""``finish_reason`` values read, and the generations table's value each stands for."""

STRING_KEYS = ("sample_id", "prompt", "input", "style", "task", "variant", "model", "reasoning", "error")
LIST_KEYS = (
    "tokens",
    "token_bytes",
    "token_offsets",
    "token_ids",
    "logprobs",
    "top_logprobs",
    "top_ids",
    "top_tokens",
    "entropy",
)
SCHEMA_KEYS = frozenset({"text", "finish_reason", "num_prompt_tokens", "draws", *STRING_KEYS, *LIST_KEYS})
"""Every key of the schema (module docstring)."""
IDENTITY_KEYS = ("sample_id", "prompt", "input", "style", "task", "variant", "model")
"""The keys that say which prompt a response answers: a draw has its parent's, never its own."""
DRAW_KEYS = SCHEMA_KEYS - {"draws", *IDENTITY_KEYS}
"""The keys of one entry of ``draws`` (module docstring)."""

EXPORT_COLUMNS: Mapping[str, str] = {
    **{name: name for name in GENERATION_META},
    "text": "text",
    "finish_reason": "finish_reason",
    "error": "error",
    "num_prompt_tokens": "num_prompt_tokens",
    "token_texts": "tokens",
    "token_offsets": "token_offsets",
    "token_ids": "token_ids",
    "chosen_logprob": "logprobs",
    "topk_ids": "top_ids",
    "topk_logprobs": "top_logprobs",
    "entropy": "entropy",
}
"""Generations table column -> JSONL key, in the order the export writes them."""

_FLOAT_LISTS = ("chosen_logprob", "entropy")
_FLOAT_NESTED = ("topk_logprobs",)


def _response(obj: Any, where: str, path: Path, *, draw: bool = False) -> ImportedResponse:
    """One line's response (``draw``: one entry of a line's ``draws``, which has no identity keys)."""

    def refuse(reason: str) -> GenerationsFileError:
        return GenerationsFileError(path, where, reason)

    if not isinstance(obj, dict):
        raise refuse(f"expected a JSON object, got {type(obj).__name__}")
    allowed = DRAW_KEYS if draw else SCHEMA_KEYS
    unknown = set(obj) - allowed
    if unknown:
        whose = "a draw's keys (its prompt is its line's)" if draw else "the schema's keys"
        raise refuse(f"unknown key(s) {sorted(unknown)}; {whose} are {sorted(allowed)}")
    text = obj.get("text")
    if not isinstance(text, str):
        raise refuse(f"'text' must be a string, got {text!r:.60}")
    for key in STRING_KEYS:
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise refuse(f"{key!r} must be a string, got {obj[key]!r:.60}")
    for key in LIST_KEYS:
        if obj.get(key) is not None and not isinstance(obj[key], list):
            raise refuse(f"{key!r} must be a list (one entry per token), got {type(obj[key]).__name__}")
    if not draw and obj.get("sample_id") is None and obj.get("prompt") is None and obj.get("input") is None:
        raise refuse(
            "neither 'sample_id', 'prompt' nor 'input': the response cannot be matched to a dataset row"
        )
    finish = FINISH_ALIASES.get(obj.get("finish_reason", "eos"))
    if finish is None:
        raise refuse(f"finish_reason {obj['finish_reason']!r} is not one of {sorted(FINISH_ALIASES)}")
    n_prompt = obj.get("num_prompt_tokens") or 0
    if isinstance(n_prompt, bool) or not isinstance(n_prompt, int) or n_prompt < 0:
        raise refuse(f"'num_prompt_tokens' must be an integer >= 0, got {n_prompt!r}")
    tokens = _token_texts(obj, refuse)
    return ImportedResponse(
        where=where,
        text=text,
        sample_id=obj.get("sample_id"),
        prompt=obj.get("prompt"),
        style=obj.get("style"),
        finish_reason=finish,
        error=obj.get("error"),
        num_prompt_tokens=n_prompt,
        reasoning="" if "reasoning" in obj and obj["reasoning"] is None else obj.get("reasoning"),
        token_texts=tokens,
        token_ids=obj.get("token_ids"),
        logprobs=obj.get("logprobs"),
        top_logprobs=obj.get("top_logprobs"),
        top_ids=obj.get("top_ids"),
        top_tokens=obj.get("top_tokens"),
        entropy=obj.get("entropy"),
        task_input=obj.get("input"),
        draws=_draws(obj.get("draws"), where, path),
    )


def _token_texts(obj: dict[str, Any], refuse: Callable[[str], GenerationsFileError]) -> list[str] | None:
    """A response's token texts (from ``tokens`` or ``token_bytes``), its offsets and alternatives checked."""
    tokens = obj.get("tokens")
    if obj.get("token_bytes") is not None:
        if tokens is not None:
            raise refuse("both 'tokens' and 'token_bytes': give one of them")
        from saltbench.inference.detokenize import byte_token_texts

        raw = obj["token_bytes"]
        if not all(isinstance(b, list) and all(isinstance(v, int) and 0 <= v < 256 for v in b) for b in raw):
            raise refuse("'token_bytes' must hold one list of byte values (0-255) per token")
        tokens = byte_token_texts(raw, [""] * len(raw))
    if tokens is not None and not all(isinstance(t, str) for t in tokens):
        raise refuse("'tokens' must hold one string per token")
    offsets = obj.get("token_offsets")
    if offsets is not None:
        if tokens is None:
            raise refuse("'token_offsets' without 'tokens'")
        if len(offsets) != len(tokens):
            raise refuse(f"{len(offsets)} token_offsets for {len(tokens)} tokens")
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        wrong = np.flatnonzero(np.asarray(offsets, dtype=np.float64) != np.cumsum(lengths) - lengths)
        if wrong.size:
            i = int(wrong[0])
            start = int(lengths[:i].sum())
            raise refuse(f"token {i} starts at {start} in the text, 'token_offsets' says {offsets[i]!r}")
    for key in ("top_logprobs", "top_ids", "top_tokens"):
        if obj.get(key) is not None and not all(isinstance(row, list) for row in obj[key]):
            raise refuse(f"{key!r} must hold one list of alternatives per token")
    if obj.get("top_ids") is not None and obj.get("top_tokens") is not None:
        raise refuse("both 'top_ids' and 'top_tokens': give one of them")
    return tokens


def _draws(value: Any, where: str, path: Path) -> tuple[ImportedResponse, ...]:
    """The entries of a line's ``draws`` (docs/backends.md §9.7): each a response without identity keys."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise GenerationsFileError(
            path, where, f"'draws' must be a list of objects, got {type(value).__name__}"
        )
    return tuple(_response(entry, f"{where} draw {d}", path, draw=True) for d, entry in enumerate(value))


def read_jsonl(path: str | Path) -> list[ImportedResponse]:
    """Every response of a JSONL file (module docstring); blank lines are skipped.

    Raises:
        GenerationsFileError: a line that is not JSON, not an object, with an unknown key or a value of the
            wrong kind — naming the file, the line and the reason.
    """
    path = Path(path)
    responses = []
    with path.open(encoding="utf-8", newline="\n") as handle:  # lines end at "\n" only
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            text = line.removesuffix("\n")
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise GenerationsFileError(path, f"line {number}", _json_error(exc, text)) from None
            responses.append(_response(obj, f"line {number}", path))
    return responses


def _json_error(exc: json.JSONDecodeError, line: str) -> str:
    """Why a line is not JSON, at its real column (1-based character of the line, without its ``\\n``), with
    the text around it; a line that ends before its object does is called truncated.

    >>> _json_error(json.JSONDecodeError("Expecting ',' delimiter", '{"a": 1', 7), '{"a": 1')
    "not JSON (Expecting ',' delimiter, column 8: the line ends before its object does, truncated?)"
    """
    where = f"{exc.msg}, column {exc.pos + 1}"
    if exc.pos >= len(line.rstrip()):
        return f"not JSON ({where}: the line ends before its object does, truncated?)"
    return f"not JSON ({where}, at {line[max(0, exc.pos - 20) : exc.pos + 20]!r})"


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    return value


def write_jsonl(frame: pl.DataFrame, path: str | Path) -> int:
    """Write a generations table (:data:`saltbench.core.contracts.GENERATIONS` rows) as the JSONL schema;
    returns the number of lines.

    Numbers are written as polars writes them (the shortest text that reads back to the same float32); NaN
    as ``null``. A row holding −∞ is written by Python's ``json`` instead (``-Infinity``), since polars
    writes −∞ as ``null``; so every value reads back exactly.
    """
    missing = [c for c in EXPORT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"not a generations table: columns {missing} are missing")
    types = {**GENERATION_META, **GENERATION_COLUMNS}
    table = frame.select(list(EXPORT_COLUMNS)).cast({c: types[c] for c in EXPORT_COLUMNS})
    infinite = pl.any_horizontal(
        *(pl.col(c).list.eval(pl.element().is_infinite()).list.any() for c in _FLOAT_LISTS),
        *(
            pl.col(c).list.eval(pl.element().list.eval(pl.element().is_infinite()).list.any()).list.any()
            for c in _FLOAT_NESTED
        ),
    )
    rows_with_inf = table.with_row_index("_row").filter(infinite.fill_null(False))["_row"].to_list()
    out = table.rename(dict(EXPORT_COLUMNS))
    buffer = io.BytesIO()
    out.with_columns(
        *(pl.col(EXPORT_COLUMNS[c]).list.eval(pl.element().fill_nan(None)) for c in _FLOAT_LISTS),
        *(
            pl.col(EXPORT_COLUMNS[c]).list.eval(pl.element().list.eval(pl.element().fill_nan(None)))
            for c in _FLOAT_NESTED
        ),
    ).write_ndjson(buffer)
    data = buffer.getvalue()
    if rows_with_inf:
        lines = data.decode("utf-8").split("\n")  # not splitlines(): U+2028 and U+0085 stay raw in JSON
        for row in rows_with_inf:
            lines[row] = json.dumps(_nan_to_none(out.row(row, named=True)), ensure_ascii=False)
        data = "\n".join(lines).encode("utf-8")
    from saltbench.io import write_atomic

    write_atomic(path, data)
    return table.height


__all__ = ["DRAW_KEYS", "EXPORT_COLUMNS", "FINISH_ALIASES", "SCHEMA_KEYS", "read_jsonl", "write_jsonl"]
