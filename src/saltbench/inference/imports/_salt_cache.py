"""The authors' release's generation cache (docs/backends.md §9.1): a UTF-8 JSON envelope
``{"version": 1, "payload": …}`` whose payload is free-form upstream. Accepted payload layouts:

* a list of results, or ``{"results": [result, …], …}``, or ``{"responses": [result, …], …}`` (the release
  README's example: ``{"model": …, "responses": […]}``) — each result as the authors' vLLM wrapper returns
  it: ``prompt``, ``text`` (stripped by the wrapper), ``logprobs`` (below), ``input`` (the caller's input),
  and optionally ``sample_id``, ``style``, ``finish_reason`` (``stop``/``eos``/``length``; default ``eos`` —
  the wrapper does not record it);
* parallel lists ``{"prompts" and/or "inputs": […], "texts" or "responses": […], "logprobs": […]}``,
  optionally ``"sample_ids"``, ``"styles"`` (other keys, e.g. ``model``, are ignored).

``input`` — whatever the caller passed — identifies the row when it is a string (the task input), a mapping
with ``sample_id``, or with ``input`` or ``text`` (the task input; ``task`` narrows it: a slug, a display name
or an upstream class name such as ``DNAProblem``), or a ``[text, subject]`` pair (the authors' Words input).

``logprobs`` of a result is ``null`` (no log-probabilities: accuracy only) or one entry per generated
position in a shape the authors' normaliser accepts (SALT_FACTS §5.1 in the references), the generated token
first:

* ``{token_string: logprob, …}`` — the JSON-friendly form of the release's README;
* ``{token_id: {"logprob": …, "decoded_token": …}, …}`` — a serialised vLLM ``Logprob``: the token text is
  ``decoded_token`` when it is a string (``""`` too: vLLM decodes an end-of-sequence token to nothing), else
  ``token``, else the key;
* ``{token_id: [logprob, token], …}`` — a pair per candidate (the text ``token``, else the key);
* a list of ``[logprob, token]`` pairs — read with their texts (upstream reads a list element by element
  and loses them);
* a bare number, or a list of numbers — log-probabilities without token texts (below).

Positions with no candidates (``{}``, ``null``) are dropped, as upstream. The token texts must join to the
text, up to the whitespace the wrapper stripped (the table keeps the unstripped text). A result whose tokens
cannot be placed in the text — a position without token texts, or texts taken from the keys (token ids) that
do not join to it — is imported **without log-probabilities** (accuracy only, as upstream, whose alignment
finds nothing in such tokens), counted, and named in one warning; texts given explicitly that do not join
to the text are refused. Token ids are negative string ids (the ``openai`` backend's rule); the
full-vocabulary entropy is NaN.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from saltbench.inference.imports._jsonl import FINISH_ALIASES
from saltbench.inference.imports._response import GenerationsFileError, ImportedResponse

log = logging.getLogger(__name__)

CACHE_VERSION = 1
"""The envelope's ``version`` (SALT_FACTS §7.4 in the references; docs/backends.md §9.1)."""


Candidate = tuple[str | None, float]
"""One candidate token of a position: its text (``None``: unknown) and its log-probability."""

Position = tuple[list[Candidate], bool]
"""A position's candidates, generated token first, and whether the generated token's text is the mapping's
key standing in for it (a token id, when no text was given)."""

_NUMBERS = (float, int)
"""The types of a JSON number (``bool`` is a type of its own)."""


def _is_pair(value: Any) -> bool:
    """``[logprob, token]`` (the token a string or ``null``)."""
    return (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and type(value[0]) in _NUMBERS
        and (value[1] is None or isinstance(value[1], str))
    )


def _keyed(key: str, value: Any) -> tuple[str, float, bool] | None:
    """(text, log-probability, text is the key) of one ``{key: value}`` entry of a position (``None``: a
    shape not accepted)."""
    if type(value) in _NUMBERS:
        return key, float(value), False
    if isinstance(value, Mapping) and type(value.get("logprob")) in _NUMBERS:
        for name in ("decoded_token", "token"):
            if isinstance(value.get(name), str):
                return value[name], float(value["logprob"]), False
        return key, float(value["logprob"]), True
    if _is_pair(value):
        return (key, float(value[0]), True) if value[1] is None else (value[1], float(value[0]), False)
    return None


