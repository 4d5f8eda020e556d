"""The documented stable API stays importable from where the README and docs/index.md say it lives."""

from __future__ import annotations

import importlib

import pytest

STABLE = {
    "saltbench.evaluation": ["evaluate", "extract_answer", "evaluate_many"],
    "saltbench.metrics": ["auroc", "aurc", "prr", "ece", "brier", "bootstrap_ci"],
    "saltbench.confidence": ["unit_confidence", "CONFIDENCE_FUNCTIONS"],
    "saltbench.calibration": ["zscore_sigmoid", "fit_calibrator"],
    "saltbench.data": ["load_paper_datasets", "build_dataset"],
    "saltbench.tasks": ["get_task", "TASK_SLUGS"],
    "saltbench.io": ["read_table", "write_table", "provenance"],
    "saltbench.inference": ["load_model_registry", "get_model_spec", "generate", "records_to_frame"],
    "saltbench.inference.backends": ["load_backend", "LoadedModel", "builtin_backends"],
    "saltbench.config": ["resolve_config", "load_config", "WorkflowConfig", "ConfigError"],
}


@pytest.mark.parametrize("module", sorted(STABLE))
def test_stable_names_import(module: str) -> None:
    imported = importlib.import_module(module)
    assert [name for name in STABLE[module] if not hasattr(imported, name)] == []


def test_at_most_two_modules_loose_at_the_package_root() -> None:
    """The package root holds the stable-API modules only; everything else lives in a subpackage."""
    from pathlib import Path

    import saltbench

    root = Path(saltbench.__file__).parent
    loose = sorted(p.stem for p in root.glob("*.py") if p.name != "__init__.py")
    assert loose == ["calibration", "data"]
