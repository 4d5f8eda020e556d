"""Shared helpers for the rules: wildcard constraints and small config lookups."""


wildcard_constraints:
    task="|".join(["dna", "code", "logic", "matmul", "kronecker", "words"]),
