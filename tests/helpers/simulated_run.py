"""A tiny run of the simulated backend through the package's stages, without Snakemake (seconds, no weights).

Datasets, generations, units and interventions land where the workflow writes them
(``data/{datasets,generations,units,interventions}/...``), written with their contracts, so the explorer
and any reader of a run can be tested on real artifacts of every kind (docs/simulation.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from saltbench.config import InferenceConfig
from saltbench.explorer import CellFiles
from saltbench.inference import load_model_registry
from saltbench.interventions import InterventionOptions
from saltbench.io import provenance, write_table
from saltbench.stages.generation import generate_shard
from saltbench.stages.interventions import intervention_shard
from saltbench.stages.scoring import score_generations
from saltbench.tasks import get_task

REGISTRY = Path(__file__).resolve().parents[2] / "config" / "models.yaml"


@dataclass(frozen=True)
class SimulatedRun:
    """Where a tiny run's files are."""

    root: Path
    cells: list[CellFiles]
    datasets: dict[str, Path]
    interventions: list[Path]


def simulated_run(
    root: Path,
    *,
    models: Sequence[str] = ("sim-planted", "sim-planted-reason"),
    styles: Sequence[str] = ("direct", "cot"),
    tasks: Sequence[str] = ("matmul", "dna"),
    n_samples: int = 8,
    intervention_task: str = "matmul",
    seed: int = 5,
) -> SimulatedRun:
    """Generate, score and intervene like the workflow does, for ``n_samples`` samples per task.

    Interventions: the first model on ``intervention_task``, four samples, clean and corrupted prefixes.
    """
    registry = load_model_registry(REGISTRY)
    data = root / "data"
    datasets: dict[str, Path] = {}
    frames: dict[str, pl.DataFrame] = {}
    for task in tasks:
        frame = get_task(task).generate(n_samples, seed=seed)
        path = datasets[task] = data / "datasets" / f"{task}.parquet"
        write_table(frame, path, provenance(stage="datasets", task=task, seed=seed), "dataset")
        frames[task] = frame
    inference = InferenceConfig(max_new_tokens={"default": 4096})
    cells = []
    for model in models:
        spec = registry[model]
        for style in styles:
            for task in tasks:
                generations = generate_shard(
                    frames[task],
                    inference,
                    model_name=model,
                    model_path=data / "datasets",
                    spec=spec,
                    style=style,
                    n_shots=None,
                    progress=False,
                )
                gen_path = data / "generations" / model / style / f"{task}.parquet"
                write_table(
                    generations, gen_path, provenance(stage="generations", model=model), "generations"
                )
                scored = score_generations(
                    generations, frames[task], task, reasoning=spec.reasoning_format, max_new_tokens=4096
                )
                cell = {"model": model, "style": style, "task": task}
                units = scored.select(*(pl.lit(v).alias(k) for k, v in cell.items()), pl.all())
                unit_path = data / "units" / model / style / f"{task}.parquet"
                write_table(units, unit_path, provenance(stage="units", model=model), "units")
                cells.append(CellFiles(model, style, task, unit_path, gen_path))
    options = InterventionOptions.from_dict(
        {
            "samples_per_task": 4,
            "shard_size": 4,
            "position_fractions": [0.5, 1.0],
            "corruption_counts": [0, 1],
            "placements": ["random", "local"],
            "next_atoms": 1,
            "seed": seed,
        }
    )
    model = models[0]
    rows = intervention_shard(
        frames[intervention_task].head(4),
        options,
        model_name=model,
        model_path=data / "datasets",
        spec=registry[model],
        n_shots=None,
        backend="simulated",
    )
    inter_path = data / "interventions" / model / f"{intervention_task}.parquet"
    write_table(rows, inter_path, provenance(stage="interventions", model=model), "interventions")
    return SimulatedRun(root, cells, datasets, [inter_path])


def simulated_model(folder: Path, **params: object) -> object:
    """The simulated model ``sim`` of ``SimulationParams(**params)`` answering the datasets in ``folder``."""
    from saltbench.inference.backends import load_backend
    from saltbench.inference.registry import ModelSpec
    from saltbench.inference.simulated import SimulationParams
    from saltbench.inference.sources import SimulatedSource

    spec = ModelSpec(
        name="sim",
        source=SimulatedSource(parameters=SimulationParams(**params)),  # type: ignore[arg-type]
        backend="simulated",
        chat_template="none",
    )
    return load_backend(folder, spec)
