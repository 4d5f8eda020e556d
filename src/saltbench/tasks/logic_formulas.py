"""The formulas of the First-Order Logic task (:mod:`saltbench.tasks.logic`; docs/tasks.md §4, §8.4;
docs/compatibility.md §1.13) — really propositional logic: prefix notation, SAT-based deduction, generation.

A sample is a list of propositional formulas over ``p1 .. pN`` written in prefix notation
(``∧(p1, ¬(p2))``, ``→(a, b)``, ``↔(a, b)``, ``∨(...)``) plus initial truth values for a few
variables. The reference lists every variable whose value is *forced*, i.e. entailed by
``F ∧ A`` (F: conjunction of the formulas, A: the initial assignments), together with the
initial assignments themselves, one ``pK: True|False`` line each, sorted by the index K::

    v is forced to b  <=>  SAT(F ∧ A)  and  UNSAT(F ∧ A ∧ (v = ¬b))

Generation follows the authors' algorithm step by step and consumes ``random.Random`` in the
same order, so the upstream mode (``num_variables_range`` + ``num_initial_assignments``)
reproduces the upstream samples exactly (seed-exact check of docs/tasks.md §4.3). The default mode draws the
paper's data ranges (docs/tasks.md §8.4): N from ``{6, 8, …, 40}`` and ``floor(N · f)`` initial assignments
with ``f ∈ {1/5, 1/4, 1/3, 1/2}``.

SAT checks use :func:`sympy.logic.inference.satisfiable` (``dpll2``) on incrementally built
:class:`~sympy.assumptions.cnf.EncodedCNF` clause sets, so each formula is converted to CNF once.
SAT/UNSAT answers do not depend on the solver, hence neither do the samples.
"""

from __future__ import annotations

import logging
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from sympy import And, Equivalent, Implies, Not, Or, Symbol
from sympy.assumptions.cnf import EncodedCNF
from sympy.logic.boolalg import Boolean, BooleanFalse, BooleanTrue, false, true
from sympy.logic.inference import satisfiable

logger = logging.getLogger(__name__)

ASSIGNMENTS_HEADER = "Initial Assignments:"
"""Line that separates the formulas from the initial assignments in an input."""

PAPER_NUM_VARIABLES: tuple[int, ...] = tuple(range(6, 41, 2))
"""Numbers of variables (= numbers of formulas) found in the paper data: 6, 8, …, 40 (docs/tasks.md §8.4)."""

PAPER_ASSIGNMENT_FRACTIONS: tuple[Fraction, ...] = (
    Fraction(1, 5),
    Fraction(1, 4),
    Fraction(1, 3),
    Fraction(1, 2),
)
"""Initial assignments per sample in the paper data are ``floor(N · f)`` for one of these f."""

MAX_FORMULA_ATTEMPTS = 500
"""Candidate formulas tried per formula set before giving up (upstream limit)."""

LayoutBlankLines = Literal[1, 2]

_OPERATORS = (And, Or, Not, Implies, Equivalent)
"""Operator pool of the generator; the order matters for ``rng.choice`` (upstream order)."""

_SYMBOLS: dict[type, str] = {And: "∧", Or: "∨", Not: "¬", Implies: "→", Equivalent: "↔"}
_CONSTRUCTORS = {sym: op for op, sym in _SYMBOLS.items()}
_TOKEN_RE = re.compile(r"\s*(?:(∧|∨|¬|→|↔)|(\()|(\))|(,)|(True|False)|(p\d+))")
_ASSIGNMENT_RE = re.compile(r"^\s*p(\d+)\s*:\s*(True|False)\s*$")
_SAT_ALGORITHM = "dpll2"


# -- rendering and parsing ----------------------------------------------------------------------
def render_prefix(expr: Boolean) -> str:
    """Render a SymPy boolean expression in SALT's prefix notation.

    And/Or are n-ary (``∧(a, b, c)``), Not is ``¬(x)``, Implies ``→(a, b)``, Equivalent ``↔(a, b)``,
    symbols print their name, the constants print ``True``/``False``. Arguments appear in SymPy's
    stored order (canonical for And/Or/Equivalent), joined by ``", "``.

    >>> from sympy import symbols, Implies, Not
    >>> p1, p5 = symbols("p1 p5")
    >>> render_prefix(Implies(Not(p1), p5))
    '→(¬(p1), p5)'
    """
    if isinstance(expr, Symbol):
        return expr.name
    if isinstance(expr, BooleanTrue):
        return "True"
    if isinstance(expr, BooleanFalse):
        return "False"
    symbol = _SYMBOLS.get(type(expr))
    if symbol is None:
        raise ValueError(f"expr contains an operator without prefix notation: {type(expr).__name__}")
    return f"{symbol}({', '.join(render_prefix(arg) for arg in expr.args)})"


