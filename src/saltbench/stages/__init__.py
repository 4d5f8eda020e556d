"""The stage functions behind the workflow rules, one module per rule family, callable without Snakemake.

* :mod:`~saltbench.stages.generation` — rules ``generate_shard`` / ``generate_model``: prompts, greedy
  generations with per-token log-probabilities, resumable per-model jobs;
* :mod:`~saltbench.stages.scoring` — rule ``score_units``: generations -> scored units at every granularity;
* :mod:`~saltbench.stages.metrics` — rule ``compute_metrics``: units -> calibration, ranking and rejection
  metrics with bootstrap intervals;
* :mod:`~saltbench.stages.interventions` — rules ``intervention_shard`` / ``merge_interventions``: the
  atom-level intervention grid run through a model's backend.

Each takes frames and the typed config blocks (:mod:`saltbench.config`) and returns a frame; the workflow
scripts read inputs, call one of these, and write the result with provenance (docs/architecture.md §3).
"""
