"""Support for the thin workflow scripts: logging to the rule's ``log:`` file, thread counts, per-task files.

Snakemake copies a ``script:`` into ``.snakemake/scripts/`` before running it, so shared helpers for
the scripts live here, in the package, rather than beside them.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePath
from types import TracebackType
from typing import Any


def setup_logging(snakemake: Any) -> logging.Logger:
    """Send log records (and any uncaught exception) to the rule's log file and stderr.

    Returns the logger ``saltbench.rule.<rule name>``.
    """
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if snakemake.log:
        handlers.append(logging.FileHandler(str(snakemake.log[0]), mode="w", encoding="utf-8"))
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        handlers=handlers,
        force=True,
    )
    logger = logging.getLogger(f"saltbench.rule.{snakemake.rule}")

    def _log_uncaught(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        logger.error("rule %s failed", snakemake.rule, exc_info=(kind, exc, tb))

    sys.excepthook = _log_uncaught
    logger.info("threads: %d granted; %s", snakemake.threads, thread_pools())
    return logger


def thread_pools() -> str:
    """The thread pools of this process that are already set up: torch's and polars' (never imports them).

    Every job's log starts with this line, so a run can be checked for jobs that use more threads than
    Snakemake granted them (docs/architecture.md, "Jobs").
    """
    pools = []
    if "torch" in sys.modules:
        pools.append(f"torch {sys.modules['torch'].get_num_threads()}")
    if "polars" in sys.modules:
        pools.append(f"polars {sys.modules['polars'].thread_pool_size()}")
    return ", ".join(pools) or "no thread pool"


def job_threads(snakemake: Any, configured: int | None = None) -> int:
    """Threads for this job's compute: ``configured`` capped at the job's ``threads`` (default: all of them).

    A configured count above what Snakemake granted (``--cores`` below it) would oversubscribe the cores
    other jobs were given; it is capped with a warning instead.
    """
    granted = max(1, int(snakemake.threads))
    if configured is None:
        return granted
    if configured > granted:
        logging.getLogger(f"saltbench.rule.{snakemake.rule}").warning(
            "%d threads configured, %d granted to this job (--cores): using %d", configured, granted, granted
        )
    return min(configured, granted)


def per_task_files(tasks: Sequence[str], *files: Sequence[str]) -> list[tuple[str, ...]]:
    """``(task, file, ...)`` for each task of a per-(model, style) job, whose file lists follow ``tasks``.

    Every per-task file is named ``{task}.parquet``; a list that is not in the order of ``tasks`` (or has
    another length) raises ``ValueError`` instead of scoring one task against another's data.

    Examples:
        >>> per_task_files(["dna", "code"], ["g/dna.parquet", "g/code.parquet"], ["dna.pq", "code.pq"])
        [('dna', 'g/dna.parquet', 'dna.pq'), ('code', 'g/code.parquet', 'code.pq')]
    """
    rows = []
    for i, task in enumerate(tasks):
        paths = []
        for listed in files:
            if len(listed) != len(tasks):
                raise ValueError(f"{len(listed)} files for {len(tasks)} tasks: {list(listed)}")
            if PurePath(str(listed[i])).stem != task:
                raise ValueError(f"file {listed[i]} is not the {task!r} file of its job")
            paths.append(str(listed[i]))
        rows.append((task, *paths))
    return rows


class _Untracked:
    """A rule parameter's value where there is nothing to track: not a built-in type, so Snakemake does not
    record it, and adding the parameter left the outputs of runs without that thing current."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return self.label


NO_PLUGIN = _Untracked("no plugin")
"""The ``plugins`` parameter of a job that uses no plugin."""
NOT_SIMULATED = _Untracked("not simulated")
"""The ``simulation`` parameter of a job whose model is not simulated."""


def simulation_parameters(spec: Any) -> str | _Untracked:
    """The ``simulation`` parameter of an inference or intervention job: a simulated model's planted
    parameters as JSON (editing them makes its generations stale, docs/simulation.md §3), else
    :data:`NOT_SIMULATED`."""
    import dataclasses
    import json

    from saltbench.inference.sources import SimulatedSource

    if not isinstance(spec.source, SimulatedSource):
        return NOT_SIMULATED
    return json.dumps(dataclasses.asdict(spec.source), sort_keys=True)