def parse_prefix(text: str) -> Boolean:
    """Parse one prefix-notation formula (inverse of :func:`render_prefix`) into SymPy.

    Grammar: ``F := pK | True | False | OP "(" F ("," F)* ")"`` with OP in ``∧ ∨ ¬ → ↔``
    (``¬`` takes one argument, ``→``/``↔`` two, ``∧``/``∨`` one or more).

    Raises:
        ValueError: the text is not a well-formed formula (the message quotes it).
    """
    tokens: list[tuple[str, str]] = []
    pos = 0
    stripped = text.rstrip()
    while pos < len(stripped):
        match = _TOKEN_RE.match(stripped, pos)
        if match is None:
            near = stripped[pos : pos + 10]
            raise ValueError(f"text is not a prefix formula: unexpected {near!r} in {text!r}")
        kind = ("op", "(", ")", ",", "const", "var")[match.lastindex - 1]  # type: ignore[operator]
        tokens.append((kind, match.group(match.lastindex or 0)))
        pos = match.end()

    def expect(index: int, kind: str) -> None:
        if index >= len(tokens) or tokens[index][0] != kind:
            raise ValueError(f"text is not a prefix formula: expected {kind!r} at token {index} in {text!r}")

    def parse(index: int) -> tuple[Boolean, int]:
        if index >= len(tokens):
            raise ValueError(f"text is not a prefix formula: unexpected end of {text!r}")
        kind, value = tokens[index]
        if kind == "var":
            return Symbol(value), index + 1
        if kind == "const":
            return (true if value == "True" else false), index + 1
        if kind != "op":
            raise ValueError(f"text is not a prefix formula: unexpected {value!r} in {text!r}")
        expect(index + 1, "(")
        args: list[Boolean] = []
        index += 2
        while True:
            arg, index = parse(index)
            args.append(arg)
            if index < len(tokens) and tokens[index][0] == ",":
                index += 1
                continue
            expect(index, ")")
            index += 1
            break
        arity_ok = len(args) == 1 if value == "¬" else len(args) == 2 if value in "→↔" else True
        if not arity_ok:
            raise ValueError(f"text is not a prefix formula: {value} with {len(args)} arguments in {text!r}")
        return _CONSTRUCTORS[value](*args), index

    expr, end = parse(0)
    if end != len(tokens):
        raise ValueError(f"text is not a prefix formula: trailing tokens in {text!r}")
    return expr


def variable_index(symbol: Symbol) -> int:
    """The index K of a variable named ``pK``."""
    return int(symbol.name[1:])


def render_assignments(assignments: Mapping[int, bool]) -> str:
    """``pK: True|False`` lines sorted by K, each ending with ``\\n`` (empty string for none)."""
    return "".join(f"p{k}: {assignments[k]}\n" for k in sorted(assignments))


def render_input(
    formulas: Sequence[Boolean], assignments: Mapping[int, bool], layout_blank_lines: LayoutBlankLines = 1
) -> str:
    """Input text: formula lines, ``layout_blank_lines`` blank line(s), the header, assignment lines.

    ``layout_blank_lines=1`` is the package layout, ``2`` the layout of the paper data
    (docs/compatibility.md §1.13).
    """
    if layout_blank_lines not in (1, 2):
        raise ValueError(f"layout_blank_lines must be 1 or 2, got {layout_blank_lines!r}")
    body = "\n".join(render_prefix(f) for f in formulas)
    separator = "\n" * (layout_blank_lines + 1)
    return f"{body}{separator}{ASSIGNMENTS_HEADER}\n{render_assignments(assignments)}"


@dataclass(frozen=True)
class LogicInput:
    """A parsed Logic input: the formulas (SymPy) and the initial assignments (index -> value)."""

    formulas: tuple[Boolean, ...]
    assignments: Mapping[int, bool]


