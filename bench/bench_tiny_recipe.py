"""Held-out atom precision of the tiny model families per checkpoint, prompt style and seed.

Trains every family of a config's ``training`` block (the family and each of ``training.variants``) for
each ``--seeds`` value — or, with ``--models DIR``, evaluates already trained family directories
(``data/models`` of a run) — and scores each checkpoint on fresh held-out samples of every trained task
(``saltbench.training.quick_eval``: ``generate(n, seed=42, **params)``, greedy, atom precision, a budget
covering the worked solution). Evaluation inputs of ``--datasets`` are dropped from training as the workflow
does. One thread per process; families of one seed train in parallel processes. Run::

    python bench/bench_tiny_recipe.py --seeds 0 1 --out /tmp/tiny-recipe        # train and evaluate
    python bench/bench_tiny_recipe.py --models data/models                      # evaluate a run's models
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import sys
from pathlib import Path

STYLES = ("direct", "cot")


def _train(args: tuple[str, dict, int, str, str]) -> str:
    import torch

    from saltbench.training import TrainConfig, load_eval_inputs, train

    family, recipe, seed, out, datasets = args
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)
    inputs = load_eval_inputs(sorted(Path(datasets).glob("*.parquet"))) if datasets else frozenset()
    train(TrainConfig.from_dict({**recipe, "seed": seed}), Path(out) / f"seed{seed}" / family, inputs)
    return str(Path(out) / f"seed{seed}" / family)


def _evaluate(family_dir: Path, recipe: dict, n: int) -> list[str]:
    import torch

    from saltbench.training import TrainConfig, quick_eval

    torch.set_num_threads(1)
    tasks = TrainConfig.from_dict(recipe).tasks
    rows = []
    for checkpoint in recipe["checkpoints"]:
        cells = []
        for mix in tasks:
            scores = [
                quick_eval(family_dir / checkpoint, mix.task, n=n, seed=42, params=dict(mix.params), style=s)
                for s in STYLES
            ]
            cells.append(" / ".join(f"{r.precision:.2f}" for r in scores))
        rows.append(
            f"| {family_dir.parent.name} | {family_dir.name}@{checkpoint} | " + " | ".join(cells) + " |"
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--seeds", type=int, nargs="*", default=[])
    parser.add_argument("--out", default="/tmp/tiny-recipe")
    parser.add_argument("--models", help="evaluate the family directories under this folder instead")
    parser.add_argument(
        "--datasets", default="data/datasets", help="evaluation datasets dropped from training"
    )
    parser.add_argument("-n", type=int, default=48, help="held-out samples per task")
    args = parser.parse_args()
    from saltbench.config import load_config, resolve_config

    training = resolve_config(load_config(args.config), check_models=False).training
    families = training.families()
    datasets = args.datasets if Path(args.datasets).is_dir() else ""
    dirs: list[Path] = []
    if args.models:
        dirs = [Path(args.models) / f for f in families if (Path(args.models) / f).is_dir()]
    else:
        jobs = [
            (f, recipe, seed, args.out, datasets) for seed in args.seeds for f, recipe in families.items()
        ]
        with multiprocessing.get_context("spawn").Pool(min(2, len(jobs))) as pool:
            dirs = [Path(d) for d in pool.map(_train, jobs)]
    tasks = list(next(iter(families.values()))["tasks"])
    print("| run | checkpoint | " + " | ".join(f"{t} (direct / cot)" for t in tasks) + " |")
    print("|---|---|" + "---|" * len(tasks))
    for family_dir in dirs:
        for row in _evaluate(family_dir, families[family_dir.name], args.n):
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
