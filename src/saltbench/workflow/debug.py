"""Run one rule's script outside Snakemake, in this process, for debugging (docs/architecture.md §3.4).

``python -m saltbench.workflow.debug RULE [wildcard=value ...] [--configfile F ...] [--cores N] [--into DIR]
[--show]``, from the workflow root. Snakemake itself resolves the job: it reads the Snakefile with the
given config files (the Snakefile validates them, as for a run), and its DAG creates the job of ``RULE``
with those wildcards (the job ``snakemake --target-jobs RULE:wildcard=value`` would run), so the job's
input, output, params, log, threads, resources and config are the ones a run would give its script —
input functions, the config's resolved values and the rule's ``threads`` included. The script then runs
here, with that ``snakemake`` object in its globals (pickled and unpickled first, as a job's script
receives it), so ``breakpoint()`` in a script or ``python -m pdb -m saltbench.workflow.debug ...`` stops
inside it. No script needs a guard: each ends with ``main(snakemake)``, and the object is there.

What a run does and this does not: build the job's missing inputs (they are named instead, with the
``snakemake`` command that builds them), record the job in Snakemake's metadata, remove old outputs first.
Outputs go where the rule writes them, unless ``--into DIR`` puts them (and the log) under ``DIR``.

From Python (a notebook): :func:`rule_job` returns the job with its ``snakemake`` object and script path;
:func:`run_rule_script` runs it. Snakemake 9's public API loads the workflow; reaching its ``Workflow``
object (``WorkflowApi._workflow``) is the one private name used (tests/workflow/test_debug.py runs it).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import pickle
import runpy
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

THREAD_VARIABLES = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""The thread counts Snakemake sets to the job's ``threads`` in a job's environment."""


class DebugError(Exception):
    """A job that cannot be run by hand: unknown rule, no script, wrong wildcards, missing inputs."""


@dataclasses.dataclass(frozen=True)
class RuleJob:
    """One job of the workflow as its script sees it: ``snakemake`` (a ``snakemake.script.Snakemake``, with
    ``input``, ``output``, ``params``, ``log``, ``wildcards``, ``threads``, ``resources``, ``config``,
    ``rule``), the script's path, the workflow root it runs in, the config files it was resolved with and
    its first output as the rule names it (a Snakemake target)."""

    snakemake: Any
    script: Path
    workdir: Path
    configfiles: tuple[str, ...] = ()
    target: str = ""

    def build_inputs_command(self) -> str:
        """The ``snakemake`` command that builds this job's inputs and not the job itself."""
        files = "".join(f" --configfile {f}" for f in self.configfiles)
        return f"snakemake --cores N {self.target}{files} --omit-from {self.snakemake.rule}"

    def missing_inputs(self) -> list[str]:
        """The job's input files that do not exist (relative to :attr:`workdir`)."""
        return [path for path in self.snakemake.input if not (self.workdir / path).exists()]

    def describe(self) -> str:
        """The job as text: each field of its ``snakemake`` object on one line or more."""
        job = self.snakemake
        lines = [f"rule {job.rule}: {self.script}", f"  wildcards: {dict(job.wildcards.items())}"]
        for field in ("input", "output", "log"):
            lines.append(f"  {field}:" + "".join(f"\n    {path}" for path in getattr(job, field)))
        lines.append("  params:" + "".join(f"\n    {key}={value!r}" for key, value in job.params.items()))
        lines.append(f"  threads: {job.threads}; resources: {dict(job.resources.items())}")
        return "\n".join(lines)


def rule_job(
    rule: str,
    wildcards: Mapping[str, str] | None = None,
    *,
    configfiles: Sequence[str | os.PathLike[str]] = (),
    workdir: str | os.PathLike[str] = ".",
    snakefile: str | os.PathLike[str] = "Snakefile",
    cores: int | None = None,
) -> RuleJob:
    """The job of ``rule`` with ``wildcards`` as Snakemake resolves it (module docstring).

    ``configfiles`` replace ``config/config.yaml`` as ``--configfile`` does; ``cores`` caps the job's
    threads as ``--cores`` does (default: every CPU). Raises :class:`DebugError` naming an unknown rule (with
    the rules that have a script), a rule without a script, or a missing or unknown wildcard; a config
    mistake stops as it stops a run (the Snakefile exits with its message).
    """
    from snakemake.api import SnakemakeApi  # type: ignore[import-untyped]
    from snakemake.dag import DAG  # type: ignore[import-untyped]
    from snakemake.settings.types import (  # type: ignore[import-untyped]
        ConfigSettings,
        DAGSettings,
        ResourceSettings,
    )

    root = Path(workdir).resolve()
    files = [Path(f) if Path(f).is_absolute() else root / f for f in configfiles]
    with contextlib.chdir(root), SnakemakeApi() as api:  # Snakemake changes back to root, then this back
        workflow_api = api.workflow(
            ResourceSettings(cores=cores or os.cpu_count() or 1),
            ConfigSettings(configfiles=files),
            snakefile=root / snakefile,
            workdir=root,
        )
        workflow_api.dag(DAGSettings())  # sets the workflow's DAG settings, which a DAG reads
        workflow = workflow_api._workflow
        target = _script_rule(workflow, rule)
        given = dict(wildcards or {})
        _check_wildcards(target, given)
        job = workflow.async_run(DAG(workflow, workflow.rules).new_job(target, wildcards_dict=given))
        obj = _script_object(job, workflow)
        target_file = str(obj.output[0]) if obj.output else ""
        return RuleJob(obj, _script_path(target, job), root, tuple(map(str, configfiles)), target_file)


