"""Facts about the authors' reproduction release (docs/tasks.md §8.1): its folder per task and its row counts.

Standard library only: the configuration checks a ``datasets.source: paper`` run against these before any
job runs, and :mod:`saltbench.data` loads the folders.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

PAPER_FOLDERS: Mapping[str, str] = MappingProxyType(
    {
        "dna": "DNA_dataset",
        "code": "Code_dataset",
        "logic": "Logic_dataset",
        "matmul": "Matrix_multiplication_dataset",
        "kronecker": "Kronecker_product_dataset",
        "words": "NeedlesInHaystack_dataset",
    }
)
"""Task slug -> folder name in the authors' reproduction release."""

PAPER_ROWS: Mapping[str, int] = MappingProxyType(
    {"dna": 300, "code": 148, "logic": 400, "matmul": 300, "kronecker": 300, "words": 300}
)
"""Row counts of the reproduction folders, checked on load (1,748 rows in all)."""

__all__ = ["PAPER_FOLDERS", "PAPER_ROWS"]
