"""Every closed vocabulary is stated once, in saltbench.core.vocabulary (docs/architecture.md §2)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

import pytest

from saltbench.core import vocabulary

PACKAGE = Path(vocabulary.__file__).resolve().parents[1]
VOCABULARIES = {
    name: frozenset(get_args(value))
    for name, value in vars(vocabulary).items()
    if name[:1].isupper() and not name.isupper() and get_args(value)
}


def _literal_sets(path: Path) -> list[tuple[int, frozenset[object]]]:
    """Every ``Literal[...]`` of a module's source with its line (annotations and aliases alike)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Literal":
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if all(isinstance(item, ast.Constant) for item in items):
                found.append((node.lineno, frozenset(item.value for item in items)))
    return found


def test_vocabularies_are_their_tuples():
    for name, tuple_name in [
        ("PromptStyle", "STYLES"),
        ("Granularity", "GRANULARITIES"),
        ("Backend", "BACKENDS"),
    ]:
        assert get_args(getattr(vocabulary, name)) == getattr(vocabulary, tuple_name)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_restates_a_vocabulary(path: Path):
    """No ``Literal`` outside the vocabulary module spells the values of one of its vocabularies."""
    if path.name == "vocabulary.py" and path.parent.name == "core":
        return
    restated = [
        (line, name)
        for line, values in _literal_sets(path)
        for name, known in VOCABULARIES.items()
        if values == known
    ]
    assert not restated, f"{path}: restates {restated} (import it from saltbench.core.vocabulary)"


def test_the_model_name_pattern_is_the_one_everywhere():
    """The schema, the registry and the rules' wildcard constraint use MODEL_NAME_REGEX."""
    from saltbench.config import load_schema

    schema = load_schema()
    assert schema["properties"]["models"]["items"]["pattern"] == f"^{vocabulary.MODEL_NAME_REGEX}$"
    common = (PACKAGE.parents[1] / "rules" / "common.smk").read_text(encoding="utf-8")
    assert re.search(r"model=MODEL_NAME_REGEX", common)
    assert not re.search(r"\[A-Za-z0-9\]\[A-Za-z0-9\._@\+-\]", common)
