"""How a table is declared and how its rule runs (the declarations: :mod:`saltbench.workflow.tables`).

A :class:`TableRule` names a rule ``table_{name}``: the tables it writes (:class:`TableOutput`), its named
inputs (file sets of the run, other tables), its parameters (configuration keys: :data:`Option`), the
function that computes its tables from a :class:`TableJob`, and its resources. rules/analysis.smk generates
one rule per declaration (:func:`rule_inputs`, :func:`rule_params`); workflow_scripts/make_table.py runs it
(:func:`run_table_job`). A table whose work splits by model declares :class:`ModelParts`: one job per model
(rule ``table_{name}_part``, workflow_scripts/make_table_part.py, :func:`run_table_part_job`) writes
:func:`part_path`, and the table's own rule merges them (its input ``"parts"``). Standard library only at
import: the Snakefile reads the declarations on every invocation, and a table's function imports what it
needs when its job runs (docs/extending.md §6).

>>> lookup = option_lookup({"metrics": {"ci_level": 0.9}}, {"models": ["a"]})
>>> lookup("metrics.ci_level"), lookup("run.models")
(0.9, ['a'])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Union

from saltbench.core.outputs import Needs, Option, option_value

if TYPE_CHECKING:
    import polars as pl

PUBLISHED = ("parquet", "csv", "tex")
"""Formats of a table of the paper (LaTeX for the manuscript)."""
DATA_ONLY = ("parquet", "csv")
"""Formats of a table behind a figure only (too long for LaTeX)."""


@dataclass(frozen=True)
class TableOutput:
    """``results/tables/{name}.{format}`` for each of ``formats``; its artifact is ``table.{name}``
    (:data:`saltbench.core.contracts.TABLES`) and its report caption ``report/table_{name}.rst``.

    ``target``: a file of the default target (``False`` for a side output its rule writes with another
    table, such as ``dominance_cells``). ``prefix``: of its named outputs in its rule (``{prefix}{format}``),
    empty for the rule's own table.
    """

    name: str
    formats: tuple[str, ...] = PUBLISHED
    needs: Needs = "always"
    target: bool = True
    prefix: str = ""


@dataclass(frozen=True)
class RuleInput:
    """A named input of a table rule: the file set ``files`` (a set the Snakefile defines — ``metrics``,
    ``units``, ``interventions``, ``datasets``, ``simulated_units``, ``registry`` — or ``table:NAME``, the
    Parquet file of another table), left empty unless the option ``when[0]`` equals ``when[1]``."""

    files: str
    when: tuple[str, object] | None = None


TableFrames = Union["pl.DataFrame", Mapping[str, "pl.DataFrame"]]
"""What a table's function returns: its one table, or each of its rule's tables by name."""


@dataclass(frozen=True)
class TableJob:
    """What a table's function is given: the rule's named input files and its parameters (attributes of
    ``params``); it may add fields to the tables' provenance (``provenance``)."""

    inputs: Mapping[str, tuple[str, ...]]
    params: SimpleNamespace
    provenance: dict[str, Any] = field(default_factory=dict)

    def files(self, name: str) -> list[str]:
        """The files of input ``name`` (empty for an input its condition left out)."""
        return list(self.inputs[name])

    def file(self, name: str) -> str:
        """The one file of input ``name``.

        Raises:
            ValueError: the input has no file or several.
        """
        files = self.files(name)
        if len(files) != 1:
            raise ValueError(f"input {name!r} has {len(files)} files, expected one: {files}")
        return files[0]


def part_path(table: str, model: str) -> str:
    """The part of table ``table`` one model's job writes.

    >>> part_path("label_noise", "{model}")
    'results/tables/parts/label_noise/{model}.parquet'
    """
    return f"results/tables/parts/{table}/{model}.parquet"


@dataclass(frozen=True)
class ModelParts:
    """The per-model half of a table (docs/architecture.md §4): rule ``table_{name}_part`` runs ``compute``
    once per model of the run on that model's files of ``inputs`` (input name -> a per-model file set:
    ``units``, ``metrics``) with the parameters ``params`` and writes :func:`part_path`, checked against
    the table's part contract (:data:`saltbench.core.contracts.TABLE_PARTS`). The table's own rule gets
    every model's part as its input ``"parts"`` and merges them; a part depends on its model's files only,
    so a job's size follows one model's generations, not the roster's."""

    compute: Callable[[TableJob], pl.DataFrame]
    inputs: Mapping[str, str]
    params: Mapping[str, Option] = field(default_factory=dict)
    mem_mb: int = 4000
    runtime: int = 15


