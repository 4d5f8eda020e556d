"""Decimal to hexadecimal: ``0 1 10 15`` -> ``0 1 A F`` (one atom per number, space-delimited)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import polars as pl

from saltbench.tasks import FewShot, Task
from saltbench.tasks.base import check_n_seed, dataset_frame, make_params, sample_ids


@dataclass(frozen=True)
class HexParams:
    """Generator parameters (``datasets.params.hex``): how many numbers per input, and how large."""

    min_numbers: int = 4
    max_numbers: int = 12
    max_value: int = 4095


def to_hex(input: str) -> str:
    """Every decimal number of ``input`` in upper-case hexadecimal, in order."""
    return " ".join(format(int(token), "X") for token in input.split())


class HexTask(Task):
    """Translate a line of decimal numbers into hexadecimal."""

    slug = "hex"
    display_name = "Decimal to Hexadecimal"
    label = "Hex"
    params_class = HexParams
    delimiter = " "
    few_shots = (FewShot("0 1 10 15", "0 1 A F"), FewShot("255 16 4095", "FF 10 FFF"))

    def solve(self, input: str) -> str:
        return to_hex(input)

    def generate(self, n: int, seed: int, **params: object) -> pl.DataFrame:
        n, seed = check_n_seed(n, seed)
        p = make_params(HexParams, params)
        rng = random.Random(seed)
        sizes = [rng.randint(p.min_numbers, p.max_numbers) for _ in range(n)]
        inputs = [" ".join(str(rng.randint(0, p.max_value)) for _ in range(size)) for size in sizes]
        rows: list[dict[str, str | None]] = [
            {"sample_id": sid, "task": self.slug, "variant": None, "input": text, "reference": to_hex(text)}
            for sid, text in zip(sample_ids(self.slug, n, seed), inputs)
        ]
        return dataset_frame(rows)

    def instruction(self) -> str:
        return (
            "Convert each decimal number into hexadecimal (digits 0-9 and A-F), keeping them separated by "
            "spaces."
        )

    def test_block(self, input: str) -> str:
        return f"Please answer the following as demonstrated before:\nDecimal numbers = {input}\nAnswer ="

    def corrupt_atom(self, atom: str, rng: random.Random) -> str:
        """Another hexadecimal number near the atom's value (an arithmetic slip)."""
        value, step = int(atom, 16), rng.choice([1, 2, 3])
        return format(value - step if value >= step and rng.random() < 0.5 else value + step, "X")
