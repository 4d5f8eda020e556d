"""Every bad configuration and bad API input of the table in docs/reliability.md §6.1, with its message.

The table is the specification: each row's case is run here and must raise the row's exception with the
row's message (a substring of the full message, which may add file paths), and every case here has a row.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from saltbench.confidence import token_signals, unit_confidence
from saltbench.config import load_config, resolve_config
from saltbench.conformance import check_task
from saltbench.evaluation import evaluate
from saltbench.inference import load_model_registry
from saltbench.metrics import aurc, auroc, brier, ece, prr
from saltbench.stages.generation import check_error_rows
from saltbench.tasks import DnaTask

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "reliability.md"


def _config(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], object]:
    def run(tmp_path: Path) -> object:
        cfg = copy.deepcopy(load_config(REPO / "config" / "config.yaml"))
        change(cfg)
        return resolve_config(cfg)

    return run


def _registry(text: str) -> Callable[[Path], object]:
    def run(tmp_path: Path) -> object:
        path = tmp_path / "models.yaml"
        path.write_text(text)
        return load_model_registry(path)

    return run


def _call(fn: Callable[..., object], *args: Any, **kwargs: Any) -> Callable[[Path], object]:
    return lambda tmp_path: fn(*args, **kwargs)


ENTRY = "    source: {kind: local, path: x}\n"


class _EchoTask(DnaTask):
    """A task whose ``generate`` takes its references from its own ``solve``, which returns its input."""

    def solve(self, input: str) -> str:
        return input

    def generate(self, n: int, seed: int, **params: object) -> pl.DataFrame:
        frame = super().generate(n, seed, **params)
        return frame.with_columns(reference=frame["input"])


CASES: dict[str, Callable[[Path], object]] = {
    "cot_factor_nan": _config(lambda c: c["inference"].update(cot_factor=math.nan)),
    "ci_level_inf": _config(lambda c: c["metrics"].update(ci_level=math.inf)),
    "unknown_key": _config(lambda c: c["inference"].update(batchsize=4)),
    "intervention_tasks_outside_tasks": _config(lambda c: c.update(tasks=["dna", "words"])),
    "no_models": _config(lambda c: c.update(models=[])),
    "registry_model_twice": _registry(f"models:\n  m:\n{ENTRY}  m:\n{ENTRY}"),
    "registry_key_twice": _registry(f"models:\n  m:\n{ENTRY}    dtype: float32\n    dtype: bfloat16\n"),
    "unit_confidence_strings": _call(unit_confidence, ["ab", "cd"]),
    "unit_confidence_flat_floats": _call(unit_confidence, [-0.5, -1.0]),
    "unit_confidence_positive": _call(unit_confidence, [[-0.1, 0.7]]),
    "unit_confidence_plus_inf": _call(unit_confidence, [[math.inf]]),
    "token_signals_positive": _call(token_signals, [-1.0, 0.7]),
    "negative_entropy": _call(token_signals, [-1.0], None, [-0.5], "full"),
    "evaluate_no_reference": _call(evaluate, "AGA GCT", None, "dna"),
    "metric_empty": _call(auroc, [], []),
    "metric_inf_score": _call(auroc, [0.9, math.inf], [1, 0]),
    "metric_nan_label": _call(prr, [0.9, 0.1], [math.nan, 1]),
    "metric_label_not_binary": _call(aurc, [0.9, 0.1], [2, 1]),
    "metric_lengths": _call(brier, [0.9, 0.1], [1]),
    "ece_outside_unit_interval": _call(ece, [1.5, 0.2], [1, 0]),
    "task_echoes_its_input": _call(check_task, _EchoTask),
    "budget_fills_context": _config(lambda c: c["inference"].update(max_new_tokens={"default": 8192})),
    "shard_of_error_rows": _call(
        check_error_rows,
        pl.DataFrame({"finish_reason": ["error", "error"], "error": ["APIConnectionError: refused"] * 2}),
        model_name="served",
        what="direct/dna shard 0",
        max_error_share=0.05,
    ),
}

ROW = re.compile(r"^\| `(?P<case>[a-z_]+)` \| (?P<input>.+?) \| `(?P<error>\w+)`: `(?P<message>.+)` \|$")


def _table() -> dict[str, tuple[str, str]]:
    section = DOCS.read_text(encoding="utf-8").split("### 6.1 ", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            rows[match["case"]] = (match["error"], match["message"])
    return rows


def test_the_table_lists_every_case_and_nothing_else() -> None:
    assert sorted(_table()) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_case_is_refused_with_the_documented_message(case: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(REPO)  # configuration checks resolve the registry and the paper data from here
    error, message = _table()[case]
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the type is checked against the table below
        CASES[case](tmp_path)
    assert type(caught.value).__name__ == error, caught.value
    assert message in str(caught.value), str(caught.value)
