"""Planning a run imports no engine nor heavy solver: the Snakefile's imports, the configuration check and
the model registry (every backend's options block read from its loader) leave numba, scipy.stats, torch,
transformers and vLLM unimported, so a dry run does not pay for them (docs/performance.md §2.1). SymPy loads
only where the configuration sets the Logic task's generator parameters: the check generates trial rows
with them, and Logic's generator solves its formulas with SymPy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numba", "sympy", "scipy.stats", "torch", "transformers", "vllm")

PLAN = """
import json, sys
import yaml
from saltbench.config import check_config_files, resolve_config
from saltbench.inference import load_model_registry
from saltbench.inference.backends import backend_names, options_class
import saltbench.analysis, saltbench.interventions, saltbench.tasks, saltbench.training.recipe
import saltbench.workflow.analysis_rules, saltbench.workflow.kept, saltbench.workflow.tables

path = sys.argv[1]
check_config_files([path])
with open(path, encoding="utf-8") as handle:
    config = yaml.safe_load(handle)
resolve_config(config)
load_model_registry(config.get("model_registry", "config/models.yaml"))
[options_class(name) for name in backend_names()]
print(json.dumps(sorted(name for name in %r if name in sys.modules)))
"""


@pytest.mark.parametrize(
    ("configfile", "expected"),
    [("config/config.yaml", ["sympy"]), ("config/paper.yaml", []), ("config/simulated.yaml", ["sympy"])],
)
def test_planning_imports_no_engine_nor_solver(repo_root, configfile, expected):
    done = subprocess.run(
        [sys.executable, "-c", PLAN % (HEAVY,), configfile],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == expected
