"""Typed blocks of settings checked against a JSON schema generated from them: the one validation system of
the workflow configuration (:mod:`saltbench.config`) and the model registry
(:mod:`saltbench.inference.registry`), docs/architecture.md §5.

A block is a frozen dataclass (:class:`Block`) whose fields are the keys of a YAML mapping; each field's
``setting`` / ``required`` / ``optional`` call carries the key's description and JSON-schema bounds, and its
default is the key's only default. :func:`object_schema` generates the block's JSON schema (Draft 2020-12,
``additionalProperties: false``, strict integers); :func:`schema_errors` validates data against it with one
readable line per error (the key path, then what is wrong); :func:`build` turns validated data into the
typed block, defaults filled in.

Extensions beyond plain dataclasses:

* **Tagged unions.** A union of blocks that each have a ``kind`` field typed ``Literal["name"]`` is chosen
  by the value's ``kind`` (the schema: ``kind`` one of the names, then the chosen block's own keys), so an
  unknown key is reported against the kind that was written, not against every member.
* **Mapping keys as names.** A field made with :func:`mapping_key` is not a key: when the block is a value
  of a mapping, :func:`build` fills it with that value's key (a model spec's ``name``).
* **Floats as floats.** A block with ``float_values = True`` stores an integer written under a ``float``
  field as a float (``timeout_s: 600`` → ``600.0``); by default values stay as written (``2`` stays ``2``,
  so the configuration's provenance hashes do not change).
* **Keys written.** A block remembers which keys were written, in their order (:attr:`Block.written`):
  :meth:`Block.to_dict` puts them first and keeps a written ``null``, and checks between keys may refuse a
  key's presence. Read from YAML or made in Python with the same keys, a block is the same in all three
  respects, and ``dataclasses.replace`` keeps them.

**Why dataclasses and jsonschema** (not pydantic 2): docs/architecture.md §5.1, measured side by side with
pydantic in strict mode by bench/compare_validation.py. In short: a wash on start-up and on what is refused;
pydantic validates faster and writes terser messages; the blocks keep integers under float keys as written
and list the allowed keys of an unknown one, and a port would restate every block for no new refusal.
jsonschema is imported on first validation, not with this module.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import json
import math
import re
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import InitVar, dataclass, field
from types import NoneType, UnionType
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, Union, get_args, get_origin

from saltbench.core.vocabulary import MODEL_NAME_REGEX

SCHEMA_ID = "https://json-schema.org/draft/2020-12/schema"


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


PositiveInt = Annotated[int, Keywords(minimum=1)]
Count = Annotated[int, Keywords(minimum=0)]
OpenUnit = Annotated[float, Keywords(exclusiveMinimum=0, exclusiveMaximum=1)]
"""A number in (0, 1)."""
Fraction = Annotated[float, Keywords(exclusiveMinimum=0, maximum=1)]
"""A number in (0, 1]."""
ModelName = Annotated[str, Keywords(pattern=f"^{MODEL_NAME_REGEX}$")]
"""A registry model name (:data:`saltbench.core.vocabulary.MODEL_NAME_REGEX`)."""
BackendName = Annotated[str, Ref("backend")]
"""An inference backend: the schema's ``$defs/backend``, the names of
``saltbench.inference.backends.backend_names`` (built-in and installed plugins')."""


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


def mapping_key(description: str = "") -> Any:
    """Not a key: the key under which the block stands in a mapping, filled in by :func:`build` (``""`` for a
    block built alone). Left out of the schema and of :meth:`Block.to_dict`."""
    return field(default="", metadata={"description": description, "kind": "mapping_key"})


def _keyed(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields of ``cls`` that are keys (every field but a :func:`mapping_key`)."""
    return [f for f in dataclasses.fields(cls) if f.metadata.get("kind") != "mapping_key"]


_MAPPING_KEYS: dict[type, frozenset[str]] = {}


def _mapping_keys(cls: type) -> frozenset[str]:
    """The names of the :func:`mapping_key` fields of block ``cls`` (cached): arguments that are not keys
    written."""
    if cls not in _MAPPING_KEYS:
        _MAPPING_KEYS[cls] = frozenset(
            f.name for f in dataclasses.fields(cls) if f.metadata.get("kind") == "mapping_key"
        )
    return _MAPPING_KEYS[cls]


B = TypeVar("B", bound="Block")
K = TypeVar("K")
V = TypeVar("V")


class FrozenMapping(Mapping[K, V], Generic[K, V]):
    """A read-only mapping that survives pickling: the mappings of a built block (``chat_template_kwargs``,
    the registry's ``models``). ``types.MappingProxyType`` cannot be pickled, and Snakemake pickles a rule's
    ``params`` (a model spec) into the job's script, so a block holding one crashed the job before it ran.
    Equal to any mapping with the same items, like a ``dict``."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        """``items``: a mapping or ``(key, value)`` pairs, copied."""
        self._items: dict[K, V] = dict(items)

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"FrozenMapping({self._items!r})"

    def __reduce__(self) -> tuple[type[FrozenMapping[K, V]], tuple[dict[K, V]]]:
        return type(self), (self._items,)


@dataclass(frozen=True, kw_only=True)
class Block:
    """A block of the configuration: a frozen dataclass whose fields are the block's keys.

    It remembers the keys written, in their order (:attr:`written`): a mapping's keys when :func:`build`
    makes it, the keyword arguments given when code does (``ModelSpec(source=..., backend="hf")`` wrote
    ``source`` and ``backend``), the original's under ``dataclasses.replace``. So a block made in code
    serialises (:meth:`to_dict`) and checks (``ModelSpec.check``: keys that may not be written) like the
    same keys read from YAML.
    """

    _keys: InitVar[tuple[str, ...] | None] = None
    """The keys written, when the caller states them (:func:`build`; ``dataclasses.replace`` passes the
    original's, as it passes every init variable that has a default). ``None``: the keyword arguments given.
    Recorded by :meth:`__new__`, which sees every argument; an init variable, so not a field: neither
    ``dataclasses.fields`` nor ``asdict`` nor equality sees it."""
    float_values: ClassVar[bool] = False
    """Store an integer written under a ``float`` field as a float (module docstring)."""

    def __new__(cls: type[B], *args: Any, **kwargs: Any) -> B:
        """A new block that records the keys written (:attr:`_keys`, class docstring)."""
        block = super().__new__(cls)
        stated = kwargs.get("_keys")
        if stated is None:
            stated = [k for k in kwargs if k != "_keys" and k not in _mapping_keys(cls)]
        object.__setattr__(block, "_keys", tuple(stated))
        return block

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own ``__post_init__(self)`` is given the init variable ``_keys`` by the dataclass's
        ``__init__``: it is wrapped to take it (and leave it to :meth:`__new__`)."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__post_init__")
        if own is not None and len(inspect.signature(own).parameters) == 1:

            @functools.wraps(own)
            def post_init(self: Block, _keys: tuple[str, ...] | None = None) -> None:
                own(self)

            cls.__post_init__ = post_init  # type: ignore[attr-defined]

    @property
    def written(self) -> tuple[str, ...]:
        """The keys written, in their order (class docstring); empty for a block made without keywords."""
        keys: tuple[str, ...] = self.__dict__.get("_keys", ())
        return keys

    def to_dict(self) -> dict[str, Any]:
        """The plain resolved mapping: the keys as written first (in their order), then the defaulted ones
        (in field order); an :func:`optional` key not given is left out. Tuples become lists."""
        fields = {f.name: f for f in _keyed(type(self))}
        written = self.written
        order = [k for k in written if k in fields] + [k for k in fields if k not in written]
        out: dict[str, Any] = {}
        for name in order:
            value = getattr(self, name)
            if fields[name].metadata.get("kind") == "optional" and value is None and name not in written:
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


_FIELD_TYPES: dict[type, dict[str, Any]] = {}


def field_types(cls: type) -> dict[str, Any]:
    """The resolved field types of ``cls`` (``Annotated`` kept), cached."""
    if cls not in _FIELD_TYPES:
        _FIELD_TYPES[cls] = typing.get_type_hints(cls, include_extras=True)
    return _FIELD_TYPES[cls]


def is_block(tp: Any) -> bool:
    """Whether ``tp`` is a :class:`Block` class."""
    return isinstance(tp, type) and issubclass(tp, Block)


def strip_annotations(tp: Any) -> Any:
    """``tp`` without ``Annotated``."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def tag(cls: type[Block]) -> str | None:
    """The name a block carries in a tagged union: the one value of its ``kind`` field's ``Literal`` type
    (``None``: no such field)."""
    kind = strip_annotations(field_types(cls).get("kind"))
    choices = get_args(kind) if get_origin(kind) is Literal else ()
    return choices[0] if len(choices) == 1 else None


def _tagged(members: tuple[Any, ...]) -> dict[str, type[Block]] | None:
    """``{tag: block}`` of a union whose members are all tagged blocks (module docstring), else ``None``."""
    blocks = [strip_annotations(m) for m in members]
    if not all(is_block(b) and tag(b) is not None for b in blocks):
        return None
    return {typing.cast(str, tag(b)): b for b in blocks}


def _member_for(members: tuple[Any, ...], value: Any) -> Any:
    """The member of a union that ``value`` (validated) is an instance of (a tagged union's: by ``kind``)."""
    tagged = _tagged(members)
    if tagged is not None:
        return tagged[value["kind"]]
    for member in members:
        base = strip_annotations(member)
        origin = get_origin(base)
        if value is None and base is NoneType:
            return member
        if isinstance(value, Mapping) and (is_block(base) or origin in (Mapping, dict)):
            return member
        if isinstance(value, (list, tuple)) and origin is tuple:
            return member
        if value is not None and not isinstance(value, (Mapping, list, tuple)) and base is not NoneType:
            if origin is None or origin is Literal:
                return member
    raise TypeError(f"{value!r} matches none of {members}")  # unreachable for validated data


def _build(tp: Any, value: Any) -> Any:
    tp = strip_annotations(tp)
    origin = get_origin(tp)
    if is_block(tp):
        hints = field_types(tp)
        kwargs = {f.name: _build(hints[f.name], value[f.name]) for f in _keyed(tp) if f.name in value}
        if tp.float_values:
            kwargs |= {k: float(v) for k, v in kwargs.items() if _is_float(hints[k]) and type(v) is int}
        return tp(**kwargs, _keys=tuple(value))
    if origin in (Union, UnionType):
        return _build(_member_for(get_args(tp), value), value)
    if origin is tuple:
        args = get_args(tp)
        items = [args[0]] * len(value) if len(args) == 2 and args[1] is Ellipsis else list(args)
        return tuple(_build(item, v) for item, v in zip(items, value))
    if origin in (Mapping, dict):
        value_type = get_args(tp)[1]
        return FrozenMapping({k: _named(_build(value_type, v), k) for k, v in value.items()})
    return copy.deepcopy(value)  # scalars and free-form data (generator parameters), as written


def _is_float(tp: Any) -> bool:
    """Whether ``tp`` is ``float`` or ``float | None`` (annotations stripped)."""
    tp = strip_annotations(tp)
    members = get_args(tp) if get_origin(tp) in (Union, UnionType) else (tp,)
    return float in [strip_annotations(m) for m in members]


def _named(value: Any, key: str) -> Any:
    """``value`` with its :func:`mapping_key` fields set to ``key`` (a block standing under ``key``)."""
    if isinstance(value, Block):
        for f in dataclasses.fields(value):
            if f.metadata.get("kind") == "mapping_key":
                object.__setattr__(value, f.name, key)
    return value


def build(cls: type[B], data: Mapping[str, Any]) -> B:
    """The block ``cls`` from ``data`` that the schema has validated: defaults filled in, lists as tuples,
    mappings read-only (:class:`FrozenMapping`, which pickles), numbers as written. Use
    :func:`saltbench.config.resolve_config` for unchecked data."""
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


def _tagged_schema(tagged: Mapping[str, type[Block]]) -> dict[str, Any]:
    """A tagged union: ``kind`` is one of the tags, then the keys of the block it names (``if``/``then``, so
    that errors are reported against that block alone)."""
    return {
        "type": "object",
        "required": ["kind"],
        "properties": {"kind": {"enum": list(tagged)}},
        "allOf": [
            {"if": {"properties": {"kind": {"const": name}}}, "then": object_schema(block)}
            for name, block in tagged.items()
        ],
    }


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
        tagged = _tagged(get_args(tp))
        if tagged is not None:
            return _tagged_schema(tagged)
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
    if is_block(tp):
        return object_schema(tp)
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    raise TypeError(f"no JSON schema for type {tp!r}")


def _without_none(tp: Any) -> Any:
    if get_origin(tp) in (Union, UnionType):
        members = tuple(m for m in get_args(tp) if m is not NoneType)
        return members[0] if len(members) == 1 else Union[members]  # noqa: UP007 - a runtime union
    return tp


def _default_of(f: dataclasses.Field[Any]) -> Any:
    """The default of a :func:`setting` field (a fresh one where it has a factory)."""
    factory: Any = f.default_factory
    return f.default if f.default is not dataclasses.MISSING else factory()


def _field_schema(f: dataclasses.Field[Any], tp: Any) -> dict[str, Any]:
    meta = f.metadata
    if meta["kind"] == "optional" and not meta["nullable"]:
        tp = _without_none(tp)
    schema = _type_schema(tp)
    schema.update(meta["keywords"])
    if meta["kind"] == "default":
        default = _default_of(f)
        schema["default"] = {} if isinstance(default, Block) else plain(default)
    if meta["description"]:
        schema["description"] = meta["description"]
    return schema


def object_schema(cls: type[Block]) -> dict[str, Any]:
    """The JSON schema of block ``cls``: an object of exactly its keys (:func:`required` ones listed), each
    key's type, bounds, default and description."""
    hints = field_types(cls)
    fields = _keyed(cls)
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    needed = [f.name for f in fields if f.metadata["kind"] == "required"]
    if needed:
        schema["required"] = needed
    schema["properties"] = {f.name: _field_schema(f, hints[f.name]) for f in fields}
    return schema


# -- validation with readable errors ------------------------------------------------------------------------


def _is_strict_integer(checker: Any, instance: Any) -> bool:
    """JSON-schema type "integer": a Python ``int`` only, not a ``bool`` nor an integral float (``2.0``)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def strict_validator(schema: Mapping[str, Any]) -> Any:
    """A Draft 2020-12 validator of ``schema`` whose "integer" rejects floats such as ``2.0`` and bools
    (plain Draft 2020-12 accepts ``2.0`` as an integer). jsonschema is imported here."""
    import jsonschema

    strict = jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_strict_integer),
    )
    return strict(schema)


def key_path(error: Any, prefix: Iterable[str] = ()) -> str:
    """The dotted key path of a ``jsonschema.ValidationError`` (``<top level>`` for the root)."""
    parts = [*prefix, *(str(p) for p in error.absolute_path)]
    return ".".join(parts) if parts else "<top level>"


def describe_error(error: Any, prefix: tuple[str, ...] = ()) -> str:
    """One line for a ``jsonschema.ValidationError``: the key path, then what is wrong with its value."""
    import jsonschema

    where = key_path(error, prefix)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        patterns = error.schema.get("patternProperties", {})
        unknown = [
            k for k in error.instance if k not in allowed and not any(re.search(p, k) for p in patterns)
        ]
        keys = ", ".join(repr(k) for k in unknown)
        hint = f"; allowed: {', '.join(sorted(allowed))}" if allowed else ""
        return f"{where}: unknown key(s) {keys}{hint}"
    if error.validator in ("oneOf", "anyOf") and error.context:
        return describe_error(jsonschema.exceptions.best_match(error.context), prefix)
    message = f"{where}: {error.message}"
    wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
    if error.validator == "type" and isinstance(error.instance, float) and "integer" in wanted:
        hint = f"write {int(error.instance)}" if error.instance.is_integer() else "a whole number is required"
        message += f" (a float; {hint})"
    return message


def not_finite(data: Any, where: str = "") -> str | None:
    """A line naming the key path of the first NaN or infinite number in ``data`` (YAML ``.nan``, ``.inf``),
    or ``None``: JSON-schema bounds compare false with NaN, so ``.nan`` would pass them (:func:`check_schema`
    looks for one first)."""
    if isinstance(data, float) and not math.isfinite(data):
        return f"{where or '<top level>'}: {data!r} is not a finite number"
    children: Iterable[tuple[str, Any]] = ()
    if isinstance(data, Mapping):
        children = ((f"{where}.{k}" if where else str(k), v) for k, v in data.items())
    elif isinstance(data, (list, tuple)):
        children = ((f"{where}[{i}]", v) for i, v in enumerate(data))
    return next((found for key, value in children if (found := not_finite(value, key))), None)


def schema_errors(
    validator: Any,
    data: Any,
    prefix: tuple[str, ...] = (),
    describe: Callable[[Any, tuple[str, ...]], str] = describe_error,
) -> list[str]:
    """Every problem of ``data`` against ``validator`` (:func:`strict_validator`), one line each
    (``describe`` words each), in key-path order."""
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    return [describe(e, prefix) for e in errors]


def check_schema(
    validator: Any,
    data: Any,
    *,
    error: type[ValueError],
    what: str,
    prefix: tuple[str, ...] = (),
    describe: Callable[[Any, tuple[str, ...]], str] = describe_error,
) -> None:
    """Raise ``error`` naming the first NaN or infinite number of ``data`` (:func:`not_finite`), else listing
    up to five of its :func:`schema_errors` after ``invalid {what}:``.

    Raises:
        ValueError: ``error``, whose message names each key path.
    """
    infinite = not_finite(data, ".".join(prefix))
    if infinite is not None:
        raise error(infinite)
    errors = schema_errors(validator, data, prefix, describe)
    if errors:
        raise error(f"invalid {what}: " + "; ".join(errors[:5]))


# -- the reference table of a block's keys (generated docs) ---------------------------------------------


def _words(schema: Mapping[str, Any]) -> str:
    """A JSON schema in a few words: its type(s) or names, then its bounds (``integer ≥ 1``)."""
    if "$ref" in schema:
        return f"a {schema['$ref'].rsplit('/', 1)[-1].replace('_', ' ')} name"
    if "enum" in schema:
        return " \\| ".join("null" if v is None else f"`{v}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    if "anyOf" in schema:
        return " or ".join(_words(part) for part in schema["anyOf"])
    kinds = schema.get("type", "any")
    text = " \\| ".join(kinds) if isinstance(kinds, list) else str(kinds)
    bounds = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}
    text += "".join(f" {sign} {schema[key]}" for key, sign in bounds.items() if key in schema)
    if "pattern" in schema:
        text += f" matching `{schema['pattern']}`"
    return text


def _default_words(f: dataclasses.Field[Any]) -> str:
    if f.metadata["kind"] == "required":
        return "required"
    if f.metadata["kind"] == "optional":
        return "—"
    default = _default_of(f)
    if isinstance(default, Block):
        return "(its keys' defaults)"
    return f"`{json.dumps(plain(default), ensure_ascii=False)}`"


def key_reference(cls: type[Block], prefix: str) -> list[tuple[str, str, str, str]]:
    """One row per key of block ``cls`` under the key path ``prefix``, nested blocks and tagged unions
    expanded (``source[kind=hub].id``): ``(key path, type, default, description)``, generated for the
    docs (docs/registry.md)."""
    rows: list[tuple[str, str, str, str]] = []
    hints = field_types(cls)
    for f in _keyed(cls):
        if tag(cls) is not None and f.name == "kind":
            continue  # a tagged block's kind is in its path (``source[kind=hub]``)
        path = f"{prefix}.{f.name}"
        base = strip_annotations(hints[f.name])
        members = get_args(base) if get_origin(base) in (Union, UnionType) else (base,)
        tagged = _tagged(members)
        if tagged is not None:
            rows.append((path, "a mapping with `kind`", _default_words(f), f.metadata["description"]))
            for name, block in tagged.items():
                rows.extend(key_reference(block, f"{path}[kind={name}]"))
            continue
        blocks = [strip_annotations(m) for m in members if is_block(strip_annotations(m))]
        words = "a mapping" if blocks else _words(_field_schema(f, hints[f.name]))
        rows.append((path, words, _default_words(f), f.metadata["description"]))
        for block in blocks:
            rows.extend(key_reference(block, path))
    return rows


def reference_markdown(rows: Iterable[tuple[str, str, str, str]]) -> str:
    """:func:`key_reference` rows as a Markdown table."""
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for path, words, default, text in rows:
        text = text.replace("<", "&lt;").replace("|", "\\|")
        lines.append(f"| `{path}` | {words} | {default} | {text} |")
    return "\n".join(lines) + "\n"
