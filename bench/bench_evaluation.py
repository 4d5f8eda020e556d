"""Cost of the evaluator (``saltbench.evaluation``): batch throughput, and the memory of dynamic alignment.

throughput
    Synthetic responses follow the paper-size distribution of the reproduction data (docs/tasks.md §8), mixed
    in the proportions of its 1,748 rows: DNA 1–199 codons, Code short lists (7 variants), Logic 2–39 lines,
    Matrix Multiplication 6–64 entries, Kronecker Product 40–290 entries, Words Collection 5–155 needles.
    Each response wraps its reference in one of several shapes (fenced after some reasoning, unfenced, a
    single opening fence, a keyword-rejected region, empty) and a fraction of responses have corrupted units
    (substituted, dropped or duplicated tokens). Every chunk is evaluated by ``evaluate_many`` at all
    granularities; generation time is excluded. Reported: comparison rows per second (one row = one unit
    comparison), responses per second, CPU and wall time, and peak resident memory
    (``resource.getrusage``) — optionally the traced peak of the evaluation alone.
memory
    CPU time and peak memory of dynamic alignment on a 1 MB response (``"1 " * 500_000``). Each case runs in
    a fresh subprocess (``--case``) so that its peak resident memory is its own: the child builds the
    reference (``get_task(slug).generate(1, seed=0)``) and the response, then records
    ``resource.getrusage(RUSAGE_SELF)`` before and after one call. Per case: ``cpu_s`` (user + system CPU
    seconds of the call alone), ``rss_peak_mb`` (the child's peak resident set size, imports included),
    ``rss_before_mb`` (its resident size just before the call) and, with ``--traced`` (a second child), the
    ``tracemalloc`` peak of the call alone (``traced_peak_mb``: Python objects and numpy buffers, not the
    interpreter and the imported modules).

consistency
    Sampling consistency (``draw_consistency``, docs/confidence.md §7) of one model and style's responses:
    ``--n`` greedy responses in the mix above (1,748 is one paper model and style), each with ``--draws``
    sampled answers that repeat its answer with a share of tokens corrupted (substituted, dropped,
    duplicated at ``--rate``) in the response shapes above. Per task, the greedy units come from
    ``evaluate_many`` and ``draw_consistency`` scores them; timed alone (CPU and wall), beside
    ``evaluate_many`` of the same draws against the references (the evaluator's own cost for them).
    Reported: greedy units scored per CPU second, draws per second, the ratio to evaluating the draws, and
    peak resident memory.

Usage::

    python bench/bench_evaluation.py consistency --n 1748 --draws 5 [--alignment dynamic]
    python bench/bench_evaluation.py throughput --n 100000
    python bench/bench_evaluation.py throughput --n 10000 --alignment dynamic
    python bench/bench_evaluation.py memory [--traced] [--units 500000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.evaluation_helpers import greedy_units  # noqa: E402  (the tests' units builder)

from saltbench.core.vocabulary import GRANULARITIES  # noqa: E402
from saltbench.evaluation import EvaluateOptions, draw_consistency, evaluate_many  # noqa: E402
from saltbench.tasks import get_task  # noqa: E402

CODONS = [a + b + c for a in "ACGT" for b in "ACGT" for c in "ACGT"]
COLORS = ["red", "blue", "green", "yellow", "black", "white", "orange", "purple", "gold", "silver"]
NUMBERS = [str(i) for i in range(200)]

# (slug, variant) -> weight, following the reproduction data's row counts
MIX: dict[tuple[str, str | None], int] = {
    ("dna", None): 300,
    ("logic", None): 400,
    ("matmul", None): 300,
    ("kronecker", None): 300,
    ("words", "numbers"): 214,
    ("words", "colors"): 86,
    ("code", "two_sum"): 18,
    ("code", "edit_distance"): 20,
    ("code", "next_permutation"): 20,
    ("code", "rotate_matrix"): 22,
    ("code", "insert_interval"): 22,
    ("code", "rotate_array"): 23,
    ("code", "reverse_words"): 23,
}


def _ints(rng: random.Random, k: int, lo: int, hi: int) -> list[str]:
    return [str(rng.randint(lo, hi)) for _ in range(k)]


def _grid(rng: random.Random, rows: int, cols: int, lo: int, hi: int) -> list[list[str]]:
    return [_ints(rng, cols, lo, hi) for _ in range(rows)]


def _divisor_shape(rng: random.Random, length: int, square_first: bool) -> tuple[int, int]:
    shapes = [(r, length // r) for r in range(1, length + 1) if length % r == 0]
    if square_first:
        shapes = [(r, c) for r, c in shapes if 1 < r <= c] or shapes
    return rng.choice(shapes)


def _list(xs: list[str]) -> str:
    return "[" + ", ".join(xs) + "]"


def ref_dna(rng: random.Random) -> str:
    return " ".join(rng.choices(CODONS, k=rng.randint(1, 199)))


def ref_logic(rng: random.Random) -> str:
    n = min(39, max(2, int(rng.triangular(2, 39, 20))))
    ids = sorted(rng.sample(range(1, 41), n))
    return "".join(f"p{i}: {rng.choice(('True', 'True', 'False'))}\n" for i in ids)


def ref_matmul(rng: random.Random) -> str:
    rows, cols = _divisor_shape(rng, rng.choice([L for L in range(6, 66, 2) if L not in (2,)]), True)
    return "\n".join(" ".join(r) for r in _grid(rng, rows, cols, -193, 193))


def ref_kronecker(rng: random.Random) -> str:
    rows, cols = _divisor_shape(rng, rng.choice(range(40, 300, 10)), rng.random() < 0.5)
    return "\n".join(" ".join(r) for r in _grid(rng, rows, cols, -81, 81))


def ref_words(vocab: list[str]) -> Callable[[random.Random], str]:
    def make(rng: random.Random) -> str:
        k = min(155, 5 + int(rng.expovariate(1 / 9)))
        return " ".join(rng.choices(vocab, k=k))

    return make


def ref_code(variant: str) -> Callable[[random.Random], str]:
    def make(rng: random.Random) -> str:
        if variant == "two_sum":
            return _list(_ints(rng, 2, 0, 3))
        if variant == "edit_distance":
            return str(rng.randint(1, 8))
        if variant in ("next_permutation", "rotate_array"):
            return _list(_ints(rng, rng.randint(3, 25 if variant == "next_permutation" else 167), -9, 99))
        if variant == "rotate_matrix":
            n = rng.randint(1, 11)
            return "[" + ", ".join(_list(r) for r in _grid(rng, n, n, -20, 20)) + "]"
        if variant == "insert_interval":
            bounds = sorted(rng.sample(range(100), 2 * rng.randint(2, 12)))
            return "[" + ", ".join(f"[{a}, {b}]" for a, b in zip(bounds[::2], bounds[1::2])) + "]"
        words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz'", k=rng.randint(1, 9))) for _ in range(29)]
        return " ".join(words[: rng.randint(1, 29)])

    return make


MAKERS: dict[tuple[str, str | None], Callable[[random.Random], str]] = {
    ("dna", None): ref_dna,
    ("logic", None): ref_logic,
    ("matmul", None): ref_matmul,
    ("kronecker", None): ref_kronecker,
    ("words", "numbers"): ref_words(NUMBERS),
    ("words", "colors"): ref_words(COLORS),
    **{("code", v): ref_code(v) for (s, v) in MIX if s == "code" and v is not None},
}


def corrupt(rng: random.Random, reference: str, rate: float) -> str:
    """Substitute, drop or duplicate space-separated tokens with total probability ``rate`` each."""
    out = []
    for line in reference.split("\n"):
        tokens = line.split(" ")
        kept = []
        for tok in tokens:
            u = rng.random()
            if u >= rate:
                kept.append(tok)
            elif u < rate / 2:
                kept.append(tok[::-1] + "7" if tok else "7")
            elif u < 3 * rate / 4:
                continue
            else:
                kept += [tok, tok]
        out.append(" ".join(kept))
    return "\n".join(out)


def wrap(rng: random.Random, body: str) -> str:
    """Put an answer into one of the response shapes seen in practice."""
    u = rng.random()
    if u < 0.70:
        return f"Let me work through this carefully.\n********\n{body}\n********"
    if u < 0.80:
        return f"********\nscratch {body[:20]}\n********\nthe answer is below\n********\n{body}\n********\n"
    if u < 0.90:
        return body
    if u < 0.96:
        return f"Answer =\n********\n{body}"
    if u < 0.98:
        return f"********\nthe final answer is {body}\n********"
    return ""


def generate(
    n: int, seed: int, corrupt_fraction: float, rate: float
) -> dict[tuple[str, str | None], tuple[list[str], list[str]]]:
    rng = random.Random(seed)
    keys = list(MIX)
    picks = rng.choices(keys, weights=[MIX[k] for k in keys], k=n)
    groups: dict[tuple[str, str | None], tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for key in picks:
        reference = MAKERS[key](rng)
        body = corrupt(rng, reference, rate) if rng.random() < corrupt_fraction else reference
        responses, references = groups[key]
        responses.append(wrap(rng, body))
        references.append(reference)
    return groups


def _evaluate_chunks(args: argparse.Namespace) -> dict[str, Any]:
    """Generate and evaluate ``--n`` responses in chunks: rows per granularity and task, times, peak."""
    tasks = {key: get_task(*key) for key in MIX}
    totals: dict[str, Any] = {
        "rows": 0,
        "responses": 0,
        "cpu": 0.0,
        "wall": 0.0,
        "gen_wall": 0.0,
        "traced": 0,
    }
    by_gran: dict[str, int] = defaultdict(int)
    by_task: dict[str, int] = defaultdict(int)
    for chunk_start in range(0, args.n, args.chunk):
        size = min(args.chunk, args.n - chunk_start)
        t0 = time.perf_counter()
        groups = generate(size, args.seed * 1_000_003 + chunk_start, args.corrupt_fraction, args.rate)
        totals["gen_wall"] += time.perf_counter() - t0
        if args.tracemalloc:
            tracemalloc.start()
        c0, w0 = time.process_time(), time.perf_counter()
        for key, (responses, references) in groups.items():
            frame = evaluate_many(
                responses, references, tasks[key], granularities=GRANULARITIES, alignment=args.alignment
            )
            totals["rows"] += frame.height
            by_task[key[0]] += frame.height
            for g, count in frame.group_by("granularity").len().iter_rows():
                by_gran[g] += count
            del frame
        totals["cpu"] += time.process_time() - c0
        totals["wall"] += time.perf_counter() - w0
        if args.tracemalloc:
            totals["traced"] = max(totals["traced"], tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        totals["responses"] += size
        print(
            f"  {totals['responses']:>8} responses  {totals['rows']:>11,} rows  cpu {totals['cpu']:7.1f} s",
            file=sys.stderr,
            flush=True,
        )
    return {**totals, "by_granularity": by_gran, "by_task": by_task}


def throughput(args: argparse.Namespace) -> None:
    """The ``throughput`` subcommand (module docstring)."""
    t = _evaluate_chunks(args)
    rows, cpu, wall, done = t["rows"], t["cpu"], t["wall"], t["responses"]
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"alignment            {args.alignment}")
    generation = f"chunks of {args.chunk:,}; generation {t['gen_wall']:.1f} s, excluded"
    print(f"responses            {done:,}  ({generation})")
    by_gran = "  ".join(f"{g}={t['by_granularity'][g]:,}" for g in GRANULARITIES)
    print(f"comparison rows      {rows:,}  {by_gran}")
    print("rows by task         " + "  ".join(f"{k}={c:,}" for k, c in t["by_task"].items()))
    print(f"evaluation time      cpu {cpu:.1f} s, wall {wall:.1f} s")
    print(f"throughput (cpu)     {rows / cpu:,.0f} rows/s, {done / cpu:,.0f} responses/s")
    print(f"throughput (wall)    {rows / wall:,.0f} rows/s, {done / wall:,.0f} responses/s")
    print(f"peak RSS             {peak_rss_mib:,.0f} MiB (whole process, incl. generated chunk)")
    if args.tracemalloc:
        print(f"traced peak          {t['traced'] / 2**20:,.0f} MiB (Python allocations during evaluation)")


MEMORY_CASES = [
    ("kronecker", "evaluate"),
    ("dna", "evaluate"),
    ("kronecker", "evaluate_many"),
    ("dna", "evaluate_many"),
]


def _rss_now_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory_case(slug: str, api: str, units: int, traced: bool) -> dict[str, float | int | str]:
    """One case of ``memory`` in this process (its child): the call's CPU seconds and memory, its result."""
    from saltbench.evaluation import evaluate, summarize_units

    reference = get_task(slug).generate(1, seed=0)["reference"][0]
    response = "1 " * units
    task = get_task(slug)

    def call() -> tuple[float, int]:
        if api == "evaluate":
            m = evaluate(response, reference, task, granularity="atom", alignment="dynamic").metrics
        else:
            frame = evaluate_many([response], [reference], task, granularities="atom", alignment="dynamic")
            m = summarize_units(frame, dynamic_alignment=True).row(0, named=True)
        return float(m["precision"]), int(m["num_correct"])

    rss_before = _rss_now_mb()
    if traced:
        tracemalloc.start()
    before = resource.getrusage(resource.RUSAGE_SELF)
    precision, correct = call()
    after = resource.getrusage(resource.RUSAGE_SELF)
    out: dict[str, float | int | str] = {
        "case": f"{slug}/{api}",
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "rss_before_mb": round(rss_before, 1),
        "rss_peak_mb": round(after.ru_maxrss / 1024, 1),
        "precision": precision,
        "num_correct": correct,
    }
    if traced:
        out["traced_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
    return out


def memory(args: argparse.Namespace) -> None:
    """The ``memory`` subcommand (module docstring): one child process per case (and per tracing)."""
    if args.case:
        slug, api = args.case.split("/")
        print(json.dumps(memory_case(slug, api, args.units, args.trace_child)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    for slug, api in MEMORY_CASES:
        row: dict[str, float | int | str] = {}
        for traced in (False, True) if args.traced else (False,):
            cmd = [sys.executable, __file__, "memory", "--case", f"{slug}/{api}", "--units", str(args.units)]
            if traced:
                cmd.append("--trace-child")
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            row.update({k: v for k, v in result.items() if not traced or k == "traced_peak_mb"})
        print(json.dumps(row), flush=True)


def _draw_tables(
    slug: str, key_rows: list[tuple[tuple[str, str | None], str, str]], args: argparse.Namespace
) -> tuple[pl.DataFrame, pl.DataFrame, list[str], list[str]]:
    """One task's greedy units table and draws table, and the draws' texts and references (for the
    baseline), from ``(key, greedy body, reference)`` rows."""
    rng = random.Random(args.seed + 17)
    opts = EvaluateOptions(alignment=args.alignment)
    greedy = [wrap(rng, body) for _, body, _ in key_rows]
    references = [reference for _, _, reference in key_rows]
    ids = [f"{slug}-{i}" for i in range(len(key_rows))]
    parts = []
    for variant in dict.fromkeys(key[1] for key, _, _ in key_rows):
        rows = [i for i, (key, _, _) in enumerate(key_rows) if key[1] == variant]
        chosen = ([greedy[i] for i in rows], [references[i] for i in rows])
        parts.append(greedy_units(*chosen, slug, variant, opts, [ids[i] for i in rows]))
    texts = [
        wrap(rng, corrupt(rng, body, args.rate) if rng.random() < 0.5 else body)
        for _, body, _ in key_rows
        for _ in range(args.draws)
    ]
    draws = pl.DataFrame(
        {
            "sample_id": [i for i in ids for _ in range(args.draws)],
            "draw": list(range(args.draws)) * len(ids),
            "text": texts,
        }
    )
    return pl.concat(parts), draws, texts, [r for r in references for _ in range(args.draws)]


def consistency(args: argparse.Namespace) -> None:
    """The ``consistency`` subcommand (module docstring)."""
    rng = random.Random(args.seed)
    keys = list(MIX)
    by_task: dict[str, list[tuple[tuple[str, str | None], str, str]]] = defaultdict(list)
    for key in rng.choices(keys, weights=[MIX[k] for k in keys], k=args.n):
        reference = MAKERS[key](rng)
        body = corrupt(rng, reference, args.rate) if rng.random() < args.corrupt_fraction else reference
        by_task[key[0]].append((key, body, reference))
    opts = EvaluateOptions(alignment=args.alignment)
    total = {"units": 0, "draws": 0, "cpu": 0.0, "wall": 0.0, "eval_cpu": 0.0}
    for slug, rows in by_task.items():
        units, draws, texts, references = _draw_tables(slug, rows, args)
        c0, w0 = time.process_time(), time.perf_counter()
        out = draw_consistency(units, draws, options=opts)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        c0 = time.process_time()
        for variant in dict.fromkeys(key[1] for key, _, _ in rows):
            chosen = [i for i, (key, _, _) in enumerate(rows) for _ in range(args.draws) if key[1] == variant]
            evaluate_many(
                [texts[i] for i in chosen],
                [references[i] for i in chosen],
                slug,
                variant=variant,
                options=opts,
            )
        eval_cpu = time.process_time() - c0
        scored = int(out["draws.agreement"].is_not_nan().sum())
        print(
            f"  {slug:<10} {scored:>9,} units  {draws.height:>7,} draws  cpu {cpu:6.2f} s  "
            f"evaluate_many {eval_cpu:6.2f} s",
            file=sys.stderr,
        )
        for name, value in (
            ("units", scored),
            ("draws", draws.height),
            ("cpu", cpu),
            ("wall", wall),
            ("eval_cpu", eval_cpu),
        ):
            total[name] += value
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"alignment            {args.alignment}")
    print(f"responses, draws     {args.n:,} x {args.draws} = {int(total['draws']):,} draws")
    print(f"greedy units scored  {int(total['units']):,}")
    print(f"draw_consistency     cpu {total['cpu']:.2f} s, wall {total['wall']:.2f} s")
    print(
        f"throughput (cpu)     {total['units'] / total['cpu']:,.0f} units/s, "
        f"{total['draws'] / total['cpu']:,.0f} draws/s"
    )
    print(
        f"evaluate_many, draws cpu {total['eval_cpu']:.2f} s "
        f"(consistency / evaluation {total['cpu'] / total['eval_cpu']:.2f})"
    )
    print(f"peak RSS             {peak:,.0f} MiB (whole process)")


def parser() -> argparse.ArgumentParser:
    """The subcommands ``throughput``, ``memory`` and ``consistency`` and their options."""
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = cli.add_subparsers(dest="command", required=True)
    p = commands.add_parser("throughput", help="evaluate_many on paper-size responses")
    p.add_argument("--n", type=int, default=100_000, help="number of responses")
    p.add_argument("--chunk", type=int, default=10_000, help="responses generated and evaluated at once")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alignment", choices=("strict", "dynamic"), default="strict")
    p.add_argument("--corrupt-fraction", type=float, default=0.4, help="share of responses with corruptions")
    p.add_argument("--rate", type=float, default=0.1, help="per-token corruption probability")
    p.add_argument("--tracemalloc", action="store_true", help="also trace the evaluation's peak (slower)")
    m = commands.add_parser("memory", help="dynamic alignment of a 1 MB response")
    m.add_argument("--units", type=int, default=500_000)
    m.add_argument("--traced", action="store_true", help="also measure the tracemalloc peak (slower)")
    m.add_argument("--case", help=argparse.SUPPRESS)
    m.add_argument("--trace-child", action="store_true", help=argparse.SUPPRESS)
    c = commands.add_parser("consistency", help="draw_consistency of one model and style's responses")
    c.add_argument("--n", type=int, default=1_748, help="greedy responses (1,748: one paper model and style)")
    c.add_argument("--draws", type=int, default=5, help="sampled answers per response")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--alignment", choices=("strict", "dynamic"), default="strict")
    c.add_argument(
        "--corrupt-fraction", type=float, default=0.4, help="share of greedy answers with corruptions"
    )
    c.add_argument("--rate", type=float, default=0.1, help="per-token corruption probability")
    return cli


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    {"throughput": throughput, "memory": memory, "consistency": consistency}[args.command](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