def _script_rule(workflow: Any, name: str) -> Any:
    """The workflow's rule ``name``, which must run a ``script:``."""
    scripted = sorted(r.name for r in workflow.rules if r.script is not None)
    if not workflow.is_rule(name):
        raise DebugError(f"no rule {name!r} in the workflow; the rules with a script: {', '.join(scripted)}")
    target = workflow.get_rule(name)
    if target.script is None:
        raise DebugError(
            f"rule {name!r} runs no script (a shell command, a run block or only inputs); "
            f"the rules with a script: {', '.join(scripted)}"
        )
    return target


def _check_wildcards(rule: Any, given: Mapping[str, str]) -> None:
    """Every wildcard of ``rule`` given, and no other."""
    names = set(rule.wildcard_names)
    missing, unknown = sorted(names - set(given)), sorted(set(given) - names)
    if missing or unknown:
        wanted = " ".join(f"{name}=..." for name in sorted(names)) or "none"
        raise DebugError(
            f"rule {rule.name!r} takes the wildcards {wanted}"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
        )


def _script_object(job: Any, workflow: Any) -> Any:
    """The ``snakemake`` object a job's script receives (Snakemake's preamble), through pickle as there."""
    from snakemake.iocontainers import Snakemake  # type: ignore[import-untyped]

    obj = Snakemake(
        job.input,
        job.output,
        job.params,
        job.wildcards,
        job.threads,
        job.resources,
        job.log,
        workflow.config,
        job.rule.name,
        None,
    )
    return pickle.loads(pickle.dumps(obj, protocol=4))


def _script_path(rule: Any, job: Any) -> Path:
    """The rule's ``script:`` (formatted with the job's wildcards and params), relative to its rule file."""
    from snakemake.utils import format as snakemake_format  # type: ignore[import-untyped]

    path = Path(snakemake_format(rule.script, wildcards=job.wildcards, params=job.params))
    return (
        path if path.is_absolute() else Path(rule.basedir.get_path_or_uri(secret_free=True), path).resolve()
    )


def relocated(job: RuleJob, into: str | os.PathLike[str]) -> RuleJob:
    """``job`` with its outputs and log under ``into`` (same relative paths, names kept); inputs unchanged."""
    obj = pickle.loads(pickle.dumps(job.snakemake, protocol=4))

    def move(path: str) -> str:
        return str(Path(into, Path(path).relative_to(Path(path).anchor)))

    obj.output = type(obj.output)(toclone=obj.output, custom_map=move)
    obj.log = type(obj.log)(toclone=obj.log, custom_map=move)
    return dataclasses.replace(job, snakemake=obj)


def run_rule_script(job: RuleJob) -> dict[str, Any]:
    """Run the job's script in this process, in the workflow root, with ``snakemake`` in its globals.

    Creates the folders of the outputs and log (as Snakemake does), sets the thread variables Snakemake sets
    (:data:`THREAD_VARIABLES`), puts the script's folder on ``sys.path``. Raises :class:`DebugError` naming
    the missing inputs and the command that builds them. Returns the script's globals.
    """
    missing = job.missing_inputs()
    if missing:
        shown = " ".join(missing[:5]) + (f" (and {len(missing) - 5} more)" if len(missing) > 5 else "")
        raise DebugError(
            f"rule {job.snakemake.rule}: {len(missing)} input file(s) missing ({shown}); build them first: "
            f"{job.build_inputs_command()}"
        )
    with contextlib.chdir(job.workdir):
        for path in [*job.snakemake.output, *job.snakemake.log]:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        os.environ.update(dict.fromkeys(THREAD_VARIABLES, str(job.snakemake.threads)))
        if str(job.script.parent) not in sys.path:
            sys.path.append(str(job.script.parent))
        return runpy.run_path(str(job.script), init_globals={"snakemake": job.snakemake}, run_name="__main__")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m saltbench.workflow.debug",
        description="Run one rule's script in this process, with the job Snakemake would give it "
        "(docs/architecture.md §3.4). Run from the workflow root.",
    )
    parser.add_argument("rule", help="the rule's name (snakemake --list-rules)")
    parser.add_argument("wildcards", nargs="*", metavar="WILDCARD=VALUE", help="the job's wildcards")
    parser.add_argument("--configfile", action="append", default=[], help="as snakemake's (repeatable)")
    parser.add_argument("--cores", type=int, default=None, help="caps the job's threads (default: all)")
    parser.add_argument("--into", metavar="DIR", help="write the outputs and the log under DIR")
    parser.add_argument("--show", action="store_true", help="print the job and stop")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module docstring). Returns 0 when the script ran (or ``--show``), 1 on a
    :class:`DebugError`; an exception of the script propagates, with its traceback."""
    args = _parser().parse_args(argv)
    malformed = [w for w in args.wildcards if "=" not in w]
    if malformed:
        _parser().error(f"wildcards are WILDCARD=VALUE: {' '.join(malformed)}")
    wildcards = dict(w.split("=", 1) for w in args.wildcards)
    try:
        job = rule_job(args.rule, wildcards, configfiles=args.configfile, cores=args.cores)
        if args.into:
            job = relocated(job, args.into)
        print(job.describe(), file=sys.stderr)
        if not args.show:
            run_rule_script(job)
    except DebugError as exc:
        print(f"saltbench.workflow.debug: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
