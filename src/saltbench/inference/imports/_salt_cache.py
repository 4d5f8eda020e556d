"""The authors' release's generation cache (docs/backends.md §9.1): a UTF-8 JSON envelope
``{"version": 1, "payload": …}`` whose payload is free-form upstream. Accepted payload layouts:

* a list of results, or ``{"results": [result, …], …}`` — each result as the authors' vLLM wrapper returns
  it: ``prompt``, ``text`` (stripped by the wrapper), ``logprobs`` (below), ``input`` (the caller's input;
  a mapping with ``sample_id`` identifies the row), and optionally ``sample_id``, ``style``,
  ``finish_reason`` (``stop``/``eos``/``length``; default ``eos`` — the wrapper does not record it);
* parallel lists ``{"prompts": […], "texts" or "responses": […], "logprobs": […]}``, optionally
  ``"sample_ids"``, ``"styles"``, ``"inputs"`` (other keys, e.g. ``model``, are ignored).

``logprobs`` of a result is ``null`` (no log-probabilities: accuracy only) or one entry per generated
position in the shapes the authors' normaliser accepts, the generated token first:

* ``{token_string: logprob, …}`` — the JSON-friendly form of the release's README;
* ``{token_id: {"logprob": …, "decoded_token": …}, …}`` — a serialised vLLM ``Logprob`` (the token text is
  ``decoded_token``, else ``token``, else the key).

Positions with no candidates are dropped, as upstream. Refused by name: a bare number per position (its
token text is unknown, so the tokens cannot be placed in the text) and a list per position (upstream reads
it element by element and loses the token texts). The token texts must join to the text, up to the
whitespace the wrapper stripped (the table keeps the unstripped text). Token ids are negative string ids (the
``openai`` backend's rule); the full-vocabulary entropy is NaN.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from numbers import Real
from pathlib import Path
from typing import Any

from saltbench.inference.imports._jsonl import FINISH_ALIASES
from saltbench.inference.imports._response import GenerationsFileError, ImportedResponse

CACHE_VERSION = 1
"""The envelope's ``version`` (SALT_FACTS §7.4 in the references; docs/backends.md §9.1)."""


def _candidates(position: Any, index: int, refuse: Any) -> list[tuple[str, float]]:
    """The (token text, log-probability) candidates of one position, generated token first."""
    if isinstance(position, Mapping):
        values = list(position.values())
        if all(isinstance(v, Real) and not isinstance(v, bool) for v in values):
            return [(str(key) if key else "", float(v)) for key, v in position.items()]
        if all(isinstance(v, Mapping) and isinstance(v.get("logprob"), Real) for v in values):
            return [
                (str(v.get("decoded_token") or v.get("token") or key), float(v["logprob"]))
                for key, v in position.items()
            ]
        raise refuse(
            f"logprobs position {index}: a mapping that is neither {{token: logprob}} nor "
            "{token_id: {logprob, decoded_token}}"
        )
    if isinstance(position, Real) and not isinstance(position, bool):
        raise refuse(
            f"logprobs position {index}: a bare log-probability (shape 'number'): its token text is unknown, "
            "so the tokens cannot be placed in the text"
        )
    if isinstance(position, list):
        raise refuse(
            f"logprobs position {index}: a list (shape 'list per position'): the authors' normaliser reads "
            "it element by element and loses the token texts"
        )
    raise refuse(f"logprobs position {index}: unsupported shape {type(position).__name__}")


