"""The training recipe is torch-free (config validation stays cheap) and keeps every name where it was."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import saltbench.training as training
from saltbench.training import recipe

TORCH = ("torch", "transformers", "tokenizers")
RECIPE_NAMES = (
    "DEFAULT_TRAIN_CONFIG",
    "DEVICES",
    "GPU_TRAIN_CONFIG",
    "PRECISIONS",
    "ArchitectureSpec",
    "OptimSpec",
    "TaskMix",
    "TrainConfig",
    "parse_tasks_config",
)


def _packages_after(code: str) -> set[str]:
    """Top-level packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_validating_the_training_config_imports_no_torch(repo_root):
    """What every Snakemake run does (load and check the config, training on) imports no torch."""
    config_path = repo_root / "config" / "config.yaml"
    code = (
        "import saltbench.config, sys\n"
        "from saltbench.training import DEFAULT_TRAIN_CONFIG, GPU_TRAIN_CONFIG, TrainConfig\n"
        f"assert saltbench.config.load_config({str(config_path)!r})['training']['enabled']\n"
        "assert 'saltbench.training.recipe' in sys.modules\n"
        "TrainConfig.from_dict(DEFAULT_TRAIN_CONFIG), TrainConfig.from_dict(GPU_TRAIN_CONFIG)\n"
    )
    assert _packages_after(code) & set(TORCH) == set()


def test_recipe_imports_nothing_heavy():
    """The package itself and its recipe import neither torch nor numpy or polars."""
    code = "import saltbench.config, saltbench.training.recipe\nfrom saltbench.training import TrainConfig"
    assert _packages_after(code) & {*TORCH, "numpy", "polars"} == set()


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_recipe_names_are_the_same_objects_everywhere(name: str) -> None:
    """Moved to recipe.py, still importable from the package and (re-exported) from their old modules."""
    value = getattr(recipe, name)
    assert getattr(training, name) is value
    old_home = {"ArchitectureSpec": "model", "TaskMix": "pairs", "parse_tasks_config": "pairs"}.get(
        name, "trainer"
    )
    assert getattr(importlib.import_module(f"saltbench.training.{old_home}"), name) is value


def test_package_train_is_the_function():
    from saltbench.training import lr_at, train, trainer

    assert train is trainer.train and callable(train)
    assert lr_at is trainer.lr_at


def test_every_public_name_resolves():
    for name in training.__all__:
        assert getattr(training, name) is not None, name


def test_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = training.no_such_name  # type: ignore[attr-defined]


@pytest.mark.workflow
def test_dry_run_imports_no_torch(tmp_path, copy_workflow):
    """The default dry run (config validation included) never imports torch in the Snakemake process."""
    workdir = copy_workflow(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "snakemake", "-n", "--quiet", "rules"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines}
    assert "saltbench.training.recipe" in imported
    assert imported & set(TORCH) == set()
