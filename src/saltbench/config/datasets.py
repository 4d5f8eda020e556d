"""``datasets``: where the evaluation samples come from and how many per task (docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from saltbench.config.schema import (
    MAX_SAMPLES_PER_TASK,
    Block,
    Count,
    SampleCount,
    TaskSlug,
    optional,
    required,
    setting,
)
from saltbench.core.vocabulary import (
    DatasetSource,
)


@dataclass(frozen=True, kw_only=True)
class DatasetsConfig(Block):
    """``datasets``: where the evaluation samples come from and how many per task."""

    source: DatasetSource = required(
        "generated = our procedural generators; paper = the authors' reproduction folders."
    )
    paper_path: str | None = optional(
        "Folder holding the authors' *_dataset folders (source: paper); a relative path is resolved against "
        "the working directory (the workflow root under Snakemake). Checked to exist, with one folder per "
        "configured task, before any job runs."
    )
    n_samples: SampleCount | None | Mapping[TaskSlug, SampleCount] = setting(
        None,
        "Samples per task: one integer for all tasks or a mapping task -> integer (source: generated, where "
        "every configured task needs a count; with source: paper, a cap on the rows taken, null = all). At "
        f"most {MAX_SAMPLES_PER_TASK} per task (saltbench.config.MAX_SAMPLES_PER_TASK; the paper uses at "
        "most 400): every sample ends up in an inference shard job of the DAG.",
    )
    n_shots: Count | None = setting(None, "Few-shot examples per prompt (null = all the task has).")
    params: Mapping[TaskSlug, Mapping[str, Any]] = setting(
        {}, "Generator parameters per task (keyword arguments of the task's generate())."
    )

    def samples_for(self, task: str) -> int | None:
        """``n_samples`` for ``task``: the one count for every task, or the task's entry of the mapping
        (``None``: not given; all rows of the paper data). The rows a task's dataset will have are
        :meth:`saltbench.config.WorkflowConfig.dataset_rows`."""
        n = self.n_samples
        return n.get(task) if isinstance(n, Mapping) else n
