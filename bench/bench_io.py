"""Cost of verified artifact I/O: ``saltbench.io.write_table``/``read_table`` vs plain polars Parquet I/O.

The verified path adds, on write, the contract check and a SHA-256 of the data region; on read, the digest,
the footer metadata parse, the column/row comparison and the contract check (invariants included). The plain
path is what the workflow did before: ``DataFrame.write_parquet`` with the provenance metadata and
``pl.read_parquet``. Both sides run on the same frames, alternating, minimum of the repeats; the printed
ratio is verified / plain (1.00 = no overhead).

Frames are the size of one default-run file and of a paper-scale file: a generations file (rows × tokens ×
top-20), the units table scored from it, and its metrics table.

Usage: ``python bench/bench_io.py [--rows 300] [--tokens 200] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
from _timing import timed

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
    return pl.DataFrame(values).cast({**UNIT_COLUMNS, **{c: pl.Float64 for c in CONFIDENCE_COLUMNS}})  # type: ignore[arg-type]


def compare(name: str, kind: str, frame: pl.DataFrame, folder: Path, repeats: int) -> dict[str, float]:
    meta = {"stage": kind, "seed": 1}
    stem = name.replace("/", "-")
    plain, verified = folder / f"{stem}.plain.parquet", folder / f"{stem}.parquet"
    best = {key: float("inf") for key in ("plain_write", "verified_write", "plain_read", "verified_read")}
    for _ in range(repeats):  # alternate the two sides so drift in machine load hits both alike
        t, _ = timed(
            lambda: frame.write_parquet(plain, metadata={PROVENANCE_KEY: json.dumps(meta)}, statistics=False),
            1,
        )
        best["plain_write"] = min(best["plain_write"], t["seconds"])
        t, _ = timed(lambda: write_table(frame, verified, meta, kind), 1)
        best["verified_write"] = min(best["verified_write"], t["seconds"])
        t, _ = timed(lambda: pl.read_parquet(plain), 1)
        best["plain_read"] = min(best["plain_read"], t["seconds"])
        t, _ = timed(lambda: read_table(verified, kind), 1)
        best["verified_read"] = min(best["verified_read"], t["seconds"])
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300, help="generations per file (default run: 8-48)")
    parser.add_argument("--tokens", type=int, default=200, help="mean generated tokens per row")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for scale, rows in (("default-run", 48), ("paper-scale", args.rows)):
            compare(
                f"generations/{scale}", "generations", generations(rows, args.tokens), folder, args.repeats
            )
            compare(f"units/{scale}", "units", units(rows * 200), folder, args.repeats)


if __name__ == "__main__":
    main()
