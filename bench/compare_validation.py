"""Validation of the model registry and the workflow configuration: saltbench's blocks (jsonschema over the
generated schema) against pydantic 2 configured strictly, side by side (docs/architecture.md §5.1).

The pydantic models are translated from the blocks' own annotations, field by field, so that both systems
know the same rules: ``BaseModel`` subclasses with ``ConfigDict(extra="forbid", allow_inf_nan=False)``;
integers, booleans and strings ``Strict()`` (``Annotated[int, Strict(), Ge(0)]``), floats ``Strict()``
(which takes an integer and makes it a float); each JSON-schema bound of a field (``minimum``,
``exclusiveMaximum``, ``pattern``, ``minItems``, ``minProperties``) as its ``annotated_types`` / ``Field``
constraint; a tagged union discriminated by ``kind``; the registries' names (tasks, confidence functions,
backends) as ``Literal``; an optional key as a default that an explicit ``null`` does not meet, unless the
block allows null. ``uniqueItems`` has no pydantic constraint and is left out. A registry entry's
``backend_options`` are validated after the entry by the model of its backend's options block (an
``after`` model validator), as the registry validates them by the block. Other checks between keys
(``ModelSpec.check``) are code in either system and are not compared.

Measures, in one run: (1) the import cost of each system in fresh interpreters (alternating, minimum of
``--rounds``); (2) building the validators (saltbench: the jsonschema validator of the generated schema;
pydantic: the models' core schemas, which a port would build when its modules are imported); (3) validating
and building ``config/models.yaml`` and ``config/paper.yaml`` (warm, minimum of repeats); (4) the message each
system gives for the same mistakes; (5) the JSON schema each generates. Run::

    python bench/compare_validation.py --rounds 7
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml

from saltbench.core.blocks import Block, Keywords, Ref, field_types, is_block, strip_annotations, tag

logger = logging.getLogger("compare_validation")

REPO = Path(__file__).resolve().parents[1]
_BENCH = "import sys; sys.path.insert(0, 'bench'); import compare_validation as c"
STARTS = {
    "python alone": "pass",
    "import jsonschema": "import jsonschema",
    "import pydantic": "import pydantic",
    "import this script (yaml, the blocks)": _BENCH,
    "saltbench: both validators ready": f"{_BENCH}; c.saltbench_systems()",
    "pydantic: both models ready": f"{_BENCH}; c.pydantic_systems()",
}
"""Start-up, each in a fresh interpreter: the libraries alone, then from nothing to validators that can
answer (the registry's blocks imported, both schemas generated and compiled; or the models translated and
their core schemas built, which a port would do when its modules are imported)."""
HUB = {"kind": "hub", "id": "a/b"}
REGISTRY_MISTAKES: dict[str, dict[str, Any]] = {
    "unknown key": {"source": HUB, "temperature": 0.0},
    "unknown source kind": {"source": {"kind": "s3", "path": "x"}},
    "key of another kind": {"source": {"kind": "local", "path": "p", "id": "x"}},
    "string for a boolean": {"source": HUB, "reasoning": "yes"},
    "float for an integer": {"source": HUB, "max_context": 2.0},
    "boolean for an integer": {"source": HUB, "resources": {"gpus": True}},
    "below a bound": {"source": HUB, "resources": {"gpus": -1}},
    "outside (0, 1]": {"source": HUB, "backend": "vllm", "backend_options": {"gpu_memory_utilization": 1.5}},
    "string for a number": {"source": HUB, "max_new_tokens_scale": "0.5"},
    "NaN": {"source": HUB, "max_new_tokens_scale": float("nan")},
    "not a URL": {
        "source": {"kind": "api", "base_url": "localhost:8000/v1", "model": "m"},
        "backend": "openai",
    },
    "unknown backend": {"source": HUB, "backend": "tgi"},
    "null where not allowed": {"source": HUB, "dtype": None},
    "missing source": {"dtype": "float32"},
}
"""One registry entry each (``models: {m: ...}``)."""
CONFIG_MISTAKES: dict[str, dict[str, Any]] = {
    "task written twice": {"tasks": ["dna", "dna"]},
    "unknown task": {"tasks": ["dna", "chess"]},
    "float for an integer": {"seed": 1.0},
    "null for an optional key": {"datasets": {"source": "generated", "paper_path": None}},
    "a count of zero": {"datasets": {"source": "generated", "n_samples": {"dna": 0}}},
}
"""Changes to ``config/config.yaml`` (a top-level key replaced)."""


# -- pydantic models translated from the blocks ---------------------------------------------------------


def _constraints(keywords: Mapping[str, Any]) -> list[Any]:
    """The ``annotated_types`` / ``Field`` constraints of JSON-schema ``keywords`` (``uniqueItems`` has
    none)."""
    import annotated_types as at
    import pydantic

    words: dict[str, Callable[[Any], Any]] = {
        "minimum": at.Ge,
        "maximum": at.Le,
        "exclusiveMinimum": at.Gt,
        "exclusiveMaximum": at.Lt,
        "minItems": at.MinLen,
        "maxItems": at.MaxLen,
        "minProperties": at.MinLen,
        "pattern": lambda p: pydantic.Field(pattern=p),
    }
    return [words[k](v) for k, v in keywords.items() if k in words]


def _scalar(tp: Any) -> Any:
    """A strict scalar type: ``int``, ``bool``, ``str`` and ``float`` refuse other types (a float takes an
    integer, as a float)."""
    import pydantic

    return Annotated[tp, pydantic.Strict()] if tp in (int, bool, str, float) else tp


def _union(members: tuple[Any, ...], names: Mapping[str, list[str]], models: dict[type, Any]) -> Any:
    """A union; of tagged blocks, discriminated by ``kind``."""
    import pydantic

    translated = tuple(pydantic_type(m, names, models) for m in members)
    if all(is_block(strip_annotations(m)) and tag(strip_annotations(m)) for m in members):
        return Annotated[Union[translated], pydantic.Field(discriminator="kind")]  # noqa: UP007 - runtime union
    return Union[translated]  # noqa: UP007 - a runtime union


def pydantic_type(tp: Any, names: Mapping[str, list[str]], models: dict[type, Any]) -> Any:
    """The pydantic type of block annotation ``tp``; ``names``: the registries' names by ``$defs`` entry;
    ``models``: the models translated so far, by block."""
    origin = get_origin(tp)
    if origin is Annotated:
        base, *metadata = get_args(tp)
        refs = [m.name for m in metadata if isinstance(m, Ref)]
        if refs:
            return Literal[tuple(names[refs[0]])]
        keywords = [dict(m.items) for m in metadata if isinstance(m, Keywords)]
        bounds = [c for k in keywords for c in _constraints(k)]
        inner = pydantic_type(base, names, models)
        return Annotated[(inner, *bounds)] if bounds else inner
    if origin in (Union, UnionType):
        return _union(get_args(tp), names, models)
    if origin is tuple:
        args = tuple(pydantic_type(a, names, models) for a in get_args(tp) if a is not Ellipsis)
        return tuple[args[0], ...] if Ellipsis in get_args(tp) else tuple[args]  # type: ignore[valid-type]
    if origin in (Mapping, dict):
        key, value = get_args(tp)
        return dict[pydantic_type(key, names, models), pydantic_type(value, names, models)]  # type: ignore[misc]
    if is_block(tp):
        return pydantic_model(tp, names, models)
    return _scalar(tp)


def _field(f: Any, tp: Any, names: Mapping[str, list[str]], models: dict[type, Any]) -> tuple[Any, Any]:
    """``(annotation, FieldInfo)`` of block field ``f`` typed ``tp`` for ``pydantic.create_model``."""
    import dataclasses

    import pydantic

    meta = f.metadata
    if meta["kind"] == "optional" and not meta["nullable"] and get_origin(tp) in (Union, UnionType):
        tp = Union[tuple(m for m in get_args(tp) if m is not NoneType)]  # noqa: UP007 - null refused
    annotation = pydantic_type(tp, names, models)
    bounds = _constraints(meta["keywords"])
    if bounds:
        annotation = Annotated[(annotation, *bounds)]
    extra: dict[str, Any] = {"description": meta["description"] or None}
    if meta["kind"] == "required":
        return annotation, pydantic.Field(**extra)
    if meta["kind"] == "optional":
        return annotation, pydantic.Field(default=None, **extra)  # a default is not validated: null is
    if f.default_factory is not dataclasses.MISSING:
        made = f.default_factory()
        if isinstance(made, Block):
            return annotation, pydantic.Field(default_factory=models[type(made)], **extra)
        return annotation, pydantic.Field(default_factory=lambda: copy.deepcopy(made), **extra)
    return annotation, pydantic.Field(default=f.default, **extra)


def pydantic_model(cls: type[Block], names: Mapping[str, list[str]], models: dict[type, Any]) -> Any:
    """The ``pydantic.BaseModel`` of block ``cls`` (its mapping key left out), cached in ``models``."""
    import dataclasses

    import pydantic

    if cls not in models:
        config = pydantic.ConfigDict(extra="forbid", allow_inf_nan=False)
        hints = field_types(cls)
        keyed = [f for f in dataclasses.fields(cls) if f.metadata.get("kind") != "mapping_key"]
        for f in keyed:  # nested blocks first: their models are default factories here
            for member in (strip_annotations(hints[f.name]), *get_args(strip_annotations(hints[f.name]))):
                if is_block(strip_annotations(member)):
                    pydantic_model(strip_annotations(member), names, models)
        fields: dict[str, Any] = {f.name: _field(f, hints[f.name], names, models) for f in keyed}
        models[cls] = pydantic.create_model(cls.__name__, __config__=config, **fields)
    return models[cls]


def registry_names() -> dict[str, list[str]]:
    """The registries' names by ``$defs`` entry, as the generated schemas list them."""
    from saltbench.config.workflow import registry_defs

    return {name: list(entry["enum"]) for name, entry in registry_defs().items()}


