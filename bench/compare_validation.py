"""Validation of the model registry: saltbench's blocks (jsonschema over the generated schema) against
pydantic 2 validating the same dataclasses, side by side (docs/architecture.md §5.1).

Measures (1) the import cost of each system in a fresh interpreter (``python -c "import …"``, alternating,
minimum of ``--rounds``), (2) the time to validate and build ``config/models.yaml`` (warm, minimum of
repeats), and (3) prints the error message each system gives for the same mistakes. pydantic validates the
registry's own dataclasses through a ``TypeAdapter`` (unknown keys forbidden, the source union
discriminated by ``kind``; lax mode, as strict mode refuses a mapping where a dataclass is expected). It
knows the types but not the JSON-schema bounds (``minimum``, ``pattern``), which saltbench states as schema
keywords, so the bound mistakes show what a pydantic port would have to restate.
Run::

    python bench/compare_validation.py --rounds 7
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import yaml

logger = logging.getLogger("compare_validation")

REPO = Path(__file__).resolve().parents[1]
IMPORTS = {
    "python alone": "pass",
    "saltbench.core.blocks": "import saltbench.core.blocks",
    "saltbench.config (the Snakefile's)": "import saltbench.config",
    "jsonschema (first validation)": "import jsonschema",
    "pydantic": "import pydantic",
}
MISTAKES: dict[str, dict[str, Any]] = {
    "unknown key": {"source": {"kind": "hub", "id": "a/b"}, "temperature": 0.0},
    "unknown source kind": {"source": {"kind": "s3", "path": "x"}},
    "key of another kind": {"source": {"kind": "local", "path": "p", "id": "x"}},
    "wrong type": {"source": {"kind": "hub", "id": "a/b"}, "reasoning": "yes"},
    "float for an integer": {"source": {"kind": "hub", "id": "a/b"}, "max_context": 2.0},
    "below a bound": {"source": {"kind": "hub", "id": "a/b"}, "resources": {"gpus": -1}},
    "missing source": {"dtype": "float32"},
}


def import_seconds(statement: str, rounds: int) -> float:
    """Least wall time of ``python -c statement`` over ``rounds`` fresh interpreters."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True, cwd=REPO)
        best = min(best, time.perf_counter() - start)
    return best


def pydantic_adapter() -> Any:
    """A pydantic ``TypeAdapter`` of the registry's ``models`` mapping over saltbench's own dataclasses."""
    from collections.abc import Mapping

    import pydantic

    from saltbench.inference import registry

    source = Annotated[registry.ModelSource, pydantic.Field(discriminator="kind")]
    for field in dataclasses.fields(registry.ModelSpec):  # the union discriminated, as pydantic needs
        if field.name == "source":
            field.type = source
    return pydantic.TypeAdapter(Mapping[str, registry.ModelSpec], config=pydantic.ConfigDict(extra="forbid"))


def saltbench_error(entry: dict[str, Any]) -> str:
    from saltbench.inference.registry import RegistryError, parse_model_registry

    try:
        parse_model_registry({"models": {"m": entry}})
    except RegistryError as exc:
        return str(exc)
    return "(accepted)"


def pydantic_error(adapter: Any, entry: dict[str, Any]) -> str:
    import pydantic

    try:
        adapter.validate_python({"m": entry})
    except pydantic.ValidationError as exc:
        return " / ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return "(accepted)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    best = {name: float("inf") for name in IMPORTS}
    for _ in range(args.rounds):  # alternating: one fresh interpreter of each per round
        for name, statement in IMPORTS.items():
            best[name] = min(best[name], import_seconds(statement, 1))
    for name, seconds in best.items():
        extra = seconds - best["python alone"]
        logger.info("import %-34s %6.1f ms (+%5.1f ms over python alone)", name, 1e3 * seconds, 1e3 * extra)

    import jsonschema  # noqa: F401 - imported before the first validation is timed

    from saltbench.inference.registry import parse_model_registry

    raw = yaml.safe_load((REPO / "config" / "models.yaml").read_text(encoding="utf-8"))
    import pydantic  # noqa: F401 - imported before the adapter is timed

    start = time.perf_counter()
    parse_model_registry(raw)  # cold: the validator built (jsonschema imported above)
    logger.info(
        "first validation with saltbench (validator built)   %7.2f ms", 1e3 * (time.perf_counter() - start)
    )
    start = time.perf_counter()
    adapter = pydantic_adapter()
    logger.info(
        "pydantic TypeAdapter built (core schema)           %7.2f ms", 1e3 * (time.perf_counter() - start)
    )
    adapter.validate_python(raw["models"])
    timings = {"saltbench": float("inf"), "pydantic": float("inf")}
    for _ in range(args.rounds):
        start = time.perf_counter()
        parse_model_registry(raw)
        timings["saltbench"] = min(timings["saltbench"], time.perf_counter() - start)
        start = time.perf_counter()
        adapter.validate_python(raw["models"])
        timings["pydantic"] = min(timings["pydantic"], time.perf_counter() - start)
    n = len(raw["models"])
    for name, seconds in timings.items():
        logger.info("validate config/models.yaml (%d models) with %-9s %7.2f ms", n, name, 1e3 * seconds)

    for mistake, entry in MISTAKES.items():
        logger.info(
            "\n%s\n  saltbench: %s\n  pydantic:  %s",
            mistake,
            saltbench_error(entry),
            pydantic_error(adapter, entry),
        )


if __name__ == "__main__":
    main()