def _candidates(position: Any, index: int, refuse: Any) -> Position:
    """The candidates of one position, generated token first (module docstring)."""
    if position is None:
        return [], False
    if type(position) in _NUMBERS:
        return [(None, float(position))], False
    if isinstance(position, Mapping):
        if all(type(v) in _NUMBERS for v in position.values()):  # {token: logprob}: the common case, fast
            return [(key, float(v)) for key, v in position.items()], False
        found = [_keyed(key, value) for key, value in position.items()]
        if None in found:
            key = next(k for k, c in zip(position, found) if c is None)
            raise refuse(
                f"logprobs position {index}: the value for {key!r} is neither a log-probability, "
                f"{{logprob, decoded_token}} nor [logprob, token]: {position[key]!r:.80}"
            )
        keyed = [c for c in found if c is not None]
        return [(text, logprob) for text, logprob, _ in keyed], keyed[0][2]
    if isinstance(position, list):
        if all(type(v) in _NUMBERS for v in position):
            return [(None, float(v)) for v in position], False
        if all(_is_pair(v) for v in position):
            return [(v[1], float(v[0])) for v in position], False
        raise refuse(
            f"logprobs position {index}: a list that is neither log-probabilities nor [logprob, token] "
            f"pairs: {position!r:.80}"
        )
    raise refuse(f"logprobs position {index}: unsupported shape {type(position).__name__}")


def _task_input(source: Any, refuse: Any) -> tuple[str | None, str | None, str | None]:
    """(sample id, task input, task name) from a result's ``input`` (module docstring)."""
    if source is None:
        return None, None, None
    if isinstance(source, str):
        return None, source, None
    if isinstance(source, Mapping):
        text = source.get("input", source.get("text"))
        values = (source.get("sample_id"), text, source.get("task"))
        for name, value in zip(("input.sample_id", "input.input", "input.task"), values):
            if value is not None and not isinstance(value, str):
                raise refuse(f"{name!r} must be a string, got {value!r:.60}")
        return values
    if isinstance(source, (list, tuple)) and len(source) == 2 and isinstance(source[0], str):
        return None, source[0], None  # the authors' Words input: (text, subject)
    raise refuse(f"'input' must be a string, a mapping or a [text, subject] pair, got {source!r:.60}")


def _result(result: Any, where: str, path: Path) -> ImportedResponse:
    def refuse(reason: str) -> GenerationsFileError:
        return GenerationsFileError(path, where, reason)

    if not isinstance(result, Mapping):
        raise refuse(f"expected a result object, got {type(result).__name__}")
    text = result.get("text")
    if not isinstance(text, str):
        raise refuse(f"'text' must be a string, got {text!r:.60}")
    given_id, task_input, input_task = _task_input(result.get("input"), refuse)
    sample_id = result.get("sample_id", given_id)
    prompt = result.get("prompt")
    for key, value in (("sample_id", sample_id), ("prompt", prompt), ("style", result.get("style"))):
        if value is not None and not isinstance(value, str):
            raise refuse(f"{key!r} must be a string, got {value!r:.60}")
    if sample_id is None and prompt is None and task_input is None:
        raise refuse(
            "neither a sample id, a prompt nor an input: the result cannot be matched to a dataset row"
        )
    finish = FINISH_ALIASES.get(result.get("finish_reason") or "eos")
    if finish is None:
        raise refuse(f"finish_reason {result['finish_reason']!r} is not one of {sorted(FINISH_ALIASES)}")
    base = ImportedResponse(
        where,
        text,
        sample_id,
        prompt,
        result.get("style"),
        finish,
        task_input=task_input,
        input_task=input_task,
    )
    raw = result.get("logprobs")
    if raw is None:
        return base
    if not isinstance(raw, list):
        raise refuse(f"'logprobs' must be null or a list of positions, got {type(raw).__name__}")
    positions = [c for i, p in enumerate(raw) if (c := _candidates(p, i, refuse))[0]]
    return _with_tokens(base, positions, refuse)


def _with_tokens(base: ImportedResponse, positions: Sequence[Position], refuse: Any) -> ImportedResponse:
    """``base`` with the tokens of its positions — or as it is (no log-probabilities) when their texts are
    unknown or, taken from the keys, do not join to the text; refused when given texts do not join to it."""
    texts = [candidates[0][0] for candidates, _ in positions]
    joined = "".join(t for t in texts if t is not None)
    if None in texts or (joined != base.text and joined.strip() != base.text):
        if None in texts or any(from_key for _, from_key in positions):
            return base  # token texts unknown: scored for accuracy only (module docstring)
        raise refuse(f"the token texts join to {joined[:60]!r}…, the text is {base.text[:60]!r}…")
    return replace(
        base,
        text=joined,
        token_texts=[t or "" for t in texts],
        logprobs=[candidates[0][1] for candidates, _ in positions],
        top_logprobs=[[logprob for _, logprob in candidates] for candidates, _ in positions],
        top_tokens=[[text or "" for text, _ in candidates] for candidates, _ in positions],
    )