def _result(result: Any, where: str, path: Path) -> ImportedResponse:
    def refuse(reason: str) -> GenerationsFileError:
        return GenerationsFileError(path, where, reason)

    if not isinstance(result, Mapping):
        raise refuse(f"expected a result object, got {type(result).__name__}")
    text = result.get("text")
    if not isinstance(text, str):
        raise refuse(f"'text' must be a string, got {text!r:.60}")
    sample_id = result.get("sample_id")
    source = result.get("input")
    if sample_id is None and isinstance(source, Mapping):
        sample_id = source.get("sample_id")
    prompt = result.get("prompt")
    for key, value in (("sample_id", sample_id), ("prompt", prompt), ("style", result.get("style"))):
        if value is not None and not isinstance(value, str):
            raise refuse(f"{key!r} must be a string, got {value!r:.60}")
    if sample_id is None and prompt is None:
        raise refuse("neither a sample id nor a prompt: the result cannot be matched to a dataset row")
    finish = FINISH_ALIASES.get(result.get("finish_reason") or "eos")
    if finish is None:
        raise refuse(f"finish_reason {result['finish_reason']!r} is not one of {sorted(FINISH_ALIASES)}")
    raw = result.get("logprobs")
    if raw is None:
        return ImportedResponse(where, text, sample_id, prompt, result.get("style"), finish)
    if not isinstance(raw, list):
        raise refuse(f"'logprobs' must be null or a list of positions, got {type(raw).__name__}")
    positions = [c for i, p in enumerate(raw) if (c := _candidates(p, i, refuse))]
    tokens = [c[0][0] for c in positions]
    joined = "".join(tokens)
    if joined != text and joined.strip() != text:
        raise refuse(f"the token texts join to {joined[:60]!r}…, the text is {text[:60]!r}…")
    return ImportedResponse(
        where,
        joined,
        sample_id,
        prompt,
        result.get("style"),
        finish,
        token_texts=tokens,
        logprobs=[c[0][1] for c in positions],
        top_logprobs=[[lp for _, lp in c] for c in positions],
        top_tokens=[[t for t, _ in c] for c in positions],
    )


def _results(payload: Any, path: Path) -> list[tuple[str, Any]]:
    """(place, result) of every result of a payload layout (module docstring)."""
    if isinstance(payload, list):
        return [(f"payload[{i}]", r) for i, r in enumerate(payload)]
    if isinstance(payload, Mapping) and isinstance(payload.get("results"), list):
        return [(f"payload.results[{i}]", r) for i, r in enumerate(payload["results"])]
    if isinstance(payload, Mapping) and "prompts" in payload and ({"texts", "responses"} & set(payload)):
        texts_key = "texts" if "texts" in payload else "responses"
        columns = {
            "prompt": "prompts",
            "text": texts_key,
            "logprobs": "logprobs",
            "sample_id": "sample_ids",
            "style": "styles",
            "input": "inputs",
        }
        present = {key: name for key, name in columns.items() if name in payload}
        lengths = {name: len(payload[name]) for name in present.values() if isinstance(payload[name], list)}
        if set(lengths) != set(present.values()) or len(set(lengths.values())) != 1:
            raise GenerationsFileError(
                path, "payload", f"parallel lists of different lengths or kinds: {lengths}"
            )
        n = next(iter(lengths.values()))
        rows = [{key: payload[name][i] for key, name in present.items()} for i in range(n)]
        return [(f"payload.{texts_key}[{i}]", row) for i, row in enumerate(rows)]
    kind = (
        f"a mapping with keys {sorted(payload)[:8]}"
        if isinstance(payload, Mapping)
        else type(payload).__name__
    )
    raise GenerationsFileError(
        path,
        "payload",
        f"layout not accepted ({kind}): expected a list of results, {{'results': [...]}}, or parallel lists "
        "'prompts' + 'texts'/'responses' (+ 'logprobs', 'sample_ids', 'styles') — docs/backends.md §9.1",
    )


def read_salt_cache(path: str | Path) -> list[ImportedResponse]:
    """Every result of the authors' cache file ``path`` (module docstring).

    Raises:
        FileNotFoundError: no file at ``path``.
        GenerationsFileError: not JSON, not the envelope (``version`` other than 1), a layout or a
            log-probability shape that is not accepted — naming the file, the record and the reason.
    """
    path = Path(path)
    try:
        envelope = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise GenerationsFileError(path, f"line {exc.lineno}", f"not JSON ({exc.msg})") from None
    if not isinstance(envelope, Mapping) or "payload" not in envelope:
        raise GenerationsFileError(
            path, "", "not a generation cache: expected {'version': 1, 'payload': ...}"
        )
    if envelope.get("version") != CACHE_VERSION:
        raise GenerationsFileError(
            path, "version", f"cache version {envelope.get('version')!r}, only {CACHE_VERSION} is read"
        )
    return [_result(result, where, path) for where, result in _results(envelope["payload"], path)]


__all__ = ["CACHE_VERSION", "read_salt_cache"]
