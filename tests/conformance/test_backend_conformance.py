"""The backend conformance check (docs/extending.md §9): a backend that breaks the contract is named with the
check it fails; the example backend package (examples/saltbench-hfgenerate), installed into a temporary
folder, passes every check with its own options and generates what the built-in transformers backend does.
A built-in backend's run: tests/inference/test_simulated_backend.py (simulated)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.fake_plugins import env_with, fake_plugin

from saltbench.conformance import BACKEND_CHECKS

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "saltbench-hfgenerate"

SLOPPY = """
import numpy as np
from saltbench.inference import GenerationRecord, TokenScores


class Sloppy:
    backend = "sloppy"
    continuous_batching = False
    full_entropy = False
    tokenizer = None

    def __init__(self, spec, batch_size, top_k):
        self.spec, self.batch_size, self.top_k = spec, batch_size, top_k

    def render(self, instructions):
        return list(instructions)

    def generate(self, prompts, budgets, *, progress=True):
        scores = TokenScores(
            np.zeros(2, np.int32), np.zeros(2, np.float32), np.zeros((2, 5), np.int32),
            np.zeros((2, 5), np.float32), np.full(2, np.nan, np.float32),
        )
        return [GenerationRecord.from_scores(scores, ["a", "b"], finish_reason="eos", num_prompt_tokens=1)
                for _ in prompts]

    def prompt_cache(self, prompt_ids):
        return None

    def force_and_continue(self, prompt_ids, rows, *, max_new_tokens, cache=None, stop=None):
        raise NotImplementedError


def load(model_path, spec, *, batch_size, top_k):
    return Sloppy(spec, batch_size, top_k)


def silent(model_path, spec, *, batch_size, top_k):
    model = Sloppy(spec, batch_size, top_k)
    model.render = lambda instructions: []
    return model
"""

CHECK = """
import json
from saltbench.conformance import backend_failures
from saltbench.inference import parse_model_registry

nowhere = {"kind": "local", "path": "nowhere"}
entries = {name: {"source": nowhere, "backend": name} for name in ("sloppy", "silent")}
specs = parse_model_registry({"models": entries})
print(json.dumps({name: [[f.check, f.detail] for f in backend_failures(spec, "nowhere")]
                  for name, spec in specs.items()}))
"""


def test_a_backend_that_breaks_the_contract_is_named_with_the_check(tmp_path):
    root = fake_plugin(
        tmp_path,
        "saltbench-sloppy",
        "sloppyplug",
        textwrap.dedent(SLOPPY),
        {"saltbench.backends": {"sloppy": "sloppyplug:load", "silent": "sloppyplug:silent"}},
    )
    proc = subprocess.run(
        [sys.executable, "-c", CHECK], env=env_with(root), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["sloppy"] == [
        ["generates records", "prompt 0: 2 tokens but topk_ids (2, 5), topk_logprobs (2, 5) (top_k 20)"],
        ["deterministic", "not run: no generations (check 'generates records')"],
    ]
    assert [check for check, _ in seen["silent"]] == ["renders", "generates records", "deterministic"]
    assert seen["silent"][0][1] == "0 prompts for 2 instructions"
    assert set(BACKEND_CHECKS) >= {check for check, _ in seen["silent"]}


EXAMPLE_RUN = """
import json, sys
import numpy as np
from saltbench.conformance.backends import INSTRUCTIONS, backend_failures
from saltbench.inference import parse_model_registry
from saltbench.inference.backends import backend_names, load_backend

model_dir = sys.argv[1]
local = {"kind": "local", "path": model_dir}
specs = parse_model_registry({"models": {
    "example": {"source": local, "backend": "hf_generate", "backend_options": {"attention": "eager"}},
    "builtin": {"source": local},
}})
failures = [[f.check, f.detail] for f in backend_failures(specs["example"], model_dir, budget=4)]
example, builtin = (load_backend(model_dir, specs[name]) for name in ("example", "builtin"))
records = [model.generate(model.render(INSTRUCTIONS), [6, 6], progress=False) for model in (example, builtin)]
print(json.dumps({
    "listed": "hf_generate" in backend_names(),
    "options": [type(example.spec.backend_options).__name__, example.spec.backend_options.attention],
    "failures": failures,
    "tokens": [[r.token_ids.tolist() for r in run] for run in records],
    "texts": [[r.text for r in run] for run in records],
    "logprob_gap": max(float(np.abs(a.chosen_logprobs - b.chosen_logprobs).max()) for a, b in zip(*records)),
}))
"""


@pytest.mark.slow
@pytest.mark.model
def test_the_example_backend_installs_passes_every_check_and_generates_as_transformers(tmp_path, smollm2_dir):
    """``pip install`` of examples/saltbench-hfgenerate into a temporary folder (not the venv), then, in a
    process that sees it: the backend is listed, a registry entry takes its option, it passes every
    conformance check on SmolLM2 and generates the greedy tokens of the built-in ``hf`` backend."""
    source = shutil.copytree(EXAMPLE, tmp_path / "source")  # pip builds in the source tree: not in the repo
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", "install", "--no-deps"]
    subprocess.run([*pip, "--no-build-isolation", "--target", str(target), str(source)], check=True)
    # one thread: on a busy 2-core machine two torch threads ran the same generations 15 times slower
    proc = subprocess.run(
        [sys.executable, "-c", EXAMPLE_RUN, str(smollm2_dir)],
        env=env_with(target) | {"OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["listed"] and seen["options"] == ["GenerateOptions", "eager"]
    assert seen["failures"] == []
    example, builtin = seen["tokens"]
    assert example == builtin and all(len(tokens) > 1 for tokens in example)
    assert seen["texts"][0] == seen["texts"][1]
    assert seen["logprob_gap"] < 1e-3