_PARALLEL = {
    "prompt": "prompts",
    "logprobs": "logprobs",
    "sample_id": "sample_ids",
    "style": "styles",
    "input": "inputs",
}
"""Result key -> the parallel list that holds it (the text's list is ``texts`` or ``responses``)."""


def _parallel(payload: Mapping[str, Any], path: Path) -> list[tuple[str, Any]]:
    """The results of the parallel-lists layout (module docstring); lists of different lengths refused."""
    texts_key = "texts" if "texts" in payload else "responses"
    present = {"text": texts_key, **{key: name for key, name in _PARALLEL.items() if name in payload}}
    lengths = {name: len(payload[name]) for name in present.values() if isinstance(payload[name], list)}
    if set(lengths) != set(present.values()) or len(set(lengths.values())) != 1:
        raise GenerationsFileError(
            path, "payload", f"parallel lists of different lengths or kinds: {lengths}"
        )
    n = next(iter(lengths.values()))
    rows = [{key: payload[name][i] for key, name in present.items()} for i in range(n)]
    return [(f"payload.{texts_key}[{i}]", row) for i, row in enumerate(rows)]


def _results(payload: Any, path: Path) -> list[tuple[str, Any]]:
    """(place, result) of every result of a payload layout (module docstring)."""
    if isinstance(payload, list):
        return [(f"payload[{i}]", r) for i, r in enumerate(payload)]
    if isinstance(payload, Mapping):
        for key in ("results", "responses"):
            listed = payload.get(key)
            if isinstance(listed, list) and listed and all(isinstance(r, Mapping) for r in listed):
                return [(f"payload.{key}[{i}]", r) for i, r in enumerate(listed)]
        if ({"prompts", "inputs"} & set(payload)) and ({"texts", "responses"} & set(payload)):
            return _parallel(payload, path)
    kind = (
        f"a mapping with keys {sorted(payload)[:8]}"
        if isinstance(payload, Mapping)
        else type(payload).__name__
    )
    raise GenerationsFileError(
        path,
        "payload",
        f"layout not accepted ({kind}): expected a list of results, {{'results': [...]}} or {{'responses': "
        "[...]}} of result objects, or parallel lists 'prompts' and/or 'inputs' + 'texts'/'responses' "
        "(+ 'logprobs', 'sample_ids', 'styles') — docs/backends.md §9.1",
    )


def read_salt_cache(path: str | Path) -> list[ImportedResponse]:
    """Every result of the authors' cache file ``path`` (module docstring); one warning names the results
    whose log-probabilities could not be placed in their text (imported without them).

    Raises:
        FileNotFoundError: no file at ``path``.
        GenerationsFileError: not JSON, not the envelope (``version`` other than 1), a layout or a
            log-probability shape that is not accepted — naming the file, the record and the reason.
    """
    path = Path(path)
    try:
        envelope = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise GenerationsFileError(path, where, f"not JSON ({exc.msg})") from None
    if not isinstance(envelope, Mapping) or "payload" not in envelope:
        raise GenerationsFileError(
            path, "", "not a generation cache: expected {'version': 1, 'payload': ...}"
        )
    if envelope.get("version") != CACHE_VERSION:
        raise GenerationsFileError(
            path, "version", f"cache version {envelope.get('version')!r}, only {CACHE_VERSION} is read"
        )
    results = _results(envelope["payload"], path)
    responses = [_result(result, where, path) for where, result in results]
    dropped = [
        response.where
        for (_, result), response in zip(results, responses)
        if result.get("logprobs") is not None and response.logprobs is None
    ]
    if dropped:
        log.warning(
            "%s: %d of %d results have log-probabilities whose token texts are unknown (bare numbers, or "
            "token ids without decoded text): imported without log-probabilities, accuracy only (e.g. %s)",
            path,
            len(dropped),
            len(responses),
            ", ".join(dropped[:3]),
        )
    return responses


__all__ = ["CACHE_VERSION", "read_salt_cache"]
