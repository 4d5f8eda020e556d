"""YAML files read strictly: a key repeated in one mapping is an error naming the file and both lines.

PyYAML (and Snakemake's config loader) silently keep the last value of a repeated key; the workflow's
configuration files and the model registry are read with :class:`StrictYAMLLoader` instead
(docs/configuration.md).
"""

from __future__ import annotations

from os import PathLike
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A YAML mapping repeats a key (raised by :class:`StrictYAMLLoader`).

    Attributes:
        key_path: dotted path of the repeated key, e.g. ``datasets.n_samples``.
        line: 1-based line of the repeat; ``first_line``: of the first occurrence.
    """

    def __init__(self, key_path: str, first: yaml.Mark, repeat: yaml.Mark) -> None:
        """``first``/``repeat``: the marks of the key's first and repeated occurrence."""
        super().__init__("while constructing a mapping", first, f"found duplicate key {key_path!r}", repeat)
        self.key_path = key_path
        self.line = repeat.line + 1
        self.first_line = first.line + 1


class StrictYAMLLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that raises :class:`DuplicateKeyError` on a key repeated in one mapping.

    PyYAML (and Snakemake's config loader) silently keeps the last value of a repeated key. Keys are
    compared by resolved tag and text (``n: 1`` twice is a duplicate; ``"n"`` and ``n`` too). A key that
    overrides one brought in by a merge key (``<<: *defaults``) is not a duplicate.
    """

    def construct_document(self, node: Node) -> Any:
        """Reject duplicate keys anywhere in the document, then construct it as ``SafeLoader`` does."""
        _reject_duplicate_keys(node, (), set())
        return super().construct_document(node)


def _reject_duplicate_keys(node: Node, path: tuple[str, ...], seen: set[int]) -> None:
    """Walk the composed YAML ``node`` and raise :class:`DuplicateKeyError` at the first repeated key."""
    if id(node) in seen:  # an alias of a node already checked (also guards recursive anchors)
        return
    seen.add(id(node))
    if isinstance(node, MappingNode):
        first: dict[tuple[str, str], yaml.Mark] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                _reject_duplicate_keys(value_node, path, seen)
                continue
            label = str(key_node.value) if isinstance(key_node, ScalarNode) else f"<{key_node.id}>"
            if isinstance(key_node, ScalarNode):
                key = (key_node.tag, key_node.value)
                if key in first:
                    raise DuplicateKeyError(".".join((*path, label)), first[key], key_node.start_mark)
                first[key] = key_node.start_mark
            _reject_duplicate_keys(value_node, (*path, label), seen)
    elif isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            _reject_duplicate_keys(item, (*path, str(i)), seen)


def yaml_error_message(path: str | PathLike[str], exc: yaml.YAMLError) -> str:
    """One-line message for a YAML error in file ``path``: the file, 1-based line and column, the problem."""
    if isinstance(exc, DuplicateKeyError):
        return (
            f"{path}, line {exc.line}: duplicate key {exc.key_path!r} (first defined on line "
            f"{exc.first_line}); YAML would silently keep only the last value"
        )
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        message = f"{path}, line {mark.line + 1}, column {mark.column + 1}: invalid YAML: {exc.problem}"
        if exc.context and exc.context_mark is not None:
            message += f" ({exc.context} at line {exc.context_mark.line + 1})"
        return message
    return f"{path}: invalid YAML: {exc}"


__all__ = ["DuplicateKeyError", "StrictYAMLLoader", "yaml_error_message"]