def parse_input(text: str) -> LogicInput:
    """Parse an input in either layout (one or two blank lines before ``Initial Assignments:``).

    Raises:
        ValueError: missing header, malformed formula or assignment line, or a variable assigned twice
            with different values.
    """
    lines = text.split("\n")
    try:
        header = next(i for i, line in enumerate(lines) if line.strip() == ASSIGNMENTS_HEADER)
    except StopIteration:
        raise ValueError(f"text has no {ASSIGNMENTS_HEADER!r} line: {text[:80]!r}") from None
    formulas = tuple(parse_prefix(line) for line in lines[:header] if line.strip())
    assignments: dict[int, bool] = {}
    for line in lines[header + 1 :]:
        if not line.strip():
            continue
        match = _ASSIGNMENT_RE.match(line)
        if match is None:
            raise ValueError(f"text has a malformed assignment line {line!r}")
        index, value = int(match.group(1)), match.group(2) == "True"
        if assignments.get(index, value) != value:
            raise ValueError(f"text assigns p{index} both True and False")
        assignments[index] = value
    return LogicInput(formulas, assignments)


# -- SAT-based deduction --------------------------------------------------------------------------
def _add_formula(cnf: EncodedCNF, formula: Boolean) -> bool:
    """Add ``formula`` to ``cnf`` in place; return False when it is the constant False."""
    if isinstance(formula, BooleanTrue):
        return True  # adds no constraint (SymPy would encode it as an extra symbol)
    if isinstance(formula, BooleanFalse):
        return False
    cnf.add_prop(formula)
    return True


def _is_sat(cnf: EncodedCNF) -> dict[Boolean, bool] | Literal[False]:
    """A model of ``cnf`` (symbol -> value, possibly partial) or False when UNSAT."""
    return satisfiable(cnf, algorithm=_SAT_ALGORITHM)


def _literal(symbol: Symbol, value: bool) -> Boolean:
    return symbol if value else Not(symbol)


def _add_unit(cnf: EncodedCNF, var: Symbol, value: bool) -> None:
    """Add the unit clause ``var = value`` to ``cnf`` in place (encoded directly when possible)."""
    code = cnf.encoding.get(var)
    if code is None:
        cnf.add_prop(_literal(var, value))
    else:
        cnf.data.append({code if value else -code})


def _with_literal(cnf: EncodedCNF, var: Symbol, value: bool) -> EncodedCNF:
    """A copy of ``cnf`` with the unit clause ``var = value``."""
    extended = cnf.copy()
    _add_unit(extended, var, value)
    return extended


def _entailed(cnf: EncodedCNF, candidates: Iterable[Symbol]) -> dict[Symbol, bool] | None:
    """Backbone of ``cnf`` restricted to ``candidates``; None when ``cnf`` is UNSAT.

    One model M is found first; a candidate v can only be forced to M[v], and it is iff
    ``cnf ∧ (v = ¬M[v])`` is UNSAT. Every counter-model found on the way clears all candidates
    whose value differs from M, so most candidates need no SAT call of their own. A variable missing
    from a (partial) model is unconstrained by it, hence not forced.
    """
    model = _is_sat(cnf)
    if model is False:
        return None
    pending = {v: model[v] for v in sorted(candidates, key=variable_index) if v in model}
    forced: dict[Symbol, bool] = {}
    while pending:
        var, value = next(iter(pending.items()))
        del pending[var]
        counter = _is_sat(_with_literal(cnf, var, not value))
        if counter is False:
            forced[var] = value
            continue
        for other in [o for o, v in pending.items() if counter.get(o, not v) != v]:
            del pending[other]
    return forced


def _formula_variables(formulas: Iterable[Boolean]) -> set[Symbol]:
    found: set[Symbol] = set()
    for formula in formulas:
        found |= formula.free_symbols
    return found


def deduce(formulas: Sequence[Boolean], assignments: Mapping[int, bool]) -> dict[int, bool]:
    """Initial assignments ∪ every value entailed by ``F ∧ A`` (index -> value).

    Raises:
        ValueError: ``F ∧ A`` is unsatisfiable (no conclusive answer exists).
    """
    cnf = EncodedCNF()
    consistent = all(_add_formula(cnf, f) for f in formulas)
    for index, value in assignments.items():
        _add_unit(cnf, Symbol(f"p{index}"), value)
    candidates = {v for v in _formula_variables(formulas) if variable_index(v) not in assignments}
    forced = _entailed(cnf, candidates) if consistent else None
    if forced is None:
        raise ValueError("formulas and assignments are jointly unsatisfiable")
    result = dict(assignments)
    result.update({variable_index(v): value for v, value in forced.items()})
    return dict(sorted(result.items()))


