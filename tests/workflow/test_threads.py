"""No job asks torch for more threads than its rule's ``threads`` (the scheduler keeps their sum within
``--cores``). The run-time side is checked on a real run's logs in test_workflow.py."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _thread_settings(path: Path) -> list[tuple[str, ast.expr]]:
    """``(what, value)`` of every ``set_num_threads(value)`` call and ``num_threads=value`` argument."""
    found: list[tuple[str, ast.expr]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr == "set_num_threads":
            found.append(("set_num_threads", node.args[0]))
        found += [("num_threads=", kw.value) for kw in node.keywords if kw.arg == "num_threads"]
    return found


def _job_thread_names(path: Path) -> set[str]:
    """Names assigned from ``job_threads(...)`` in a script."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Name) and func.id == "job_threads":
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def test_workflow_scripts_set_torch_threads_only_from_the_job_grant():
    scripts = sorted((REPO / "workflow_scripts").glob("*.py"))
    setting = {p.name: _thread_settings(p) for p in scripts}
    assert {name for name, found in setting.items() if found} >= {
        "generate_shard.py",
        "intervention_shard.py",
    }
    for script in scripts:
        granted = _job_thread_names(script)
        for what, value in setting[script.name]:
            assert isinstance(value, ast.Name) and value.id in granted, (
                f"{script.name}: {what}{ast.unparse(value)} is not a job_threads(snakemake) value"
            )


def test_training_threads_are_capped_at_the_grant():
    text = (REPO / "workflow_scripts" / "train_tiny_models.py").read_text()
    assert 'training["num_threads"] = job_threads(snakemake, training["num_threads"])' in text


def test_the_package_sets_torch_threads_only_where_a_caller_passes_them():
    """Inside the package a thread count is always a parameter (from the scripts above), never a constant."""
    for path in sorted((REPO / "src" / "saltbench").rglob("*.py")):
        for what, value in _thread_settings(path):
            assert not isinstance(value, ast.Constant) or value.value is None, f"{path}: {what}{value.value}"


def test_polars_gets_one_thread_in_every_job():
    assert 'os.environ.setdefault("POLARS_MAX_THREADS", "1")' in (REPO / "Snakefile").read_text()
