"""DNA Translation (docs/tasks.md §2): print the complementary strand of a codon sequence.

The input is a line of codons (three letters over ``A, C, G, T``) separated by single spaces; the
reference is the base-wise complement ``A <-> T``, ``C <-> G`` with the codon layout kept (not the
reverse complement, not a protein translation)::

    >>> complement_dna("AGA GCT AAG GCC")
    'TCT CGA TTC CGG'

Atoms are codons (delimiter ``" "``), the single line is the line unit.

Generation is seed-exact with the authors' generator: one ``random.Random(seed)`` shared by all rows;
per row ``count = rng.randint(min_codons, max_codons)`` and then three ``rng.choice("ACTG")`` calls
per codon (alphabet order A, C, T, G). The defaults ``1..199`` codons cover the length range of the
paper's DNA data (docs/tasks.md §8.2); the authors' package default was ``1..30``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import polars as pl

from saltbench.tasks.base import FewShot, Task, check_n_seed, dataset_frame, make_params, sample_ids

CODON_ALPHABET = "ACTG"
"""Bases in the order the generator draws them from (matters for seed-exact reproduction)."""

_COMPLEMENT = str.maketrans("ACGT", "TGCA")
_ALLOWED = frozenset("ACGT ")


def complement_dna(sequence: str, delimiter: str = " ") -> str:
    """Base-wise complement (``A <-> T``, ``C <-> G``), codons re-joined with ``delimiter``.

    Runs of spaces collapse (the sequence is whitespace-split after complementing).

    Raises:
        ValueError: empty sequence (no codons), or any character other than ``A C G T`` and space.
    """
    if not isinstance(sequence, str):
        raise TypeError(f"sequence must be a string, got {type(sequence).__name__}")
    bad = sorted(set(sequence) - _ALLOWED)
    if bad:
        raise ValueError(f"sequence contains invalid characters {bad!r}; allowed: A, C, G, T and space")
    codons = sequence.translate(_COMPLEMENT).split()
    if not codons:
        raise ValueError(f"sequence must contain at least one base, got {sequence!r}")
    return delimiter.join(codons)


@dataclass(frozen=True)
class DnaParams:
    """Generator parameters: the codon count of each row is uniform on ``[min_codons, max_codons]``."""

    min_codons: int = 1
    max_codons: int = 199

    def __post_init__(self) -> None:
        for name in ("min_codons", "max_codons"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        if self.min_codons < 1:
            raise ValueError(f"min_codons must be >= 1, got {self.min_codons}")
        if self.max_codons < self.min_codons:
            raise ValueError(f"max_codons must be >= min_codons ({self.min_codons}), got {self.max_codons}")


def generate_dna_sequence(rng: random.Random, min_codons: int, max_codons: int) -> str:
    """One random codon line: ``randint`` codon count, then 3 ``choice("ACTG")`` draws per codon."""
    count = rng.randint(min_codons, max_codons)
    return " ".join(
        "".join((rng.choice(CODON_ALPHABET), rng.choice(CODON_ALPHABET), rng.choice(CODON_ALPHABET)))
        for _ in range(count)
    )


class DnaTask(Task):
    """DNA Translation: complement every base of a space-separated codon sequence."""

    slug = "dna"
    display_name = "DNA Translation"
    label = "DNA"
    legacy_names = ("DNAProblem",)
    params_class = DnaParams
    delimiter = " "
    atom_regex = None
    few_shots = (
        FewShot("AGA GCT AAG GCC", "TCT CGA TTC CGG"),
        FewShot("CGG CTA AAG TCT GCG TAC TGG", "GCC GAT TTC AGA CGC ATG ACC"),
        FewShot("GAT ATG GCC", "CTA TAC CGG"),
        FewShot("TCT GCG ATG CCC ACC TCT", "AGA CGC TAC GGG TGG AGA"),
    )

    def __init__(self, variant: str | None = None) -> None:
        if variant is not None:
            raise ValueError(f"the dna task has no variants, got variant={variant!r}")
        super().__init__(None)

    def solve(self, input: str) -> str:
        """The complementary codon line (see :func:`complement_dna`)."""
        return complement_dna(input)

    def generate(self, n: int, seed: int, **params: object) -> pl.DataFrame:
        """``n`` random codon lines from ``random.Random(seed)`` (params: :class:`DnaParams`).

        Example: ``generate(5, 0, min_codons=10, max_codons=12)`` starts with
        ``GAT GGT GTC CTC ATC TAA TGA TGT CGG TAA AGA`` (the authors' generator gives the same).
        """
        n, seed = check_n_seed(n, seed)
        p = make_params(DnaParams, params)
        rng = random.Random(seed)
        inputs = [generate_dna_sequence(rng, p.min_codons, p.max_codons) for _ in range(n)]
        ids = sample_ids(self.slug, n, seed)
        rows: list[dict[str, str | None]] = [
            {"sample_id": sid, "task": self.slug, "variant": None, "input": s, "reference": complement_dna(s)}
            for sid, s in zip(ids, inputs)
        ]
        return dataset_frame(rows)

    def instruction(self) -> str:
        return (
            "You will be given a DNA sequence; write out the complementary sequence that would pair with it "
            "to form the double helix (A pairs with T, C pairs with G), keeping the codons separated by "
            "spaces."
        )

    def test_block(self, input: str) -> str:
        return f"Please answer the following as demonstrated before:\nGiven DNA sequence = {input}\nAnswer ="
