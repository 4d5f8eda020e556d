"""How a task's samples are cut into shards: the one formula behind the inference jobs, the intervention jobs
and the configuration's job-count check.

>>> n_shards(33, 16)
3
>>> n_shards(0, 16)
1
"""

from __future__ import annotations

import math


def n_shards(n_samples: int, shard_size: int) -> int:
    """Number of shards of ``n_samples`` samples: ``ceil(n / shard_size)``, at least 1 (an empty dataset still
    has one, empty, shard: every job's output exists).

    Raises:
        ValueError: ``shard_size < 1``.
    """
    if shard_size < 1:
        raise ValueError(f"shard_size must be >= 1, got {shard_size}")
    return max(1, math.ceil(n_samples / shard_size))


__all__ = ["n_shards"]