def solve_logic(text: str) -> str:
    """Reference answer for an input text in either layout: sorted ``pK: Value`` lines, ending ``\\n``."""
    parsed = parse_input(text)
    return render_assignments(deduce(parsed.formulas, parsed.assignments))


# -- generation ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogicSample:
    """One generated sample before rendering."""

    formulas: tuple[Boolean, ...]
    initial: Mapping[int, bool]
    result: Mapping[int, bool]


def _random_formulas(rng: random.Random, variables: Sequence[Symbol]) -> tuple[list[Boolean], EncodedCNF]:
    """N jointly satisfiable random formulas (upstream step a) and their CNF."""
    kept: list[Boolean] = []
    cnf = EncodedCNF()
    attempts = 0
    while len(kept) < len(variables):
        attempts += 1
        if attempts > MAX_FORMULA_ATTEMPTS:
            raise RuntimeError(f"no satisfiable formula set after {MAX_FORMULA_ATTEMPTS} attempts")
        candidate: Boolean = rng.choice(variables)
        for _ in range(rng.randint(1, 3)):
            op = rng.choice(_OPERATORS)
            candidate = Not(candidate) if op is Not else op(candidate, rng.choice(variables))
        trial = cnf.copy()
        if _add_formula(trial, candidate) and satisfiable(trial, algorithm=_SAT_ALGORITHM) is not False:
            kept.append(candidate)
            cnf = trial
    return kept, cnf


Kleene = Callable[[Mapping[Symbol, bool]], "bool | None"]
"""A compiled formula: three-valued (Kleene) value under a partial assignment, None = unknown."""


def _kleene(expr: Boolean) -> Kleene:
    """Compile ``expr`` to a fast three-valued evaluator.

    Soundness: a definite Kleene value implies that SymPy's own evaluation of the substituted formula
    is the same constant (And/Or with a deciding argument, Not, Implies with a false antecedent or a
    true consequent or True → False, Equivalent of two constants). SymPy can additionally reduce
    some formulas structurally (``And(x, ¬x)`` → False) where Kleene says unknown.
    """
    if isinstance(expr, Symbol):
        return lambda a: a.get(expr)
    if isinstance(expr, BooleanTrue):
        return lambda a: True
    if isinstance(expr, BooleanFalse):
        return lambda a: False
    parts = [_kleene(arg) for arg in expr.args]
    if isinstance(expr, Not):
        inner = parts[0]

        def negation(a: Mapping[Symbol, bool]) -> bool | None:
            value = inner(a)
            return None if value is None else not value

        return negation
    if isinstance(expr, (And, Or)):
        decisive = isinstance(expr, Or)  # the argument value that decides the result

        def lattice(a: Mapping[Symbol, bool]) -> bool | None:
            unknown = False
            for part in parts:
                value = part(a)
                if value is decisive:
                    return decisive
                unknown = unknown or value is None
            return None if unknown else not decisive

        return lattice
    if isinstance(expr, Implies):
        left, right = parts

        def implication(a: Mapping[Symbol, bool]) -> bool | None:
            lhs, rhs = left(a), right(a)
            if lhs is False or rhs is True:
                return True
            return False if (lhs is True and rhs is False) else None

        return implication
    if isinstance(expr, Equivalent):

        def equivalence(a: Mapping[Symbol, bool]) -> bool | None:
            values = [part(a) for part in parts]
            if None in values:
                return None
            return all(values) or not any(values)

        return equivalence
    raise ValueError(f"expr contains an unsupported operator: {type(expr).__name__}")


def _random_assignments(
    rng: random.Random, variables: Sequence[Symbol], formulas: Sequence[Boolean], k: int
) -> dict[Symbol, bool]:
    """k random initial values under which no formula evaluates to False (upstream step b).

    "Evaluates to False" is SymPy's evaluation of the substituted formula (the upstream test). A fast
    three-valued pre-check rejects most draws; SymPy confirms only the draws that pass it.
    """
    compiled = [_kleene(f) for f in formulas]
    while True:
        selected = rng.sample(list(variables), k)
        assignment = {var: rng.choice([True, False]) for var in selected}
        if any(check(assignment) is False for check in compiled):
            continue
        substitution = {var: (true if value else false) for var, value in assignment.items()}
        if not any(isinstance(f.xreplace(substitution), BooleanFalse) for f in formulas):
            return assignment


