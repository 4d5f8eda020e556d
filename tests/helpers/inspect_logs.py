"""inspect_ai logs for the import tests: a log of given samples, written through inspect_ai's own API."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def write_samples(path: Path, samples: Sequence[Any]) -> Path:
    """A successful evaluation log of model ``m`` on task ``salt`` holding ``samples`` (``EvalSample``)."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, write_eval_log

    spec = EvalSpec(
        created="2026-01-01T00:00:00+00:00",
        task="salt",
        dataset=EvalDataset(),
        model="m",
        config=EvalConfig(),
    )
    write_eval_log(EvalLog(eval=spec, samples=list(samples), status="success"), str(path))
    return path