@dataclass(frozen=True)
class TableRule:
    """Rule ``table_{name}``: ``compute`` turns its :class:`TableJob` into the table ``name`` (``formats``,
    made when ``needs``) and the side tables ``also``, written with their contracts and provenance.

    ``inputs``: input name -> file set (:class:`RuleInput` or its ``files``); ``params``: parameter name ->
    the configuration key it is read from (:data:`~saltbench.core.outputs.Option`), in the order the
    provenance records them; ``local``: run on the submitting host under a cluster executor (light rules);
    ``parts``: the table is merged from one part per model (:class:`ModelParts`).
    """

    name: str
    doc: str
    compute: Callable[[TableJob], TableFrames]
    inputs: Mapping[str, str | RuleInput]
    params: Mapping[str, Option] = field(default_factory=dict)
    formats: tuple[str, ...] = PUBLISHED
    needs: Needs = "always"
    also: tuple[TableOutput, ...] = ()
    mem_mb: int = 4000
    runtime: int = 15
    local: bool = True
    parts: ModelParts | None = None

    @property
    def outputs(self) -> tuple[TableOutput, ...]:
        """Every table the rule writes: its own first, then ``also``."""
        return (TableOutput(self.name, self.formats, self.needs), *self.also)


def option_lookup(config: Mapping[str, Any], run: Mapping[str, Any]) -> Callable[[str], Any]:
    """``lookup(key)``: the value of a dotted configuration key (``metrics.ci_level``) in ``config``, or of
    a fact of the run (``run.models``) in ``run``.

    Raises (from ``lookup``):
        KeyError: naming the key that is not set.
    """

    def lookup(key: str) -> Any:
        head, _, rest = key.partition(".")
        value: Any = run if head == "run" else config
        for part in rest.split(".") if head == "run" else key.split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise KeyError(f"option {key!r} is not set (no {part!r})")
            value = value[part]
        return value

    return lookup


def rule_params(rule: TableRule, lookup: Callable[[str], Any]) -> dict[str, Any]:
    """The rule's parameters, in their declared order, read with ``lookup`` (:func:`option_lookup`)."""
    return {name: option_value(option, lookup) for name, option in rule.params.items()}


def rule_inputs(rule: TableRule, files: Mapping[str, Any], lookup: Callable[[str], Any]) -> dict[str, Any]:
    """The rule's named inputs: each file set from ``files`` (``table:NAME``: that table's Parquet file;
    ``parts``: the part of every model of the run, :func:`part_path`), ``[]`` where its condition does not
    hold.

    Raises:
        KeyError: an input names a file set ``files`` does not have.
    """
    out: dict[str, Any] = {}
    for name, spec in rule.inputs.items():
        spec = spec if isinstance(spec, RuleInput) else RuleInput(spec)
        if spec.when is not None and lookup(spec.when[0]) != spec.when[1]:
            out[name] = []
        elif spec.files == "parts":
            out[name] = [part_path(rule.name, model) for model in lookup("run.models")]
        elif spec.files.startswith("table:"):
            out[name] = f"results/tables/{spec.files.removeprefix('table:')}.parquet"
        elif spec.files in files:
            out[name] = files[spec.files]
        else:
            raise KeyError(f"table rule {rule.name!r}: input {name!r} names no file set {spec.files!r}")
    return out


def part_inputs(rule: TableRule, files: Mapping[str, Any]) -> dict[str, Any]:
    """The named inputs of rule ``table_{name}_part``: each of its parts' per-model file sets from ``files``
    (paths with a ``{model}`` wildcard).

    Raises:
        ValueError: the table has no parts. KeyError: a part input names a file set ``files`` does not have.
    """
    if rule.parts is None:
        raise ValueError(f"table rule {rule.name!r} declares no per-model parts")
    missing = sorted(set(rule.parts.inputs.values()) - set(files))
    if missing:
        raise KeyError(f"table rule {rule.name!r}: its parts name no per-model file set {missing}")
    return {name: files[spec] for name, spec in rule.parts.inputs.items()}


