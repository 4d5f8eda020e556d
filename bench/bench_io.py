"""Cost of verified I/O: artifact tables against plain Parquet, a model directory's manifest against its load.

tables
    ``saltbench.io.write_table``/``read_table`` vs plain polars Parquet I/O. The verified path adds, on write,
    the contract check and a SHA-256 of the data region; on read, the digest, the footer metadata parse, the
    column/row comparison and the contract check (invariants included). The plain path is what the workflow
    did before: ``DataFrame.write_parquet`` with the provenance metadata and ``pl.read_parquet``. Both sides
    run on the same frames, alternating, minimum of the repeats; the printed ratio is verified / plain (1.00 =
    no overhead). Frames are the size of one default-run file and of a paper-scale file: a generations file
    (rows × tokens × top-20) and a units table (docs/performance.md §3).
manifest
    On the converted SmolLM2 directory (``data/models/converted/smollm2-135m``, converted first if missing):
    ``saltbench.io.verify_manifest`` (size and SHA-256 of every file) vs ``saltbench.inference.load_model``
    (transformers, float32, CPU), alternating, minimum of the repeats. The ratio is verify / load: what every
    inference and intervention job pays on top of its model load (docs/reliability.md §2.1).

Usage::

    python bench/bench_io.py tables [--rows 300] [--tokens 200] [--repeats 5]
    python bench/bench_io.py manifest [--repeats 5] [--model-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from _common import SMOLLM2_DIR, alternate, smollm2

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.artifact_samples import generation_record  # noqa: E402  (the tests' builder: realistic per-token columns)

from saltbench.core.contracts import UNIT_COLUMNS  # noqa: E402
from saltbench.inference import records_to_frame  # noqa: E402
from saltbench.io import PROVENANCE_KEY, read_table, write_table  # noqa: E402
from saltbench.stages.interventions import CONFIDENCE_COLUMNS  # noqa: E402

logger = logging.getLogger("bench_io")


def generations(rows: int, tokens: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    records = [
        generation_record(rng, int(n), k=20) for n in rng.integers(tokens // 2, tokens * 3 // 2, size=rows)
    ]
    meta = {
        name: [f"{name}-{i}" for i in range(rows)]
        for name in ("sample_id", "task", "variant", "model", "style")
    }
    meta["prompt"] = ["Translate the DNA sequence ... " * 20] * rows
    return records_to_frame(records, meta)


def units(n: int) -> pl.DataFrame:
    rng = np.random.default_rng(1)
    status = rng.choice(["correct", "incorrect", "missing"], size=n, p=[0.6, 0.3, 0.1])
    values = {
        "model": ["m"] * n,
        "style": ["direct"] * n,
        "task": ["dna"] * n,
        "sample_id": [f"s{i // 40}" for i in range(n)],
        "variant": [None] * n,
        "answer_status": ["answered"] * n,
        "finish_reason": ["eos"] * n,
        "num_generated_tokens": [120] * n,
        "num_reasoning_tokens": [0] * n,
        "max_new_tokens": [512] * n,
        "granularity": rng.choice(["atom", "line", "generation"], size=n),
        "unit_index": np.arange(n) % 40,
        "status": status,
        "is_correct": status == "correct",
        "response_unit": ["ACG"] * n,
        "reference_unit": ["ACG"] * n,
        "span_start": np.arange(n),
        "span_end": np.arange(n) + 3,
        "n_tokens": rng.integers(1, 4, size=n),
        **{name: rng.random(n) for name in CONFIDENCE_COLUMNS},
    }
    schema: dict[Any, Any] = {**UNIT_COLUMNS, **{c: pl.Float64 for c in CONFIDENCE_COLUMNS}}
    return pl.DataFrame(values).cast(schema)


def compare(name: str, kind: str, frame: pl.DataFrame, folder: Path, repeats: int) -> dict[str, float]:
    meta = {"stage": kind, "seed": 1}
    stem = name.replace("/", "-")
    plain, verified = folder / f"{stem}.plain.parquet", folder / f"{stem}.parquet"
    runs = {  # alternating, so drift in machine load hits both sides alike
        "plain_write": lambda: frame.write_parquet(
            plain, metadata={PROVENANCE_KEY: json.dumps(meta)}, statistics=False
        ),
        "verified_write": lambda: write_table(frame, verified, meta, kind),
        "plain_read": lambda: pl.read_parquet(plain),
        "verified_read": lambda: read_table(verified, kind),
    }
    best = {name: timing["seconds"] for name, timing in alternate(runs, repeats)[0].items()}
    size = verified.stat().st_size / 1e6
    result = {
        "rows": frame.height,
        "mb": size,
        **best,
        "write_ratio": best["verified_write"] / best["plain_write"],
        "read_ratio": best["verified_read"] / best["plain_read"],
    }
    logger.info(
        "%-22s %8d rows %7.2f MB  write %.4f s vs %.4f s (%.2fx)  read %.4f s vs %.4f s (%.2fx)",
        name,
        frame.height,
        size,
        best["verified_write"],
        best["plain_write"],
        result["write_ratio"],
        best["verified_read"],
        best["plain_read"],
        result["read_ratio"],
    )
    return result


def tables(args: argparse.Namespace) -> None:
    """The ``tables`` subcommand (module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for scale, rows in (("default-run", 48), ("paper-scale", args.rows)):
            compare(
                f"generations/{scale}", "generations", generations(rows, args.tokens), folder, args.repeats
            )
            compare(f"units/{scale}", "units", units(rows * 200), folder, args.repeats)


def manifest(args: argparse.Namespace) -> None:
    """The ``manifest`` subcommand (module docstring)."""
    import torch

    from saltbench.inference import load_model
    from saltbench.io import verify_manifest

    torch.set_num_threads(1)
    directory, _ = smollm2(args.model_dir)
    size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    runs = {
        "verify": lambda: verify_manifest(directory),
        "load": lambda: load_model(directory, "float32", "cpu"),
    }
    best, _ = alternate(runs, args.repeats)  # alternating: drift in machine load hits both alike
    verify, load = best["verify"]["seconds"], best["load"]["seconds"]
    logger.info(
        "%s: %.0f MB; verify %.3f s (%.0f MB/s), load %.3f s; verify / load = %.2f",
        directory.name,
        size / 1e6,
        verify,
        size / 1e6 / verify,
        load,
        verify / load,
    )


def parser() -> argparse.ArgumentParser:
    """The subcommands ``tables`` and ``manifest`` and their options."""
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = cli.add_subparsers(dest="command", required=True)
    t = commands.add_parser("tables", help="write_table/read_table against plain Parquet I/O")
    t.add_argument("--rows", type=int, default=300, help="generations per file (default run: 8-48)")
    t.add_argument("--tokens", type=int, default=200, help="mean generated tokens per row")
    t.add_argument("--repeats", type=int, default=5)
    m = commands.add_parser("manifest", help="verifying SmolLM2's manifest against loading it")
    m.add_argument("--repeats", type=int, default=5)
    m.add_argument("--model-dir", type=Path, default=SMOLLM2_DIR)
    return cli


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (tables if args.command == "tables" else manifest)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
