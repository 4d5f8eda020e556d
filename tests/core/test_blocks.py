"""The typed blocks shared by the configuration and the model registry: tagged unions, mapping keys as names,
floats as floats, readable schema errors and the generated key reference (docs/architecture.md §5)."""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import given
from hypothesis import strategies as st

from saltbench.core.blocks import (
    Block,
    PositiveInt,
    build,
    key_reference,
    mapping_key,
    not_finite,
    object_schema,
    optional,
    required,
    schema_errors,
    setting,
    strict_validator,
)


@dataclass(frozen=True, kw_only=True)
class Disk(Block):
    path: str = required("A path.")
    kind: Literal["disk"] = setting("disk", "Kind.")


@dataclass(frozen=True, kw_only=True)
class Remote(Block):
    float_values = True

    url: str = required("A URL.")
    timeout: float = setting(1.0, "Seconds.")
    kind: Literal["remote"] = setting("remote", "Kind.")


@dataclass(frozen=True, kw_only=True)
class Entry(Block):
    name: str = mapping_key("Its key.")
    where: Disk | Remote = required("Where.")
    size: PositiveInt = setting(1, "A size.")
    scale: float = setting(1.0, "Kept as written (no float_values here).")


@dataclass(frozen=True, kw_only=True)
class Catalogue(Block):
    entries: Mapping[str, Entry] = required("Name -> entry.")


VALIDATOR = strict_validator(object_schema(Catalogue))


def errors(data: object) -> list[str]:
    return schema_errors(VALIDATOR, data)


def test_a_tagged_union_is_built_and_checked_by_its_kind():
    data = {"entries": {"a": {"where": {"kind": "remote", "url": "u", "timeout": 3}, "scale": 2}}}
    assert errors(data) == []
    entry = build(Catalogue, data).entries["a"]
    assert entry.name == "a" and entry.where == Remote(url="u", timeout=3.0)
    assert type(entry.where.timeout) is float and type(entry.scale) is int  # float_values only where asked
    assert entry.to_dict() == {"where": {"kind": "remote", "url": "u", "timeout": 3.0}, "scale": 2, "size": 1}
    assert errors({"entries": {"a": {"where": {"kind": "disk", "url": "u"}}}}) == [
        "entries.a.where: unknown key(s) 'url'; allowed: kind, path",
        "entries.a.where: 'path' is a required property",
    ]
    assert errors({"entries": {"a": {"where": {"kind": "tape"}}}}) == [
        "entries.a.where.kind: 'tape' is not one of ['disk', 'remote']"
    ]


def test_errors_name_the_key_path_and_integers_are_strict():
    assert errors({"entries": {"a": {"where": {"kind": "disk", "path": "p"}, "size": 2.0}}}) == [
        "entries.a.size: 2.0 is not of type 'integer' (a float; write 2)"
    ]
    assert errors({"entries": {"a": {"where": {"kind": "disk", "path": "p"}, "size": True}}}) == [
        "entries.a.size: True is not of type 'integer'"
    ]
    assert errors({"entries": {"a": {"where": {"kind": "disk", "path": "p"}, "name": "x"}}}) == [
        "entries.a: unknown key(s) 'name'; allowed: scale, size, where"  # a mapping key is not a key
    ]
    assert (
        not_finite({"entries": {"a": {"scale": float("nan")}}})
        == "entries.a.scale: nan is not a finite number"
    )
    assert not_finite({"entries": [1.0, float("inf")]}) == "entries[1]: inf is not a finite number"


@given(st.dictionaries(st.from_regex(r"[a-z]{1,5}", fullmatch=True), st.integers(1, 10**6), max_size=5))
def test_every_entry_is_named_by_its_key(sizes):
    data = {"entries": {k: {"where": {"kind": "disk", "path": k}, "size": v} for k, v in sizes.items()}}
    assert errors(data) == []
    built = build(Catalogue, data).entries
    assert {k: (e.name, e.size) for k, e in built.items()} == {k: (k, v) for k, v in sizes.items()}


def test_the_key_reference_expands_nested_and_tagged_blocks():
    rows = {path: (words, default) for path, words, default, _ in key_reference(Entry, "e")}
    assert rows == {
        "e.where": ("a mapping with `kind`", "required"),
        "e.where[kind=disk].path": ("string", "required"),
        "e.where[kind=remote].url": ("string", "required"),
        "e.where[kind=remote].timeout": ("number", "`1.0`"),
        "e.size": ("integer ≥ 1", "`1`"),
        "e.scale": ("number", "`1.0`"),
    }


@dataclass(frozen=True, kw_only=True)
class Noted(Block):
    """An entry with an optional key that may be written as null, and a ``__post_init__`` of its own."""

    name: str = mapping_key("Its key.")
    where: Disk | Remote = required("Where.")
    size: PositiveInt = setting(1, "A size.")
    note: str | None = optional("A note (null: none).", nullable=True)

    def __post_init__(self) -> None:  # no _keys parameter: Block wraps it
        object.__setattr__(self, "size", self.size)


WHERE = st.one_of(
    st.fixed_dictionaries({"kind": st.just("disk"), "path": st.text("abc", min_size=1, max_size=3)}),
    st.fixed_dictionaries(
        {"kind": st.just("remote"), "url": st.just("u")},
        optional={"timeout": st.floats(0.5, 9.0, allow_nan=False)},
    ),
)
NOTED = st.fixed_dictionaries(
    {"where": WHERE},
    optional={"size": st.integers(1, 99), "note": st.one_of(st.none(), st.text("xyz", max_size=3))},
)


def _in_code(data: Mapping[str, Any]) -> Noted:
    """The block written in Python with the keys of ``data``, in their order."""
    where = dict(data["where"])
    kind = Disk if where["kind"] == "disk" else Remote
    return Noted(name="n", **{k: kind(**where) if k == "where" else v for k, v in data.items()})


@given(NOTED, st.randoms(use_true_random=False))
def test_a_block_made_in_code_is_the_block_read_from_the_same_keys(data, rng):
    """The keys written by code or by a mapping, in any order: the same block, the same plain mapping (key
    order and written nulls included), the same keys written; dataclasses.replace and pickling keep them."""
    keys = list(data)
    rng.shuffle(keys)
    data = {k: data[k] for k in keys}
    assert schema_errors(strict_validator(object_schema(Noted)), data) == []
    read, made = build(Noted, data), _in_code(data)
    assert made == dataclasses.replace(read, name="n")
    assert made.written == read.written == tuple(data)
    assert json.dumps(made.to_dict()) == json.dumps(read.to_dict())
    assert ("note" in read.to_dict()) == ("note" in data)  # a written null is kept, an absent key left out
    for block in (read, made):
        changed = dataclasses.replace(block, size=7)
        assert changed.written == block.written and changed.size == 7
        assert list(changed.to_dict()) == list(block.to_dict())
        assert pickle.loads(pickle.dumps(block)).written == block.written
    assert Noted(where=Disk(path="p")).written == ("where",)  # a mapping key is not a key written
    assert "_keys" not in {f.name for f in dataclasses.fields(Noted)}  # an init variable, not a field