# -- the two systems side by side -------------------------------------------------------------------------


def pydantic_error(model: Any, data: Any) -> str:
    """pydantic's errors of ``data``, one ``key.path: message`` each, or ``(accepted)``."""
    import pydantic

    try:
        model.model_validate(data)
    except pydantic.ValidationError as exc:
        return pydantic_error_text(exc)
    return "(accepted)"


def pydantic_error_text(exc: Any) -> str:
    """A pydantic ``ValidationError`` as ``key.path: message`` per error, joined by `` / ``."""
    return " / ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())


def saltbench_error(check: Callable[[Any], object], data: Any) -> str:
    """saltbench's error of ``data`` (the message of the ``ValueError`` that ``check`` raises)."""
    try:
        check(data)
    except ValueError as exc:
        return str(exc)
    return "(accepted)"


def start_seconds(rounds: int) -> dict[str, float]:
    """Least wall time of ``python -c statement`` per :data:`STARTS` entry, in alternating fresh
    interpreters."""
    best = {name: float("inf") for name in STARTS}
    for _ in range(rounds):
        for name, statement in STARTS.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", statement], check=True, cwd=REPO)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def least(fn: Callable[[], object], repeats: int) -> float:
    """Least wall seconds of ``fn()`` over ``repeats`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def schema_words(schema: Mapping[str, Any]) -> str:
    """A JSON schema in numbers: its size, ``$defs`` and the keywords that structure it."""
    text = json.dumps(schema)
    counts = {
        k: text.count(f'"{k}"') for k in ("anyOf", "oneOf", "allOf", "if", "$ref", "description", "default")
    }
    shown = ", ".join(f"{k} {v}" for k, v in counts.items())
    return f"{len(text) / 1024:.1f} KiB, {len(schema.get('$defs', {}))} $defs, {shown}"


def saltbench_systems() -> dict[str, Callable[[Any], object]]:
    """saltbench's validate-and-build of a registry and of a configuration (schema only, as the pydantic
    models know it), each with its validator built here."""
    from saltbench.config import ConfigError, WorkflowConfig
    from saltbench.config.workflow import json_schema
    from saltbench.core.blocks import build, check_schema, strict_validator
    from saltbench.inference.backends import backend_names
    from saltbench.inference.registry import ModelRegistry, RegistryError, registry_schema

    schema = registry_schema()
    schema["$defs"]["backend"]["enum"] = list(backend_names())
    registry, config = strict_validator(schema), strict_validator(json_schema())

    def read_registry(data: Any) -> object:
        check_schema(registry, data, error=RegistryError, what="model registry")
        return build(ModelRegistry, data)

    def read_config(data: Any) -> object:
        check_schema(config, data, error=ConfigError, what="configuration")
        return build(WorkflowConfig, data)

    return {"registry": read_registry, "config": read_config}


def with_backend_options(names: Mapping[str, list[str]], models: dict[type, Any]) -> Any:
    """The model of a registry entry whose ``backend_options`` are validated, as the registry does, by the
    model of the options block that the entry's backend declares (none: no options allowed); cached in
    ``models`` as the entry's model, so the registry's model uses it."""
    import pydantic

    from saltbench.inference.backends import options_class
    from saltbench.inference.registry import ModelSpec

    def options(entry: Any) -> Any:
        block = options_class(entry.backend)
        if block is None and entry.backend_options:
            raise ValueError(f"backend_options: backend {entry.backend!r} takes no options")
        if block is not None:
            try:
                pydantic_model(block, names, models).model_validate(entry.backend_options)
            except pydantic.ValidationError as exc:
                raise ValueError(f"backend_options: {pydantic_error_text(exc)}") from None
        return entry

    checked: Any = pydantic.model_validator(mode="after")(options)
    base = pydantic_model(ModelSpec, names, models)
    models[ModelSpec] = pydantic.create_model("ModelSpec", __base__=base, __validators__={"options": checked})
    return models[ModelSpec]


def pydantic_systems() -> dict[str, Any]:
    """The pydantic models of a registry file and of a configuration file (module docstring)."""
    from saltbench.config import WorkflowConfig
    from saltbench.inference.registry import ModelRegistry

    names, models = registry_names(), dict[type, Any]()
    with_backend_options(names, models)
    return {
        "registry": pydantic_model(ModelRegistry, names, models),
        "config": pydantic_model(WorkflowConfig, names, models),
    }


def timings(files: Mapping[str, Any], rounds: int) -> None:
    """Log the start-up and validation times of both systems."""
    starts = start_seconds(rounds)
    for name, seconds in starts.items():
        extra = seconds - starts["python alone"]
        logger.info("%-40s %6.1f ms (+%5.1f ms over python alone)", name, 1e3 * seconds, 1e3 * extra)
    ours, theirs = saltbench_systems(), pydantic_systems()
    for what, data in files.items():
        mine = least(functools.partial(ours[what], data), rounds)
        other = least(functools.partial(theirs[what].model_validate, data), rounds)
        logger.info(
            "validate and build %-20s saltbench %7.2f ms, pydantic %7.3f ms", what, 1e3 * mine, 1e3 * other
        )


def messages(files: Mapping[str, Any]) -> None:
    """Log each system's answer to each mistake, and what each keeps of values written as integers."""
    from saltbench.config import resolve_config
    from saltbench.inference.registry import parse_model_registry

    theirs = pydantic_systems()
    rows = [("registry", m, {"models": {"m": e}}) for m, e in REGISTRY_MISTAKES.items()]
    rows += [("config", m, {**files["config"], **change}) for m, change in CONFIG_MISTAKES.items()]
    checks = {"registry": parse_model_registry, "config": lambda d: resolve_config(d, check_models=False)}
    for what, mistake, data in rows:
        logger.info(
            "\n%s: %s\n  saltbench: %s\n  pydantic:  %s",
            what,
            mistake,
            saltbench_error(checks[what], data),
            pydantic_error(theirs[what], data),
        )
    written = {**files["config"], "inference": {"cot_factor": 2}}
    ours = resolve_config(written, check_models=False).to_dict()["inference"]["cot_factor"]
    other = theirs["config"].model_validate(written).model_dump()["inference"]["cot_factor"]
    logger.info("\ninference.cot_factor: 2 is kept as %r by saltbench, %r by pydantic", ours, other)


def schemas() -> None:
    """Log the size and structure of the JSON schema each system generates for each file."""
    from saltbench.config.workflow import json_schema
    from saltbench.inference.registry import registry_schema

    theirs = pydantic_systems()
    for what, mine in (("registry", registry_schema()), ("config", json_schema())):
        logger.info("schema of the %s, saltbench: %s", what, schema_words(mine))
        logger.info("schema of the %s, pydantic:  %s", what, schema_words(theirs[what].model_json_schema()))


def main() -> None:
    """Measure and log (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    files = {
        "registry": yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8")),
        "config": yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8")),
    }
    files["paper config"] = yaml.safe_load((REPO / "config" / "paper.yaml").read_text(encoding="utf-8"))
    timings({"registry": files["registry"], "config": files["paper config"]}, args.rounds)
    messages(files)
    schemas()


if __name__ == "__main__":
    main()
