"""The machinery of the typed configuration: annotated field types, ``setting`` / ``required`` / ``optional``
fields, the :class:`Block` base class, building typed blocks from validated data (:func:`build`) and the
JSON schema of a block (:func:`object_schema`).

Each block of a config file (``config/*.yaml``) is a frozen dataclass in its own module of this package
(``datasets``, ``inference``, ``scoring`` with ``metrics``, ``training``, ``interventions``, ``analysis``);
:class:`saltbench.config.workflow.WorkflowConfig` is the whole file. A field's default is the key's only
default, and its ``setting`` / ``required`` / ``optional`` call carries the description and the JSON-schema
bounds. The closed vocabularies of the values are :mod:`saltbench.core.vocabulary`'s ``Literal`` types.

**Why dataclasses** (not pydantic 2 or attrs). (1) Import cost: the Snakefile imports the configuration on
every invocation, dry runs included; this package needs only the standard library, where pydantic costs about
30 ms to import plus the building of a core schema per model class, and attrs would be one more dependency
for what dataclasses do. (2) The schema: generated here with exactly the keywords that the validator and the
error messages rely on (``"type": ["integer", "null", "object"]`` for ``datasets.n_samples``, strict
integers, ``additionalProperties: false``, no ``title`` noise), where pydantic's generator emits ``anyOf``
and ``$defs`` per model and its validator has its own error texts. (3) Values stay as written: ``2`` under a
float key stays ``2`` (provenance hashes and Snakemake's recorded params do not change), where pydantic
coerces in lax mode and rejects lists for tuples in strict mode. See docs/architecture.md §5.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, NoneType, UnionType
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

from saltbench.core.vocabulary import FAMILY_NAME_REGEX, MODEL_NAME_REGEX

MAX_SAMPLES_PER_TASK = 1_000_000
"""Upper bound of ``datasets.n_samples`` (per task; also the schema's ``maximum``). The paper uses at most
400 samples per task; a count of 10**12 made building the DAG run out of memory (16 GB)."""

SCHEMA_ID = "https://json-schema.org/draft/2020-12/schema"


class ConfigError(ValueError):
    """The workflow configuration is invalid; the message names the key."""


# -- JSON-schema annotations of types ------------------------------------------------------------------


@dataclass(frozen=True, init=False)
class Keywords:
    """JSON-schema keywords of an annotated type: ``Annotated[int, Keywords(minimum=1)]`` (hashable, as
    ``typing`` needs for the members of a union)."""

    items: tuple[tuple[str, Any], ...]

    def __init__(self, **keywords: Any) -> None:
        """``keywords``: JSON-schema keyword -> value."""
        object.__setattr__(self, "items", tuple(keywords.items()))


@dataclass(frozen=True)
class Ref:
    """A reference to a definition of the schema's ``$defs`` (``Annotated[str, Ref("task")]``)."""

    name: str


TaskSlug = Annotated[str, Ref("task")]
"""A task slug: the schema's ``$defs/task``, whose names are ``saltbench.tasks.TASK_SLUGS``."""
ConfidenceFunctionName = Annotated[str, Ref("confidence_function")]
"""A confidence function: the schema's ``$defs/confidence_function``, the names of
``saltbench.confidence.CONFIDENCE_FUNCTIONS``."""
FamilyName = Annotated[str, Keywords(pattern=f"^{FAMILY_NAME_REGEX}$")]
"""A trained family's name (:data:`saltbench.core.vocabulary.FAMILY_NAME_REGEX`)."""
ModelName = Annotated[str, Keywords(pattern=f"^{MODEL_NAME_REGEX}$")]
"""A registry model name (:data:`saltbench.core.vocabulary.MODEL_NAME_REGEX`)."""
PositiveInt = Annotated[int, Keywords(minimum=1)]
Count = Annotated[int, Keywords(minimum=0)]
SampleCount = Annotated[int, Keywords(minimum=1, maximum=MAX_SAMPLES_PER_TASK)]
OpenUnit = Annotated[float, Keywords(exclusiveMinimum=0, exclusiveMaximum=1)]
"""A number in (0, 1)."""
Fraction = Annotated[float, Keywords(exclusiveMinimum=0, maximum=1)]
"""A number in (0, 1]."""
CheckpointName = Annotated[str, Keywords(pattern=r"^[^/.][^/]*$")]
"""A plain directory name (no ``/``, not starting with ``.``)."""


# -- fields ---------------------------------------------------------------------------------------------


def setting(default: Any, description: str = "", **keywords: Any) -> Any:
    """A key with a default: ``default`` (a block class or a ``dict`` is made fresh per instance).

    ``keywords`` are JSON-schema keywords added to the key's schema (``minItems``, ``uniqueItems``, ...).
    """
    meta = {"description": description, "keywords": keywords, "kind": "default"}
    if isinstance(default, type) or isinstance(default, dict):
        factory: Callable[[], Any] = (
            default if isinstance(default, type) else functools.partial(dict, default)
        )
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def required(description: str = "", **keywords: Any) -> Any:
    """A key every config file must give (the schema's ``required``)."""
    return field(metadata={"description": description, "keywords": keywords, "kind": "required"})


def optional(description: str = "", *, nullable: bool = False, **keywords: Any) -> Any:
    """A key without a default: ``None`` when not given, and then absent from the resolved mapping.

    ``nullable``: ``null`` is also a value one may write (the annotation's ``None`` is then in the schema).
    """
    meta = {"description": description, "keywords": keywords, "kind": "optional", "nullable": nullable}
    return field(default=None, metadata=meta)


B = TypeVar("B", bound="Block")


@dataclass(frozen=True, kw_only=True)
class Block:
    """A block of the configuration: a frozen dataclass whose fields are the block's keys."""

    _keys: ClassVar[tuple[str, ...]] = ()
    """The keys as written, in their order (set by :func:`build`; empty for an instance made in code)."""

    def to_dict(self) -> dict[str, Any]:
        """The plain resolved mapping: the keys as written first (in their order), then the defaulted ones
        (in field order); an :func:`optional` key not given is left out. Tuples become lists."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        order = [k for k in self._keys if k in fields] + [k for k in fields if k not in self._keys]
        out: dict[str, Any] = {}
        for name in order:
            value = getattr(self, name)
            if fields[name].metadata.get("kind") == "optional" and value is None and name not in self._keys:
                continue
            out[name] = plain(value)
        return out


def plain(value: Any) -> Any:
    """``value`` as plain data: blocks as mappings (:meth:`Block.to_dict`), tuples as lists, copies."""
    if isinstance(value, Block):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return value


# -- building typed values from validated data --------------------------------------------------------------


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved field types of ``cls`` (``Annotated`` kept), cached."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls, include_extras=True)
    return _HINTS[cls]


def _is_block(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Block)


def _strip(tp: Any) -> Any:
    """``tp`` without ``Annotated``."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _member_for(members: tuple[Any, ...], value: Any) -> Any:
    """The member of a union that ``value`` (validated) is an instance of."""
    for member in members:
        base = _strip(member)
        origin = get_origin(base)
        if value is None and base is NoneType:
            return member
        if isinstance(value, Mapping) and (_is_block(base) or origin in (Mapping, dict)):
            return member
        if isinstance(value, (list, tuple)) and origin is tuple:
            return member
        if value is not None and not isinstance(value, (Mapping, list, tuple)) and base is not NoneType:
            if origin is None or origin is Literal:
                return member
    raise TypeError(f"{value!r} matches none of {members}")  # unreachable for validated data


def _build(tp: Any, value: Any) -> Any:
    tp = _strip(tp)
    origin = get_origin(tp)
    if _is_block(tp):
        hints = _hints(tp)
        kwargs = {
            f.name: _build(hints[f.name], value[f.name]) for f in dataclasses.fields(tp) if f.name in value
        }
        block = tp(**kwargs)
        object.__setattr__(block, "_keys", tuple(value))
        return block
    if origin in (Union, UnionType):
        return _build(_member_for(get_args(tp), value), value)
    if origin is tuple:
        args = get_args(tp)
        items = [args[0]] * len(value) if len(args) == 2 and args[1] is Ellipsis else list(args)
        return tuple(_build(item, v) for item, v in zip(items, value))
    if origin in (Mapping, dict):
        value_type = get_args(tp)[1]
        return MappingProxyType({k: _build(value_type, v) for k, v in value.items()})
    return copy.deepcopy(value)  # scalars and free-form data (generator parameters), as written


def build(cls: type[B], data: Mapping[str, Any]) -> B:
    """The block ``cls`` from ``data`` that the schema has validated: defaults filled in, lists as tuples,
    mappings read-only, numbers as written. Use :func:`saltbench.config.resolve_config` for unchecked data."""
    built: B = _build(cls, data)
    return built


# -- the JSON schema ----------------------------------------------------------------------------------------

_SCALARS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string", NoneType: "null"}


def _union_schema(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema for a union: a ``type`` list when every member has its own type (keywords merged, each
    applying to its type only), an ``enum`` with ``null`` for a ``Literal`` or ``None``, else ``anyOf``."""
    types = [p.get("type") for p in parts]
    if all(isinstance(t, str) for t in types) and len(set(types)) == len(types):
        merged: dict[str, Any] = {"type": types}
        for part in parts:
            for key, value in part.items():
                if key != "type" and merged.setdefault(key, value) != value:
                    return {"anyOf": parts}
        return merged
    others = [p for p in parts if p != {"type": "null"}]
    if len(others) < len(parts) and all(set(p) <= {"enum", "const"} for p in others):
        names = [v for p in others for v in (p["enum"] if "enum" in p else [p["const"]])]
        return {"enum": [*names, None]}
    return {"anyOf": parts}


def _type_schema(tp: Any) -> dict[str, Any]:
    origin = get_origin(tp)
    if tp is Any:
        return {}
    if origin is Annotated:
        base, *metadata = get_args(tp)
        refs = [m for m in metadata if isinstance(m, Ref)]
        if refs:
            return {"$ref": f"#/$defs/{refs[0].name}"}
        annotated = _type_schema(base)
        for m in metadata:
            if isinstance(m, Keywords):
                annotated.update(m.items)
        return annotated
    if origin is Literal:
        choices = list(get_args(tp))
        return {"const": choices[0]} if len(choices) == 1 else {"enum": choices}
    if origin in (Union, UnionType):
        return _union_schema([_type_schema(member) for member in get_args(tp)])
    if origin is tuple:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0])}
        items = [_type_schema(a) for a in args]
        if any(item != items[0] for item in items):
            raise TypeError(f"{tp}: a fixed-length tuple needs one item type")
        return {"type": "array", "items": items[0], "minItems": len(args), "maxItems": len(args)}
    if origin in (Mapping, dict):
        key_type, value_type = get_args(tp)
        schema: dict[str, Any] = {"type": "object"}
        values = _type_schema(value_type)
        if values:
            schema["additionalProperties"] = values
        names = _type_schema(key_type)
        if names != {"type": "string"}:
            schema["propertyNames"] = names
        return schema
    if _is_block(tp):
        return object_schema(tp)
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    raise TypeError(f"no JSON schema for type {tp!r}")


def _without_none(tp: Any) -> Any:
    if get_origin(tp) in (Union, UnionType):
        members = tuple(m for m in get_args(tp) if m is not NoneType)
        return members[0] if len(members) == 1 else Union[members]  # noqa: UP007 - a runtime union
    return tp


def _field_schema(f: dataclasses.Field[Any], tp: Any) -> dict[str, Any]:
    meta = f.metadata
    if meta["kind"] == "optional" and not meta["nullable"]:
        tp = _without_none(tp)
    schema = _type_schema(tp)
    schema.update(meta["keywords"])
    if meta["kind"] == "default":
        factory: Any = f.default_factory
        default = f.default if f.default is not dataclasses.MISSING else factory()
        schema["default"] = {} if isinstance(default, Block) else plain(default)
    if meta["description"]:
        schema["description"] = meta["description"]
    return schema


def object_schema(cls: type[Block]) -> dict[str, Any]:
    hints = _hints(cls)
    fields = dataclasses.fields(cls)
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    needed = [f.name for f in fields if f.metadata["kind"] == "required"]
    if needed:
        schema["required"] = needed
    schema["properties"] = {f.name: _field_schema(f, hints[f.name]) for f in fields}
    return schema
