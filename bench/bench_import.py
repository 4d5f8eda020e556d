"""Speed of bringing your own generations (docs/backends.md §9.6): the JSONL export, the JSONL import and the
authors' cache import, each end to end (read, match every response to its dataset row, convert into the
generations tables).

Responses: ``--rows`` DNA rows answered in one style, ``--tokens`` tokens each with their top-20 (the tests'
realistic records: random log-probabilities, awkward token texts); the cache holds the same tokens as
``{token: logprob}`` per position (20 candidates, the generated one first). Minimum of ``--repeats`` runs;
wall-clock and process CPU seconds, responses and tokens per second, file sizes. Then matching alone: an
authors'-style cache of every row of the reproduction data (``reference/paper_data``) with the authors'
prompts and no sample ids, no log-probabilities — every response matched by the few-shot block and test
block its prompt holds (docs/backends.md §9.5).

Usage: ``python bench/bench_import.py [--rows 300] [--tokens 400] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np
from _common import timed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.artifact_samples import generation_meta, generation_record  # noqa: E402  (the tests' builders)
from helpers.authors_cache import authors_prompt, write_cache  # noqa: E402

from saltbench.core.vocabulary import ImportFormat  # noqa: E402
from saltbench.data import load_paper_datasets  # noqa: E402
from saltbench.inference import records_to_frame  # noqa: E402
from saltbench.inference.imports import write_jsonl  # noqa: E402
from saltbench.stages.generation import build_prompts  # noqa: E402
from saltbench.stages.imports import import_generations  # noqa: E402
from saltbench.tasks import get_task  # noqa: E402

log = logging.getLogger("bench_import")


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = get_task("dna").generate(args.rows, seed=1, min_codons=8, max_codons=24)
    records = [generation_record(rng, args.tokens, finish="eos") for _ in range(rows.height)]
    meta = generation_meta(rows, build_prompts(rows, "direct", None))
    frame = records_to_frame(records, meta)
    n_tokens = rows.height * args.tokens
    with tempfile.TemporaryDirectory() as tmp:
        jsonl, cache = Path(tmp) / "g.jsonl", Path(tmp) / "cache.json"
        results = {"export (JSONL)": timed(lambda: write_jsonl(frame, jsonl), args.repeats)[0]}
        positions = [  # the generated token's text first, then its alternatives under made-up texts
            [
                dict(zip((text, *(f"t{i}" for i in r.topk_ids[t, 1:])), r.topk_logprobs[t].tolist()))
                for t, text in enumerate(r.token_texts)
            ]
            for r in records
        ]
        payload = [
            {"sample_id": s, "prompt": p, "text": r.text, "logprobs": lp}
            for s, p, r, lp in zip(meta["sample_id"], meta["prompt"], records, positions)
        ]
        cache.write_text(json.dumps({"version": 1, "payload": payload}), encoding="utf-8")
        formats: list[tuple[str, Path, ImportFormat]] = [
            ("import (JSONL)", jsonl, "jsonl"),
            ("import (authors' cache)", cache, "salt_cache"),
        ]
        for name, path, fmt in formats:
            results[name], result = timed(
                partial(
                    import_generations,
                    path,
                    fmt,
                    {"dna": rows},
                    model_name="m",
                    styles=["direct"],
                    n_shots=None,
                ),
                args.repeats,
            )
            assert result.frames[("direct", "dna")].height == rows.height
        sizes = {"JSONL": jsonl.stat().st_size, "authors' cache": cache.stat().st_size}
        again = import_generations(
            jsonl, "jsonl", {"dna": rows}, model_name="m", styles=["direct"], n_shots=None
        )
        assert again.frames[("direct", "dna")].equals(frame), "the round trip changed the table"
    log.info("%d responses x %d tokens (top-20), one style", rows.height, args.tokens)
    for name, size in sizes.items():
        log.info("  %s file: %.1f MB", name, size / 1e6)
    for name, t in results.items():
        log.info(
            "  %-24s %6.2f s wall, %6.2f s CPU: %7.0f responses/s, %9.0f tokens/s",
            name,
            t["seconds"],
            t["cpu_seconds"],
            rows.height / t["seconds"],
            n_tokens / t["seconds"],
        )
    _authors_prompts(args.repeats)


def _authors_prompts(repeats: int) -> None:
    """Time importing an authors'-style cache of the 1,748 reproduction rows matched by their prompts."""
    datasets = load_paper_datasets(Path(__file__).resolve().parents[1] / "reference" / "paper_data")
    results = [
        {
            "input": None,
            "prompt": authors_prompt(task, row["variant"], row["input"]),
            "text": f"********\n{row['reference']}\n********",
            "logprobs": None,
        }
        for task, frame in datasets.items()
        for row in frame.iter_rows(named=True)
    ][::-1]
    with tempfile.TemporaryDirectory() as tmp:
        path = write_cache(Path(tmp) / "authors.json", {"model": "m", "responses": results})
        t, result = timed(
            lambda: import_generations(
                path, "salt_cache", datasets, model_name="m", styles=["direct"], n_shots=None
            ),
            repeats,
        )
    assert result.record["imported"] == len(results)
    log.info(
        "  import (authors' prompts, %d rows, matched by prompt): %.2f s wall, %.2f s CPU",
        len(results),
        t["seconds"],
        t["cpu_seconds"],
    )


if __name__ == "__main__":
    main()
