"""The workflow's core, below every other package: the closed vocabularies
(:mod:`~saltbench.core.vocabulary`), the artifact contracts (:mod:`~saltbench.core.contracts`), the list of
tables and figures (:mod:`~saltbench.core.outputs`), seeds, shard counts, the paper release's facts and lazy
imports (docs/architecture.md §2)."""
