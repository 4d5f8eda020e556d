"""Glue between Snakemake and the package: per-job logging and threads, rule inputs and outputs of the
analysis tables, the report's front page, and the run lock (docs/architecture.md §3).

* :mod:`~saltbench.workflow.rule_support` — logging, thread counts, per-task files, the report text;
* :mod:`~saltbench.workflow.analysis_rules` — analysis options, named table and figure outputs, provenance;
* :mod:`~saltbench.workflow.unit_files` — units files read column- and file-wise (bounded memory);
* :mod:`~saltbench.workflow.tables` — every analysis table declared once (inputs, config keys, function,
  outputs); :mod:`~saltbench.workflow.table_rules` — how a declaration becomes a rule and a job;
* :mod:`~saltbench.workflow.runlock` — one running workflow per directory, stale temporaries removed;
* :mod:`~saltbench.workflow.kept` — kept copies of finished shards, restored when Snakemake deleted them;
* :mod:`~saltbench.workflow.debug` — one rule's script run by hand, with the job Snakemake resolves
  (``python -m saltbench.workflow.debug RULE wildcard=value``, docs/architecture.md §3.4).
"""
