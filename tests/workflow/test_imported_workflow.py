"""Bring your own generations (docs/backends.md §9), end to end: a simulated model's generations, written as
the export writes them (JSONL) and imported as a second model (source kind generations), give the same units
tables — the imported
model goes through the same scoring as the native one on the same prompts. The same generations, written as
the authors' release caches them — their prompts and no sample ids, in the layout and log-probability shapes
their normaliser reads (the README's ``{model, responses}``, vLLM's ``Logprob`` with an empty end-of-sequence
token, ``{id: [logprob, token]}``, two responses without token texts) — are imported as a third model, and
the whole default target is built: tables, figures, the findings page and the explorer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from helpers.authors_cache import authors_prompt, pair_positions, vllm_positions, write_cache

from saltbench.config import DatasetsConfig, InferenceConfig, resolve_block
from saltbench.data import build_dataset
from saltbench.inference import load_model_registry
from saltbench.inference.imports import write_jsonl
from saltbench.stages.generation import generate_shard

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

TASKS = ["dna", "matmul"]
COLUMNS = ["sample_id", "granularity", "unit_index", "status", "is_correct", "answer_status"]
COLUMNS += ["topk.mean_probability"]
"""What the authors'-style caches must reproduce of the native units (their tokens gain an end-of-sequence
position and lose the full-vocabulary entropy, so other columns differ)."""


def snakemake(root, configfile, *targets):
    command = [
        sys.executable,
        "-m",
        "snakemake",
        *targets,
        "--cores",
        "2",
        "--profile",
        "profiles/local",
        "--configfile",
        configfile,
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]


def native_generations(root: Path, config: dict) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """Per task, the run's dataset and sim-planted's generations, made here as the workflow makes them (the
    imported models' units equal to the native ones check it), so one Snakemake run builds everything."""
    settings = resolve_block("datasets", config["datasets"], DatasetsConfig)
    inference = resolve_block("inference", config["inference"], InferenceConfig)
    spec = load_model_registry(root / "config/models.yaml")["sim-planted"]
    folder = root / "native-datasets"  # the simulated model reads its references from the datasets
    folder.mkdir()
    datasets = {task: build_dataset(settings, config["seed"], task) for task in TASKS}
    for task, dataset in datasets.items():
        dataset.write_parquet(folder / f"{task}.parquet")
    out = {}
    for task, dataset in datasets.items():
        generations = generate_shard(
            dataset,
            inference,
            model_name="sim-planted",
            model_path=folder,
            spec=spec,
            style="direct",
            n_shots=None,
            progress=False,
        )
        out[task] = dataset, generations
    return out


def authors_cache(path: Path, native: dict[str, tuple[pl.DataFrame, pl.DataFrame]]) -> None:
    """The native model's generations as the authors' release caches them (module docstring), newest row
    first: per task, the first response's log-probabilities as bare numbers (no token texts: accuracy only),
    then vLLM's serialised ``Logprob`` with an end-of-sequence position (no input) and ``{id: [logprob,
    token]}`` (the dataset row as its input) in turn."""
    results = []
    for task, (dataset, generations) in native.items():
        for k, (row, gen) in enumerate(zip(dataset.iter_rows(named=True), generations.iter_rows(named=True))):
            tokens, chosen, ids = gen["token_texts"], gen["chosen_logprob"], gen["token_ids"]
            alternatives = [list(zip(i, lp)) for i, lp in zip(gen["topk_ids"], gen["topk_logprobs"])]
            result = {"input": None, "prompt": authors_prompt(task, row["variant"], row["input"])}
            result["text"] = gen["text"].strip()  # as the authors' wrapper stores it
            if k == 0:
                result["logprobs"] = list(chosen)
            elif k % 2:
                result["logprobs"] = vllm_positions(tokens, chosen, alternatives, ids)
            else:
                named = [[(f"<{i}>", lp) for i, lp in alts if i != c] for alts, c in zip(alternatives, ids)]
                result["input"] = {"task": row["task"], "input": row["input"], "reference": row["reference"]}
                result["logprobs"] = pair_positions(tokens, chosen, named)
            results.append(result)
    write_cache(path, {"model": "sim-planted", "responses": results[::-1]})


def test_imported_models_score_like_the_native_one_through_the_default_target(tmp_path, copy_workflow):
    root = copy_workflow(tmp_path)
    config = yaml.safe_load((root / "config/simulated.yaml").read_text(encoding="utf-8"))
    config.update(tasks=TASKS, prompt_styles=["direct"])
    config["datasets"]["n_samples"] = 6
    config["inference"]["shard_size"] = 6
    # greedy answers only: the authors' cache carries no draws, and an imported model is asked nothing
    for key in ("samples", "second_pass"):
        config["inference"].pop(key, None)
    config["interventions"]["enabled"] = False
    config["metrics"]["n_bootstrap"] = 20
    native = native_generations(root, config)
    write_jsonl(pl.concat([generations for _, generations in native.values()]), root / "data/sim.jsonl")
    authors_cache(root / "data/authors.json", native)
    registry = yaml.safe_load((root / "config/models.yaml").read_text(encoding="utf-8"))
    imported = {
        "sim-imported": ("jsonl", "data/sim.jsonl"),
        "sim-authors": ("salt_cache", "data/authors.json"),
    }
    for name, (fmt, path) in imported.items():
        registry["models"][name] = {"source": {"kind": "generations", "format": fmt, "path": path}}
    (root / "config/models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    config["models"] = ["sim-planted", *imported]
    (root / "config/all.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    snakemake(root, "config/all.yaml")  # the default target: every table, figure, findings, explorer

    units = [f"data/units/{{}}/direct/{task}.parquet" for task in TASKS]
    for unit in units:
        want = pl.read_parquet(root / unit.format("sim-planted")).drop("model")
        assert want.height > 0
        assert pl.read_parquet(root / unit.format("sim-imported")).drop("model").equals(want), unit
        untexted = want["sample_id"][0]  # the first response of sim-authors: accuracy only
        got = pl.read_parquet(root / unit.format("sim-authors"))
        assert got.filter(pl.col("sample_id") == untexted)["topk.mean_probability"].is_nan().all()
        got, want = (frame.filter(pl.col("sample_id") != untexted).select(COLUMNS) for frame in (got, want))
        assert got.equals(want), unit
    records = {
        name: json.loads((root / f"data/generations/{name}/import.json").read_text(encoding="utf-8"))
        for name in imported
    }
    assert all(r["imported"] == r["responses"] == 6 * len(TASKS) for r in records.values())
    assert records["sim-imported"]["without_logprobs"] == 0
    assert records["sim-authors"]["without_logprobs"] == len(TASKS)
    assert len(records["sim-imported"]["sha256"]) == 64
    findings = (root / "results/findings.md").read_text(encoding="utf-8")
    assert "**sim-authors** — 2 of its 12 imported responses carry none" in findings
    manifest = {}
    for path in sorted((root / "results/explorer/data").iterdir()):  # strict JSON: no NaN, no Infinity
        text = path.read_text(encoding="utf-8")
        data = json.loads(text[text.index("{") : text.rindex("}") + 1], parse_constant=refuse_constant)
        manifest = data if path.name == "index.js" else manifest
    assert {c["model"] for c in manifest["chunks"]} == {"sim-planted", *imported}


def refuse_constant(name: str) -> None:
    raise ValueError(f"{name} in an explorer data file")
