"""Served reasoning models through the workflow (docs/reasoning.md §4): one local fake server answers in
every shape real reasoning servers return; the units tables score the correct answers 1.0 with their
reasoning counted, a trace cut inside its reasoning is ``truncated``, a prompt beyond the context is that
prompt's error row, and every prompt is asked once — the refused models' jobs fail after one request."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest
import yaml
from helpers.fake_reasoning_server import ANSWERING, ReasoningServer, harmony_tokenizer, registry_entry

pytestmark = pytest.mark.workflow

TASKS = ("dna", "matmul")


def _answers(workdir, n_shots: int | None) -> dict[str, str]:
    """The instruction of every dataset row -> its correct answer (the datasets built by the workflow)."""
    from saltbench.stages.generation import build_prompts
    from saltbench.tasks import get_task

    answers = {}
    for task in TASKS:
        rows = pl.read_parquet(workdir / "data" / "datasets" / f"{task}.parquet")
        prompts = build_prompts(rows, "direct", n_shots)
        for prompt, variant, reference in zip(prompts, rows["variant"], rows["reference"]):
            answers[prompt] = get_task(task, variant).render_answer(reference)
    return answers


def _snakemake(workdir, configfile, *targets: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", *targets, "--cores", "2", "--keep-going"]
    return subprocess.run(
        [*command, "--configfile", str(configfile)], cwd=workdir, capture_output=True, text=True, timeout=900
    )


def test_every_reasoning_shape_through_the_workflow(tmp_path, copy_workflow, repo_root):
    (tmp_path / "workflow").mkdir()
    workdir = copy_workflow(tmp_path / "workflow")
    tokenizer = str(tmp_path / "tokenizer")
    with ReasoningServer({}, harmony_tokenizer(tokenizer)) as server:
        shapes = (*ANSWERING, "too-long", "refused", "no-logprobs")
        registry = {shape: registry_entry(shape, server.base_url, tokenizer) for shape in shapes}
        registry["think-content"] |= {  # the keys that reach the job's requests, set (pickled in params)
            "thinking": True,
            "chat_template_kwargs": {"reasoning_effort": "high", "nested": {"list": [1, 2]}},
            "system_prompt": "Think first.",
            "reasoning": True,
            "max_context": 8192,
            "resources": {"cpus": 1, "mem_mb": 2000, "runtime_min": 10},
        }
        registry["think-apart-cut"] = registry_entry(
            "think-apart", server.base_url, tokenizer, "think-apart/cut", max_new_tokens=30
        )
        (workdir / "config" / "served.yaml").write_text(yaml.safe_dump({"models": registry}))
        cfg = yaml.safe_load((repo_root / "config" / "test.yaml").read_text())
        cfg["inference"] |= {"jobs": "per_model", "max_error_share": 1.0}
        cfg["inference"].pop("backend")
        cfg |= {"model_registry": "config/served.yaml", "models": list(registry)}
        configfile = workdir / "config" / "served-run.yaml"
        configfile.write_text(yaml.safe_dump(cfg))
        datasets = [f"data/datasets/{task}.parquet" for task in TASKS]
        assert _snakemake(workdir, configfile, *datasets).returncode == 0
        server.answers = _answers(workdir, cfg["datasets"].get("n_shots"))
        server.too_long = frozenset({next(iter(server.answers))})  # the first dna prompt
        targets = [f"data/units/{m}/direct/{t}.parquet" for m in registry for t in TASKS]
        proc = _snakemake(workdir, configfile, *targets)
    answers = server.answers
    sent = server.bodies["think-content"]
    assert sent["chat_template_kwargs"] == {
        "enable_thinking": True,
        "reasoning_effort": "high",
        "nested": {"list": [1, 2]},
    }
    assert sent["messages"][0] == {"role": "system", "content": "Think first."}
    assert proc.returncode != 0  # the refused models' jobs fail; every other model is scored
    for model in registry:
        asked = [server.requests[(registry[model]["source"]["model"], i)] for i in answers]
        units = [workdir / f"data/units/{model}/direct/{t}.parquet" for t in TASKS]
        if model in ("refused", "no-logprobs"):
            assert sum(asked) == 1 and not any(p.exists() for p in units), model
            log = (workdir / "logs" / "generations" / model / "generate.log").read_text()
            assert "RequestRefused" in log, model
            continue
        assert asked == [1] * len(answers), (model, asked)
        frame = pl.concat([pl.read_parquet(p) for p in units], how="diagonal_relaxed")
        atoms = frame.filter(pl.col("granularity") == "atom")
        if model == "think-apart-cut":
            assert set(frame["answer_status"]) == {"truncated"}
            continue
        if model == "too-long":
            errors = atoms.filter(pl.col("answer_status") == "error")
            assert errors["sample_id"].n_unique() == 1
            atoms = atoms.filter(pl.col("answer_status") != "error")
        assert set(atoms["answer_status"]) == {"answered"}, model
        assert set(atoms["status"]) == {"correct"}, model
        if model != "too-long":
            assert (atoms["num_reasoning_tokens"] > 0).all(), model  # the reasoning is kept and counted
