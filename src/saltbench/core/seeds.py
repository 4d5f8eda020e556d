"""Seeds derived from the config's master seed, one per purpose (datasets, training batches, interventions,
metric bootstraps ...), stable across processes and machines."""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A stable 63-bit seed from arbitrary parts (independent of ``PYTHONHASHSEED``).

    ``SHA-256("\\x1f".join(map(str, parts)))``, first 8 bytes big-endian, shifted right by one bit.

    Example:
        >>> parts = ("metrics", 7, "smollm2-135m", "direct", "dna")
        >>> derive_seed(*parts) == derive_seed(*parts)
        True
    """
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