def generate_sample(rng: random.Random, num_variables: int, num_initial: int) -> LogicSample:
    """One accepted sample for fixed N and k (upstream steps a–d, same RNG call order)."""
    variables = [Symbol(f"p{i}") for i in range(1, num_variables + 1)]
    k = min(num_initial, max(1, num_variables - 1))
    tries = 0
    while True:
        tries += 1
        formulas, cnf = _random_formulas(rng, variables)
        assignment = _random_assignments(rng, variables, formulas, k)
        for var, value in assignment.items():
            _add_unit(cnf, var, value)
        candidates = _formula_variables(formulas) - set(assignment)
        forced = _entailed(cnf, candidates)
        if forced:  # None: F ∧ A UNSAT; {}: nothing new is forced — both rejected
            initial = {variable_index(v): value for v, value in assignment.items()}
            result = {**initial, **{variable_index(v): value for v, value in forced.items()}}
            logger.debug("logic sample N=%d k=%d accepted after %d tries", num_variables, k, tries)
            return LogicSample(tuple(formulas), dict(sorted(initial.items())), dict(sorted(result.items())))


def _as_fraction(value: object) -> Fraction:
    if isinstance(value, Fraction):
        return value
    if isinstance(value, str):
        return Fraction(value)
    if isinstance(value, (int, float)):
        return Fraction(value).limit_denominator(1000)
    raise ValueError(f"assignment_fractions must hold numbers or 'a/b' strings, got {value!r}")


def initial_count(num_variables: int, fraction: Fraction) -> int:
    """``floor(N · f)``, at least 1 (the paper's initial-assignment count, docs/tasks.md §8.4)."""
    return max(1, math.floor(num_variables * fraction))


def create_logic_samples(
    n: int,
    seed: int,
    *,
    num_variables: Sequence[int] | None = None,
    num_variables_range: tuple[int, int] | None = None,
    num_initial_assignments: int | None = None,
    assignment_fractions: Sequence[object] | None = None,
) -> list[LogicSample]:
    """``n`` samples from one ``random.Random(seed)`` shared across samples.

    Modes (per sample, in RNG order):

    * N: ``num_variables_range=(lo, hi)`` → upstream rule (``lo`` if ``lo == hi`` without an RNG call,
      else ``rng.randrange(lo, hi + 1, 2)``); otherwise ``rng.choice(num_variables)`` (default even
      6..40; no RNG call when it holds one value).
    * k: ``num_initial_assignments`` fixed (upstream), otherwise ``floor(N · f)`` with
      ``f = rng.choice(assignment_fractions)`` (default 1/5, 1/4, 1/3, 1/2; no call for one value).

    Raises:
        ValueError: a parameter is out of range (the message names it).
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if num_variables is not None and num_variables_range is not None:
        raise ValueError("num_variables and num_variables_range are mutually exclusive")
    sizes: tuple[int, ...] = ()
    if num_variables_range is not None:
        lo, hi = num_variables_range
        if lo < 2 or hi < lo:
            raise ValueError(f"num_variables_range must satisfy 2 <= min <= max, got {num_variables_range!r}")
    else:
        sizes = tuple(PAPER_NUM_VARIABLES if num_variables is None else num_variables)
        if not sizes or any(not isinstance(s, int) or s < 2 for s in sizes):
            raise ValueError(
                f"num_variables must be a non-empty list of integers >= 2, got {num_variables!r}"
            )
    fractions: tuple[Fraction, ...] = ()
    if num_initial_assignments is not None:
        if num_initial_assignments < 1:
            raise ValueError(f"num_initial_assignments must be >= 1, got {num_initial_assignments}")
    else:
        raw = PAPER_ASSIGNMENT_FRACTIONS if assignment_fractions is None else assignment_fractions
        fractions = tuple(_as_fraction(f) for f in raw)
        if not fractions or any(not 0 < f < 1 for f in fractions):
            raise ValueError(
                f"assignment_fractions must be fractions in (0, 1), got {assignment_fractions!r}"
            )

    rng = random.Random(seed)
    samples = []
    for _ in range(n):
        if num_variables_range is not None:
            lo, hi = num_variables_range
            size = lo if lo == hi else rng.randrange(lo, hi + 1, 2)
        else:
            size = sizes[0] if len(sizes) == 1 else rng.choice(sizes)
        if num_initial_assignments is not None:
            k = num_initial_assignments
        else:
            k = initial_count(size, fractions[0] if len(fractions) == 1 else rng.choice(fractions))
        samples.append(generate_sample(rng, size, k))
    return samples
