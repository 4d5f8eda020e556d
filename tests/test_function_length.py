"""No function or method in the package, the workflow scripts, the benchmarks or the scripts is longer than
80 lines (decorators, signature, docstring and body: from the first decorator to the last line), nested ones
included: a longer one is split into named steps."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "workflow_scripts", "bench", "scripts")
LIMIT = 80


def function_lengths(source: str) -> Iterator[tuple[str, int, int]]:
    """(name, first line, lines) of every function and method in ``source``, nested ones included."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            assert node.end_lineno is not None
            yield node.name, start, node.end_lineno - start + 1


def test_function_lengths_counts_decorators_and_nested_functions() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(77))
    source = f"@property\ndef f():\n    def g():\n        return 1\n{body}\n"
    assert sorted(function_lengths(source)) == [("f", 1, 81), ("g", 3, 2)]  # f: one line over the limit


def test_no_function_over_80_lines() -> None:
    files = [path for folder in FOLDERS for path in sorted((REPO / folder).rglob("*.py"))]
    assert len(files) > 100
    too_long = [
        f"{path.relative_to(REPO)}:{start} {name}: {lines} lines"
        for path in files
        for name, start, lines in function_lengths(path.read_text(encoding="utf-8"))
        if lines > LIMIT
    ]
    assert not too_long, "split these into named steps:\n" + "\n".join(too_long)