def part_params(rule: TableRule, lookup: Callable[[str], Any]) -> dict[str, Any]:
    """The parameters of rule ``table_{name}_part`` (its parts' declared order), read with ``lookup``."""
    if rule.parts is None:
        raise ValueError(f"table rule {rule.name!r} declares no per-model parts")
    return {name: option_value(option, lookup) for name, option in rule.parts.params.items()}


def table_rule(rules: tuple[TableRule, ...], name: str) -> TableRule:
    """The declaration of table rule ``name`` (``table_`` prefix and ``_part`` suffix allowed).

    Raises:
        KeyError: naming the declared rules.
    """
    name = name.removeprefix("table_").removesuffix("_part")
    for rule in rules:
        if rule.name == name:
            return rule
    raise KeyError(f"{name!r} is not a table rule ({', '.join(r.name for r in rules)})")


def table_frames(rule: TableRule, job: TableJob) -> dict[str, pl.DataFrame]:
    """The tables ``rule.compute`` makes of ``job``, by name.

    Raises:
        ValueError: it returned other tables than the rule declares.
    """
    import polars as pl

    frames = rule.compute(job)
    if isinstance(frames, pl.DataFrame):
        frames = {rule.name: frames}
    expected = [out.name for out in rule.outputs]
    if sorted(frames) != sorted(expected):
        raise ValueError(f"table rule {rule.name!r} computed {sorted(frames)}, declares {expected}")
    return dict(frames)


def run_table_job(snakemake: Any, rules: tuple[TableRule, ...]) -> None:
    """Run the job of table rule ``snakemake.rule`` (one of ``rules``): its function on the job's inputs and
    parameters, then each of its tables written to the rule's named outputs with its contract
    (:func:`saltbench.workflow.analysis_rules.write_rule_tables`)."""
    from saltbench.core.contracts import TABLES
    from saltbench.workflow.analysis_rules import write_rule_tables

    rule = table_rule(rules, snakemake.rule)
    missing = [out.name for out in rule.outputs if out.name not in TABLES]
    if missing:
        raise KeyError(
            f"table rule {rule.name!r}: no contract in saltbench.core.contracts.TABLES for {missing}"
        )
    inputs = {
        name: (str(value),) if isinstance(value, str) else tuple(map(str, value))
        for name, value in snakemake.input.items()
    }
    job = TableJob(inputs, SimpleNamespace(**dict(snakemake.params.items())))
    frames = table_frames(rule, job)
    for out in rule.outputs:
        write_rule_tables(snakemake, frames[out.name], TABLES[out.name], prefix=out.prefix, **job.provenance)


def run_table_part_job(snakemake: Any, rules: tuple[TableRule, ...]) -> None:
    """Run one model's job of rule ``table_{name}_part``: the parts' function on the model's inputs, its
    frame written to the rule's output ``parquet`` with the table's part contract and the rule's parameters
    in its provenance."""
    from saltbench.analysis import write_table_outputs
    from saltbench.core.contracts import TABLE_PARTS
    from saltbench.workflow.analysis_rules import rule_meta

    rule = table_rule(rules, snakemake.rule)
    if rule.parts is None or rule.name not in TABLE_PARTS:
        raise KeyError(f"table rule {rule.name!r}: no per-model parts or no part contract in TABLE_PARTS")
    inputs = {
        name: (str(value),) if isinstance(value, str) else tuple(map(str, value))
        for name, value in snakemake.input.items()
    }
    frame = rule.parts.compute(TableJob(inputs, SimpleNamespace(**dict(snakemake.params.items()))))
    path = str(snakemake.output.parquet)
    write_table_outputs(frame, {"parquet": path}, rule_meta(snakemake), TABLE_PARTS[rule.name])


__all__ = [
    "DATA_ONLY",
    "PUBLISHED",
    "ModelParts",
    "RuleInput",
    "TableFrames",
    "TableJob",
    "TableOutput",
    "TableRule",
    "option_lookup",
    "part_inputs",
    "part_params",
    "part_path",
    "rule_inputs",
    "rule_params",
    "run_table_job",
    "run_table_part_job",
    "table_frames",
    "table_rule",
]