def names_regex(names: Iterable[str]) -> str:
    """A wildcard constraint matching exactly the ``names`` (a rule's models), or nothing when there is none:
    how the generation rules and rule ``import_generations`` split the models between them.

    >>> import re
    >>> [bool(re.fullmatch(names_regex(["a.b", "c"]), n)) for n in ("a.b", "axb", "c", "")]
    [True, False, True, False]
    >>> re.fullmatch(names_regex([]), "c") is None
    True
    """
    return "|".join(re.escape(name) for name in sorted(names)) or "(?!)"


def plugin_versions(
    tasks: Iterable[str] = (), confidence: Iterable[str] = (), metrics: bool = False
) -> str | _Untracked:
    """What a job's outputs depend on besides its inputs: the fingerprint (package, version, source digest:
    :attr:`saltbench.core.plugins.Plugin.fingerprint`) of each plugin among its ``tasks`` and
    ``confidence`` functions, and with ``metrics`` of every metric plugin, as one string, or
    :data:`NO_PLUGIN`.

    The rules that run plugin code (datasets, inference, scoring, interventions, metrics) take it as the
    parameter ``plugins``; Snakemake reruns a job whose parameters changed, so a new plugin version, or an
    edited editable install, makes the outputs that used it stale (docs/extending.md §5).
    """
    from saltbench.confidence import CONFIDENCE_PLUGINS
    from saltbench.tasks import TASK_PLUGINS

    used = [f"task {t}: {TASK_PLUGINS[t].fingerprint}" for t in tasks if t in TASK_PLUGINS]
    used += [
        f"confidence {c}: {CONFIDENCE_PLUGINS[c].fingerprint}" for c in confidence if c in CONFIDENCE_PLUGINS
    ]
    if metrics:
        from saltbench.core.metric_registry import metric_plugins

        used += [f"metric {name}: {version}" for name, version in metric_plugins().items()]
    return "; ".join(used) if used else NO_PLUGIN


def report_text(static: str | Path, findings: str | Path, out: str | Path) -> str:
    """The report's front page: ``static`` (reStructuredText), followed, once a run has written ``findings``
    (``results/findings.md``), by that page's opening section "What this run estimated".

    Snakemake reads the front page when ``--report`` builds the report, after the run; the page is written to
    ``out`` and its path returned (``static`` itself while there are no findings yet). The section is a list
    of Markdown bullets with ``**bold**`` names, which reads the same as reStructuredText once every ``@``
    outside literal text is escaped (:func:`escape_rst_at`): a model name such as ``salt-tiny@final`` would
    otherwise become an e-mail link.
    """
    findings = Path(findings)
    if not findings.exists():
        return str(static)
    from saltbench.core.contracts import FINDINGS_SUMMARY_TITLE as title
    from saltbench.io import write_atomic

    page = findings.read_text(encoding="utf-8")
    if f"## {title}\n" not in page:
        return str(static)
    section = escape_rst_at(page.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0].strip())
    text = (
        Path(static).read_text(encoding="utf-8").rstrip() + f"\n\n{title}\n{'-' * len(title)}\n\n{section}\n"
    )
    out = Path(out)
    if not out.exists() or out.read_text(encoding="utf-8") != text:
        write_atomic(out, text)
    return str(out)


_LITERAL = re.compile(r"(``.*?``|`[^`]*`)", re.S)


def escape_rst_at(text: str) -> str:
    """``text`` with each ``@`` outside backquoted spans written ``\\@``, so that reStructuredText shows
    ``name@tag`` as text instead of a ``mailto:`` link (literals are left as they are).

    >>> escape_rst_at("salt-tiny@final vs `a@b`")
    'salt-tiny\\\\@final vs `a@b`'
    """
    parts = _LITERAL.split(text)
    return "".join(part if i % 2 else part.replace("@", "\\@") for i, part in enumerate(parts))


def server_endpoint(snakemake: Any) -> str | None:
    """The endpoint file of the job's workflow-managed vLLM server (the named input ``server``, present for
    ``backend: vllm_server`` models; docs/backends.md §8.6), or ``None``."""
    files = list(getattr(snakemake.input, "server", None) or [])
    return str(files[0]) if files else None


def job_model(snakemake: Any, spec: Any, settings: Any, threads: int) -> Any:
    """The model a generating job loads (rules generate_model, second_pass):
    :func:`saltbench.stages.generation.load_generator` with the job's params ``model_path``, ``backend`` and
    ``request_cache``, its ``threads`` and its managed server (:func:`server_endpoint`)."""
    from saltbench.stages.generation import load_generator

    params = snakemake.params
    return load_generator(
        params.model_path,
        spec,
        settings,
        backend=params.backend,
        num_threads=threads,
        request_cache=params.request_cache,
        server=server_endpoint(snakemake),
    )
